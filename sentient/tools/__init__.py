"""Tools the executor agents can call."""

from sentient.tools.docs_search import DocsIndex, SearchHit

__all__ = ["DocsIndex", "SearchHit"]

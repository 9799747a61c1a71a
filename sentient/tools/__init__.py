"""Tools the executor agents can call."""

from sentient.tools.dense import Retrieval
from sentient.tools.docs_search import DocsIndex, SearchHit

__all__ = ["DocsIndex", "Retrieval", "SearchHit"]

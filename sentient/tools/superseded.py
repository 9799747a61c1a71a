"""Documents that say they no longer apply ("Data Retention Policy DRP-2 (SUPERSEDED)").

Their passages repeat the current document's words with outdated values, and a small model
shown both often answers from the old one. The docs search ranks them after the current
documents unless the query asks for them (:func:`split_superseded`), and shows each passage
with its document's title, status included (:func:`shown_title`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

_WORD = re.compile(r"\w+")
# A document whose title says it no longer applies, and query words that ask for such documents.
_SUPERSEDED = re.compile(r"\b(superseded|obsolete|outdated|withdrawn)\b", re.IGNORECASE)
_PAST_WORDS = frozenset(
    {"superseded", "obsolete", "outdated", "withdrawn", "old", "older", "previous", "former", "earlier", "history"}
)
# A document's identifier in its title: letters and digits joined, with an optional dash ("DRP-2").
_IDENTIFIER = re.compile(r"\b[A-Za-z]+-?\d+\b")


def split_superseded(
    ranked: list[tuple[int, float]], document_of: Callable[[int], str | None], query: str
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """``ranked`` split into the passages of current documents and those of superseded ones that
    ``query`` does not ask for, each in its order.

    A document is superseded when its title says so ("Data Retention Policy DRP-2
    (SUPERSEDED)"). Its passages repeat the current document's words with outdated values, and
    a small model shown both often answers from the old one. The query asks for them by a word
    such as "superseded" or "previous", or by the document's identifier ("DRP-2").
    """
    if {word.lower() for word in _WORD.findall(query)} & _PAST_WORDS:
        return ranked, []
    named = {identifier_key(name) for name in _IDENTIFIER.findall(query)}

    def unasked(rowid: int) -> bool:
        title = document_of(rowid)
        if title is None or not _SUPERSEDED.search(title):
            return False
        return not any(identifier_key(name) in named for name in _IDENTIFIER.findall(title))

    current: list[tuple[int, float]] = []
    superseded: list[tuple[int, float]] = []
    for item in ranked:
        (superseded if unasked(item[0]) else current).append(item)
    return current, superseded


def identifier_key(identifier: str) -> str:
    """An identifier without case or dash: "DRP-2" and "drp2" both give "drp2"."""
    return re.sub(r"\W", "", identifier).lower()


def shown_title(source: str, title: str, document: str | None) -> str:
    """A passage's title as the model is shown it: the document's title before the passage's
    headings ("policy_drp2.md - Data Retention Policy DRP-2 (SUPERSEDED) / Retention periods").

    Only shown, never indexed: a status word in every passage's title would change the ranking
    within a document.
    """
    if not document or document in title:
        return title
    name = Path(source).name  # titles are "<file name>" or "<file name> - <headings>" (from_folder)
    headings = title.removeprefix(f"{name} - ") if title != name else ""
    return f"{name} - {document} / {headings}" if headings else f"{name} - {document}"

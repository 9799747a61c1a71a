"""Grounded citations: a citation stands only if its supporting quote is really in the source.

An executor answers with, for each source it cites, a short quote copied from that source.
The quote is checked in code against the text the model was shown (the source's snippet),
ignoring case, accents, punctuation and spacing. A citation whose quote is not there is
dropped from the answer and noted on the node; a verified one marks its source ``verified``
with the quote, so the report can show the evidence behind every reference.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sentient.context.citations import cited_numbers, renumber
from sentient.graph.node import Source

_NON_WORD = re.compile(r"[^0-9a-z]+")
_ELLIPSIS = re.compile(r"\.\.\.|…")
MIN_QUOTE_WORDS = 2  # one word ("30") proves nothing about the sentence it came from


class Quoted(Protocol):
    """A citation as an agent returns it: the source number and a quote from that source."""

    source: int
    quote: str


@dataclass(frozen=True)
class Grounded:
    """An answer after its citations were checked."""

    text: str
    sources: list[Source]
    notes: list[str]


def normalize(text: str) -> str:
    """Lower-case ASCII words separated by single spaces (accents folded, punctuation dropped)."""
    # Accents are dropped, but any other non-ASCII character separates words: "09:00–10:30"
    # must stay four numbers, not glue into "09 0010 30".
    decomposed = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    return _NON_WORD.sub(" ", folded).strip()


def quote_occurs(quote: str, text: str) -> bool:
    """Whether ``quote`` (pieces around an ellipsis, in order) occurs in ``text``, normalised."""
    pieces = [normalize(p) for p in _ELLIPSIS.split(quote)]
    pieces = [p for p in pieces if p]
    if sum(len(p.split()) for p in pieces) < MIN_QUOTE_WORDS:
        return False
    haystack, at = f" {normalize(text)} ", 0
    for piece in pieces:
        found = haystack.find(f" {piece} ", at)
        if found < 0:
            return False
        at = found + len(piece) + 1
    return True


def ground(answer: str, citations: Sequence[Quoted], sources: Sequence[Source]) -> Grounded:
    """Keep the citations of ``answer`` that are verified, by a quote here or upstream.

    A marker ``[n]`` stays when this call quoted source n correctly, or when source n was
    verified before (a dependency's or child's result carried it). A verified source the
    answer quotes but never marks is cited at the end, so a supported answer always cites.
    """
    notes: list[str] = []
    quotes: dict[int, str] = {}
    for citation in citations:
        n = citation.source
        if not 1 <= n <= len(sources):
            notes.append(f"citation [{n}] dropped: there is no source {n}")
        elif quote_occurs(citation.quote, sources[n - 1].snippet):
            quotes.setdefault(n, citation.quote.strip())
        else:
            notes.append(f"citation [{n}] dropped: its quote does not occur in the source: {citation.quote[:80]!r}")
    grounded = [
        source.model_copy(update={"verified": True, "quote": quotes[n]}) if n in quotes else source
        for n, source in enumerate(sources, start=1)
    ]
    keep = {n for n, source in enumerate(grounded, start=1) if source.verified}
    marked = [n for n in cited_numbers(answer) if 1 <= n <= len(sources)]
    for n in marked:
        if n not in keep:
            notes.append(f"citation [{n}] dropped: no verified quote from that source")
    text = renumber(answer, {n: n for n in keep}).strip()
    unmarked = [n for n in quotes if n not in marked]
    if unmarked:
        text += " " + "".join(f"[{n}]" for n in sorted(unmarked))
    return Grounded(text, grounded, list(dict.fromkeys(notes)))

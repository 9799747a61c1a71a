"""Numbered citations: merge sources from many texts into one list and renumber ``[n]`` markers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from sentient.graph.node import Source

# A citation marker: "[2]", "[1, 3]" (the number list is group 1).
CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
# A run of markers ("[2][5]", "[1, 3]") with the spaces before it (the run is group 2).
_SPACED_CITATIONS = re.compile(rf"([ \t]*)((?:{CITATION.pattern})+)")
# Code (fenced blocks, inline spans) is left alone: ``xs[0]`` is an index, not a citation.
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)


class SourceList:
    """An ordered, de-duplicated (by ``ref``) list of sources numbered from 1."""

    def __init__(self, sources: Iterable[Source] = ()) -> None:
        self._sources: list[Source] = []
        self._numbers: dict[str, int] = {}
        for source in sources:
            self.add(source)

    def add(self, source: Source) -> int:
        """Add a source (or find it) and return its number. Another passage of a document already
        listed joins the passage kept, so the document's one number shows every passage cited from
        it (a claim is never shown beside a passage of its document that does not hold it); a
        verified copy makes it verified."""
        number = self._numbers.get(source.ref)
        if number is None:
            self._sources.append(source)
            number = self._numbers[source.ref] = len(self._sources)
            return number
        kept = self._sources[number - 1]
        snippet = _joined(kept.snippet, source.snippet)
        if snippet != kept.snippet or (source.verified and not kept.verified):
            update = {"snippet": snippet, "verified": kept.verified or source.verified}
            self._sources[number - 1] = kept.model_copy(update=update)
        return number

    def adopt(self, text: str, local_sources: Sequence[Source]) -> str:
        """Rewrite ``text`` whose ``[n]`` refer to ``local_sources`` so they refer to this list.

        Only the sources ``text`` cites join the list: what a result rests on is what the next
        agent may cite. Markers pointing at no local source are removed: a citation must resolve.
        """
        cited = [n for n in cited_numbers(text) if 1 <= n <= len(local_sources)]
        mapping = {n: self.add(local_sources[n - 1]) for n in cited}
        return renumber(text, mapping)

    @property
    def sources(self) -> list[Source]:
        return list(self._sources)

    def __len__(self) -> int:
        return len(self._sources)


def _joined(kept: str, other: str) -> str:
    """Two passages of one document as one (either alone if it holds the other)."""
    if other in kept:
        return kept
    if kept in other:
        return other
    return f"{kept} … {other}"


def renumber(text: str, mapping: dict[int, int]) -> str:
    """Replace every citation number by ``mapping[n]``; drop numbers that have no mapping."""
    if CITATION.search(text) is None:  # no marker, as in most texts renumbered: 10x cheaper than the sub
        return text

    def replace(match: re.Match[str]) -> str:
        numbers = [mapping.get(int(n)) for run in CITATION.findall(match.group(2)) for n in run.split(",")]
        kept = list(dict.fromkeys(n for n in numbers if n is not None))  # two passages of one document: once
        # A dropped citation takes its leading space with it: "fact [9]." becomes "fact."
        return match.group(1) + "".join(f"[{n}]" for n in kept) if kept else ""

    return "".join(part if is_code else _SPACED_CITATIONS.sub(replace, part) for part, is_code in _split_code(text))


def cited_numbers(text: str) -> list[int]:
    """Citation numbers in order of first appearance."""
    seen: dict[int, None] = {}
    for part, is_code in _split_code(text):
        if is_code:
            continue
        for match in CITATION.finditer(part):
            for n in match.group(1).split(","):
                seen.setdefault(int(n), None)
    return list(seen)


def _split_code(text: str) -> list[tuple[str, bool]]:
    """``text`` cut into (part, is_code) pieces, in order."""
    if "`" not in text:  # no code: one piece, without a regex pass
        return [(text, False)]
    parts: list[tuple[str, bool]] = []
    last = 0
    for match in _CODE.finditer(text):
        parts.append((text[last : match.start()], False))
        parts.append((match.group(0), True))
        last = match.end()
    parts.append((text[last:], False))
    return parts

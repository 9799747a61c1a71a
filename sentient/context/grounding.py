"""Grounded citations: a citation stands only if its supporting quote is really in the source.

An executor answers with, for each source it cites, a short quote copied from that source.
The quote is checked in code against the text the model was shown (the source's snippet),
ignoring case, accents, punctuation and spacing:

1. the quote occurs in the cited source: verified;
2. it occurs in another source the model was shown (small models mix up numbers): verified,
   and the answer's marker is moved to that source;
3. at least ``MIN_OVERLAP`` of the quote's words occur, in a window about the quote's length, in
   one source (a lightly paraphrased quote, or table cells quoted as a line): verified, noted.

A citation that passes none of these is dropped from the answer and noted on the node; a
verified one marks its source ``verified`` with the quote, so the report can show the
evidence behind every reference. An answer that comes without quotes is checked against what
its sources state instead (:mod:`sentient.context.evidence`). Whether a verified quote also
confirms what an answer says is :func:`confirmed_by_quote`'s question (a second look's).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sentient.context.answer_text import TRAILING_MARKERS, opens_cited
from sentient.context.citations import cited_numbers, renumber
from sentient.context.wording import normalize, opening, own_words, sentences, stem
from sentient.graph.node import Source

_ELLIPSIS = re.compile(r"\.\.\.|…")
MIN_QUOTE_WORDS = 2  # one word ("30") proves nothing about the sentence it came from
MIN_OVERLAP = 0.8  # share of a loosely matched quote's words found together in the source
MIN_LOOSE_WORDS = 4  # a loose match needs a quote of at least this many words
MAX_QUOTE_WORDS = 30  # a longer sentence is offered as quotes of QUOTE_PIECE_WORDS words
QUOTE_PIECE_WORDS = 25
# A quote that answers on its own holds at least this share of the question's own words.
ANSWERING_SHARE = 0.5


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


def loose_overlap(quote: str, text: str) -> float:
    """The largest share of the quote's distinct words found in one window of ``text`` about
    the quote's length (half again as long), in any order."""
    wanted = set(normalize(quote).split())
    words = normalize(text).split()
    if not wanted or not words:
        return 0.0
    size = max(len(wanted), round(len(normalize(quote).split()) * 1.5))
    best = 0
    for start in range(max(1, len(words) - size + 1)):
        best = max(best, len(wanted.intersection(words[start : start + size])))
    return best / len(wanted)


def ground(answer: str, citations: Sequence[Quoted], sources: Sequence[Source]) -> Grounded:
    """Keep the citations of ``answer`` that are verified, by a quote here or upstream.

    A marker ``[n]`` stays when this call quoted source n (see the module docstring for how a
    quote is matched, and moved to the source it really came from), or when source n was
    verified before (a dependency's or child's result carried it). A verified source the
    answer quotes but never marks is cited at the end, so a supported answer always cites.
    """
    notes: list[str] = []
    quotes: dict[int, str] = {}
    moved: dict[int, int] = {}
    for citation in citations:
        n, quote = citation.source, citation.quote.strip()
        found = _locate(quote, n, sources)
        if found is None:
            where = (
                f"there is no source {n}" if not 1 <= n <= len(sources) else "its quote does not occur in the source"
            )
            notes.append(f"citation [{n}] dropped: {where}: {quote[:80]!r}")
            continue
        m, how = found
        quotes.setdefault(m, quote)
        if m != n:
            moved.setdefault(n, m)
            notes.append(f"citation [{n}] moved to [{m}]: the quote is from source {m}")
        if how:
            notes.append(f"citation [{m}] verified loosely: {how}")
    grounded = [
        source.model_copy(update={"verified": True, "quote": quotes[n]}) if n in quotes else source
        for n, source in enumerate(sources, start=1)
    ]
    keep = {n: n for n, source in enumerate(grounded, start=1) if source.verified}
    keep.update(moved)
    marked = [n for n in cited_numbers(answer) if 1 <= n <= len(sources)]
    for n in marked:
        if n not in keep:
            notes.append(f"citation [{n}] dropped: no verified quote from that source")
    text = renumber(answer, keep).strip()
    marked_now = {keep.get(m) for m in marked}
    unmarked = [n for n in quotes if n not in marked_now]
    if unmarked:
        text += " " + "".join(f"[{n}]" for n in sorted(unmarked))
    return Grounded(text, grounded, list(dict.fromkeys(notes)))


def opens_confirmed(answer: Grounded) -> bool:
    """Whether the first sentence of ``answer`` (the direct answer) cites a verified source."""
    return opens_cited(answer.text, {n for n, source in enumerate(answer.sources, start=1) if source.verified})


def confirmed_by_quote(answer: Grounded, goal: str) -> Grounded | None:
    """``answer``, given quote-first to ``goal`` and grounded, if a verified quote states its
    direct answer (the first sentence); the quote itself, cited, if the answer only restated the
    question and the quote answers it; else None.

    A verified quote proves that a sentence is in a source, not that it says what the answer
    does: the answer's first sentence is confirmed when a word it adds to the goal's own words
    is in the quote of a source it cites (of any quoted source, if it cites none: the markers
    :func:`ground` appended at the end then move to it). An answer that adds no word ("Which
    kind of expression is a SyntaxError in a coroutine?" answered "A SyntaxError [2]") says
    nothing, but the sentence the model copied first may say it all ("It is a SyntaxError to
    use a yield from expression inside the body of a coroutine function."): the quote that
    holds most of the goal's words answers, if it holds ``ANSWERING_SHARE`` of them and adds one.
    """
    asked = _stems(goal)
    text = answer.text.strip()
    first = opening(text)
    added = added_words(text, goal)
    cited = cited_numbers(first)
    quotes = {n: source.quote for n, source in enumerate(answer.sources, start=1) if source.verified and source.quote}
    if added:
        support = [n for n in (cited or quotes) if n in quotes and added & _stems(quotes[n])]
        if not support or not text.startswith(first):
            return None
        if cited:
            return answer
        marks = "".join(f"[{n}]" for n in support)
        return Grounded(f"{first} {marks}{TRAILING_MARKERS.sub('', text[len(first) :])}", answer.sources, answer.notes)
    best = max(quotes, key=lambda n: len(asked & _stems(quotes[n])), default=None)
    if best is None:
        return None
    words = _stems(quotes[best])
    if not words - asked or len(asked & words) < ANSWERING_SHARE * len(asked):
        return None
    return Grounded(f"{quotes[best].strip()} [{best}]", answer.sources, answer.notes)


def quotable(sources: Sequence[Source], longest: int = MAX_QUOTE_WORDS) -> tuple[str, ...]:
    """The sentences of the sources' snippets, as quotes an executor may copy (in order, once each).

    A sentence of more than ``longest`` words (a code listing, a run-on table line) is offered
    in pieces of ``QUOTE_PIECE_WORDS``, so a quote stays short; pieces of fewer than
    ``MIN_QUOTE_WORDS`` + 1 words are left out, since they could not verify anything.
    """
    quotes: dict[str, None] = {}
    for source in sources:
        text = _ELLIPSIS.sub(" ", source.snippet)
        for sentence in sentences(text):
            words = sentence.split()
            step = len(words) if len(words) <= longest else QUOTE_PIECE_WORDS
            for start in range(0, len(words), step):
                piece = words[start : start + step]
                if len(piece) > MIN_QUOTE_WORDS:
                    quotes.setdefault(" ".join(piece))
    return tuple(quotes)


def _locate(quote: str, cited: int, sources: Sequence[Source]) -> tuple[int, str] | None:
    """The source (1-based) that holds ``quote``, the cited one first, and how loosely; or None."""
    others = [n for n in range(1, len(sources) + 1) if n != cited]
    order = [cited, *others] if 1 <= cited <= len(sources) else others
    for n in order:
        if quote_occurs(quote, sources[n - 1].snippet):
            return n, ""
    if len(normalize(quote).split()) < MIN_LOOSE_WORDS:
        return None
    for n in order:
        share = loose_overlap(quote, sources[n - 1].snippet)
        if share >= MIN_OVERLAP:
            return n, f"{share:.0%} of the quote's words"
    return None


def added_words(answer: str, goal: str) -> set[str]:
    """The stems of the words that ``answer``'s first sentence adds to ``goal``'s own words:
    none, and it only restates the question."""
    return _stems(renumber(opening(answer.strip()), {})) - _stems(goal)


def _stems(text: str) -> set[str]:
    """The stems of ``text``'s own words (:func:`~sentient.context.wording.own_words`)."""
    return {stem(w) for w in own_words(text)}

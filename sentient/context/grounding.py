"""Grounding: which citations of an answer are verified, and whether an answer is confirmed.

This module owns both notions; the processor, the report and the eval use them and nothing else:

- A direct answer's source (and a report's answer's) is **verified** when its passage holds the
  answer or its key words (:func:`stating`), a direct answer's also every code the question names
  (:func:`unnamed`: "OPS-117", "Q1"; a passage about another incident cannot state the answer
  about this one), the verifier, asked what the passage answers for
  the question alone, without being shown the answer (:class:`Reading`), gives the same answer
  (:func:`agrees`), and, for a direct answer, the verifier then shown the answer judges that the
  passage supports it (:class:`Verdict`). Shared words prove nothing, and a passage that does not
  contain the answer cannot be shown to state it; shown an answer first, a 1.5B verifier accepts
  it from nearly any passage on its topic, so it reads the passage blind first. An aggregate's
  sources are verified when the verifier, asked one short question under its output schema
  (:class:`Verdict`), judges that the passages it cites support it (the pattern of Self-RAG's
  support token and CRAG's retrieval evaluator, with the run's own model as judge).
- An answer is **confirmed** when it cites at least one verified source. An unconfirmed answer
  is the model's own, and every surface says so.
- An answer is **supported** when the executor named a passage for it (first, or when asked again
  which passage states it) that cannot be shown to state it: it cites nothing. It is
  **contradicted** when that passage does not name the question's codes, or the verifier's own
  reading of it did not give the same answer (what stands if research finds nothing better is
  kept as its ``reading``). An answer is **settled** (no
  more research) when it is confirmed, or supported and not contradicted: two readings of one
  passage that disagree are a doubt worth a second look; a passage without the answer's words is
  not, as it may state the answer in other words (requiring the words lost answers, see
  bench/README.md). Deciding whether to research further and deciding what to badge are
  separate, so a stricter badge does not change answers.

Text code here only places and reads citation markers (``[n]``); whether a passage contains an
answer's words is :func:`sentient.context.wording.holds`, which works in any script.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from sentient.context.citations import cited_numbers, renumber
from sentient.context.wording import codes, holds
from sentient.graph.node import Source

# Said under every report's references, in the HTML and by the dashboard.
VERIFIED_MEANS = (
    "Verified: a model read the passage and judged that it supports the answer it is cited for; "
    "a direct answer's passage also contains the answer's words and, read again without the answer, gives the same one; "
    "a quote is its passage's own words."
)
MAX_JUDGED = 3  # cited passages shown to one verifier call


class Verdict(BaseModel):
    """The verifier's reading of the cited passages."""

    supports: bool = Field(
        description="true only if the passages state the answer to the question (in any words or language); "
        "false if they are about something else, only share words with the question, or contradict the answer."
    )


class Choice(BaseModel):
    """The verifier's second reading: which of the passages shown states the answer."""

    source: int = Field(ge=0, description="The number n of the source that states the answer; 0 if none does.")


def choice_schema(count: int) -> type[Choice]:
    """``Choice`` that can only name one of ``count`` passages, or 0 (a grammar enforces it)."""
    allowed: Any = Literal[tuple(range(count + 1))]
    return create_model(
        "Choice", __base__=Choice, source=(allowed, Field(description=Choice.model_fields["source"].description))
    )


class Reading(BaseModel):
    """The verifier's reading of the passage an answer cites, made without being shown that answer."""

    answer: str = Field(
        description="The answer to the question that the passage states, in a few words as it writes them; "
        "empty if it does not state the answer to this very question."
    )


@dataclass(frozen=True)
class Grounded:
    """An answer with the sources its ``[n]`` refer to (1-based), and notes for the node."""

    text: str
    sources: list[Source]
    notes: list[str] = field(default_factory=list)
    supported: bool = False  # a passage was named for it (see the module) but its citation is not shown
    contradicted: bool = False  # ... but read for the question alone, that passage gave no answer or another
    reading: str = ""  # ... that other answer, if it gave one

    @property
    def confirmed(self) -> bool:
        return confirmed(self.text, verified_numbers(self.sources))

    @property
    def settled(self) -> bool:
        """Whether the answer needs no more research: confirmed, or supported and not contradicted."""
        return self.confirmed or (self.supported and not self.contradicted)


def verified_numbers(sources: Sequence[Source]) -> set[int]:
    """The 1-based numbers of the verified ``sources``."""
    return {n for n, source in enumerate(sources, start=1) if source.verified}


def confirmed(text: str, verified: Collection[int]) -> bool:
    """Whether ``text`` cites at least one of the ``verified`` source numbers."""
    return any(n in verified for n in cited_numbers(text))


def judged(answer: str, sources: Sequence[Source], cited: Sequence[int], supports: bool) -> Grounded:
    """``answer`` (no markers of its own) citing ``cited`` if the verifier found they support it.

    Supported: the cited sources are marked verified and their markers follow the answer.
    Not supported: they are marked unverified and the answer cites nothing (a citation that
    cannot be shown to support the answer is not shown as evidence for it).
    """
    numbers = [n for n in dict.fromkeys(cited) if 1 <= n <= len(sources)]
    marked = [
        source.model_copy(update={"verified": supports}) if n in numbers else source
        for n, source in enumerate(sources, start=1)
    ]
    text = strip_markers(answer)
    if not supports or not numbers:
        note = f"the verifier found that source(s) {numbers} do not support the answer" if numbers else ""
        return Grounded(text, marked, [note] if note else [])
    return Grounded(cite(text, numbers), marked)


def cite(text: str, numbers: Sequence[int]) -> str:
    """``text`` (no markers of its own) followed by the markers of ``numbers``."""
    return f"{text} {''.join(f'[{n}]' for n in numbers)}"


def stating(answer: str, keys: Sequence[str], sources: Sequence[Source], cited: Sequence[int]) -> list[int]:
    """The ``cited`` source numbers whose passage holds ``answer`` or one of its ``keys`` (the
    names, numbers or terms it states): the only ones that can be shown to state it."""
    text = strip_markers(answer)
    return [n for n in cited if 1 <= n <= len(sources) and holds(_shown(sources[n - 1]), text, *keys)]


def unnamed(question: str, source: Source) -> list[str]:
    """The codes ``question`` names ("OPS-117", "Q1": :func:`~sentient.context.wording.codes`)
    that ``source``'s passage does not: a passage about another incident, quarter or version
    cannot state the answer about this one."""
    passage = _shown(source)
    return [code for code in codes(question) if not holds(passage, code)]


def _shown(source: Source) -> str:
    """What a model is shown of ``source``, and what a citation of it is checked against."""
    return f"{source.title} {source.snippet}"


def answers(reading: str, question: str) -> bool:
    """Whether the verifier's ``reading`` of a passage answers ``question`` at all: it says
    something, and not only words the question itself holds (those restate it)."""
    return bool(reading.strip()) and not holds(question, reading)


def agrees(reading: str, question: str, answer: str, short: str = "") -> bool:
    """Whether the verifier's ``reading`` of a passage (the answer to ``question`` it finds there,
    asked without being shown the executor's) :func:`answers` it and is the executor's
    ``answer`` or its ``short`` words (a direct answer's; a report's answer has none): one holds
    the other (:func:`holds`): "MagicMock" and "unittest.mock.MagicMock" agree either way round.
    Words the question itself holds agree with nothing (they restate it)."""
    if not answers(reading, question):
        return False
    if holds(f"{answer} {short}", reading):
        return True
    return any(holds(reading, words) and not holds(question, words) for words in (strip_markers(answer), short))


def accepted(
    question: str, answer: str, short: str, sources: Sequence[Source], cited: int, reading: str, supports: bool = True
) -> Grounded:
    """``answer`` to ``question`` whose executor named its ``cited`` source. It cites that source,
    verified, only if the passage names the codes the question names (:func:`unnamed`), holds the
    answer or its ``short`` words, the verifier's own ``reading`` of the passage gives the same
    answer (:func:`agrees`), and the verifier, then shown the answer, ``supports`` it; else it is
    supported, citing nothing (noted), and contradicted if the passage is about something else or
    that reading did not give the same answer. What stands if research finds nothing better is
    kept as ``reading``: the answer that reading gave, if any; else, for a passage about something
    else, the answer itself (it may have been read in another passage shown and numbered wrongly).

    A blind reading that repeats the executor's answer is not enough on its own: the same small
    model often misreads a passage the same way twice (another row of a table, a superseded
    policy), and judging the answer against the passage catches about half of those. The
    judgement only withholds the badge: the reading agreed, so it is no doubt worth more research."""
    contradicted = False
    if missing := unnamed(question, sources[cited - 1]):
        note = f"source {cited} does not name {', '.join(missing)}"
        contradicted = True
    elif not stating(answer, [short], sources, [cited]):
        note = f"source {cited} does not contain the answer ({short!r})"
    elif not agrees(reading, question, answer, short):
        note = f"source {cited}, read for the question alone, gives {reading!r}"
        contradicted = True
    elif not supports:
        note = f"the verifier, shown the answer, found that source {cited} does not support it"
    else:
        return judged(answer, sources, [cited], True)
    text = strip_markers(answer)
    other = reading.strip() if contradicted and answers(reading, question) else ""
    if missing and not other:  # the executor may have read the answer in another shown passage
        other = text
    return Grounded(
        text, list(sources), [f"{note}: not cited"], supported=True, contradicted=contradicted, reading=other
    )


def rejudged(answer: Grounded, supports: bool) -> Grounded:
    """``answer`` (an aggregate citing earlier-verified sources) after the verifier read what it
    cites as a whole: unsupported, its citations no longer count as verified for this answer."""
    if supports:
        return answer
    cited = set(cited_numbers(answer.text))
    sources = [
        source.model_copy(update={"verified": False}) if n in cited else source
        for n, source in enumerate(answer.sources, start=1)
    ]
    return Grounded(
        answer.text, sources, [*answer.notes, "the verifier found that the cited passages do not support the answer"]
    )


def to_judge(answer: Grounded) -> list[int]:
    """The source numbers a verifier reads for ``answer``: the first ``MAX_JUDGED`` it cites."""
    return [n for n in dict.fromkeys(cited_numbers(answer.text)) if 1 <= n <= len(answer.sources)][:MAX_JUDGED]


def strip_markers(text: str) -> str:
    """``text`` without citation markers (code spans keep theirs)."""
    return renumber(text, {}).strip()

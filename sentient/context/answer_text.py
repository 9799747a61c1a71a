"""Repairs of an answer's text that need no source, and the shape of an answer.

The small model sometimes stops mid-sentence (:func:`drop_unfinished`), gives a source's number
as the thing asked about (:func:`marker_as_answer`, :func:`state_markers`), or says the sources
do not confirm an answer whose citation the code has just verified (:func:`drop_disclaimers`).
An answer of one paragraph opens with its direct answer (:func:`opens_cited`); one of several
lines is a report (:func:`written_as_report`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from sentient.context.citations import cited_numbers
from sentient.context.wording import cited_sentences, opening, sentence_parts, sentences
from sentient.graph.node import Source

# "The RFC that telnetlib is based on is [2]." A marker standing where the answer belongs ends its
# sentence right after a verb that names or equates; "as stated in [2]" points at a source, fine,
# and so does a sentence about the source ("The source of this information is [2].").
_MARKER_AS_ANSWER = re.compile(
    r"\b(?:is|are|was|were|be|called|named)\s+(?:\[\d+(?:\s*,\s*\d+)*\]\s*)+[.;!?]*\s*$", re.IGNORECASE
)
_ABOUT_A_SOURCE = re.compile(r"\b(?:sources?|references?|citations?|documents?)\b", re.IGNORECASE)


# A sentence that opens by saying the sources do not confirm (contain, state…) the answer.
_DISCLAIMER = re.compile(
    r"\W*(?:however,?\s+)?(?:the\s+|these\s+)?(?:provided\s+|given\s+)?(?:sources?|passages?|documents?)"
    r"(?:\s+provided|\s+given|\s+above)?\s+(?:do|does)\s+not\b",
    re.IGNORECASE,
)


# The last words of a sentence cut off mid-way ("It is stored in the", "used as items such as",
# "shown on the Gullet dashboard ("): a word that needs another after it, or an open bracket.
_UNFINISHED = re.compile(
    r"(?:\b(?:a|an|the|of|in|on|at|to|for|with|by|from|as|like|and|or|but|nor|than|into|under|over|about|"
    r"between|is|are|was|were|be|been|its|their|his|her|this|these|those|which|whose|including)|[(\[{,:;])\s*$",
    re.IGNORECASE,
)
# The citations that end a text: "… the file. [1], [2]".
TRAILING_MARKERS = re.compile(r"(?:[\s,;]*\[\d+(?:\s*,\s*\d+)*\])+\s*$")


# A disclaimer's sequel, dropped with it: "They also do not confirm that …".
_DISCLAIMER_GOES_ON = re.compile(
    r"\W*(?:they|it)\s+(?:also\s+)?(?:do|does)\s+not\s+(?:confirm|state|say|mention|specify)\b", re.IGNORECASE
)


def written_as_report(text: str) -> bool:
    """Whether ``text`` is more than one line: a report (headings, paragraphs, lists), not an
    answer of one paragraph whose first sentence is the direct answer."""
    return "\n" in text.strip()


def opens_cited(text: str, numbers: Collection[int]) -> bool:
    """Whether the first sentence of ``text``, the direct answer, cites one of ``numbers``."""
    return any(n in numbers for n in cited_numbers(opening(text)))


def drop_unfinished(answer: str) -> tuple[str, str | None]:
    """``answer`` without a last sentence that stops mid-way, and that sentence (None if kept).

    The small model sometimes closes its answer in the middle of a sentence ("… in the variable
    `_`. It is stored in the"), and a later step copies the fragment or guesses how it goes on
    ("such as `__builtins__`"). Only a last sentence that ends on a word that needs another
    after it ("the", "such as", "is") or on an open bracket goes, and only after a sentence that
    stays: a short answer ("47 seconds") has no full stop and is whole.
    """
    parts = sentences(answer)
    if len(parts) < 2 or not _UNFINISHED.search(TRAILING_MARKERS.sub("", parts[-1])):
        return answer, None
    last = parts[-1].strip()
    return answer[: answer.rindex(last)].rstrip(), last


def marker_as_answer(answer: str) -> str | None:
    """The first sentence of ``answer`` whose answer is only a citation marker ("... is [2]."), if any.

    A small model sometimes takes a source's number for the thing asked about. Such an answer
    says nothing, and a later step copies the number as a name ("[RFC 854]", from memory).
    """
    return next((sentence.strip() for sentence in sentences(answer) if _gives_a_marker(sentence)), None)


def state_markers(answer: str, cited_texts: Sequence[str]) -> tuple[str, int]:
    """Replace each sentence of ``answer`` that gives only a citation marker as its answer
    (:func:`marker_as_answer`) by the first sentence of ``cited_texts`` (the results it was
    given, numbered as the answer's sources) that cites the same source: the marker says which
    source, the result says what that source states. Returns the text and how many sentences
    were replaced.
    """
    stating = [
        (sentence.strip(), set(numbers))
        for sentence, numbers in cited_sentences(cited_texts)
        if not _gives_a_marker(sentence)
    ]
    parts = sentence_parts(answer)
    replaced = 0
    for i in range(0, len(parts), 2):  # even items are sentences, odd ones the breaks between them
        if not _gives_a_marker(parts[i]):
            continue
        wanted = set(cited_numbers(parts[i]))
        found = next((sentence for sentence, numbers in stating if numbers & wanted), None)
        if found is not None:
            parts[i] = found
            replaced += 1
    return "".join(parts), replaced


def _gives_a_marker(sentence: str) -> bool:
    return bool(_MARKER_AS_ANSWER.search(sentence)) and not _ABOUT_A_SOURCE.search(sentence)


def drop_disclaimers(answer: str, sources: Sequence[Source]) -> tuple[str, int]:
    """``answer`` without its sentences that say the sources do not confirm it, when it cites a
    verified source; and how many went.

    The small model is told to say so when it answers from memory, and often says it after an
    answer whose citation the code has just checked: "… is 18 KiB [1]. The sources do not
    confirm this answer." Only sentences that open with such a disclaimer (or go on with one:
    "They also do not confirm …") and cite nothing go; an answer with no verified citation
    keeps them, since there they are true.
    """
    verified = {n for n, source in enumerate(sources, start=1) if source.verified}
    if not verified.intersection(cited_numbers(answer)):
        return answer, 0
    parts = [*sentence_parts(answer), ""]  # sentence, the break after it, sentence, …
    kept: list[str] = []
    dropped = 0
    after_disclaimer = False
    for i in range(0, len(parts) - 1, 2):
        sentence = parts[i]
        disclaims = _DISCLAIMER.match(sentence) or (after_disclaimer and _DISCLAIMER_GOES_ON.match(sentence))
        after_disclaimer = bool(disclaims) and not cited_numbers(sentence)
        if after_disclaimer:
            dropped += 1
        else:
            kept.append(sentence + parts[i + 1])
    return ("".join(kept).strip(), dropped) if dropped else (answer, 0)

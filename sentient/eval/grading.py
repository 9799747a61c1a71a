"""Answer matching shared by the graders and the dataset checks.

An accepted answer counts as present in a text when its normalised form occurs in the
normalised text as whole words (:func:`~sentient.context.wording.holds`, the pipeline's own
test of whether a passage contains an answer): case, accents, punctuation and spacing are
ignored, so ``"asyncio.sleep()"`` matches "calls asyncio sleep" but ``"3"`` does not match
``"30"``; in scripts written without spaces an answer may stand anywhere ("九十天" in
"保留期限为九十天").
The References part of a report is not part of the answer and is cut before matching.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from sentient.context.citations import CITATION
from sentient.context.wording import holds, normalize

_REFERENCES = re.compile(
    r"^#{1,6}\s*(References|Other sources consulted)\b.*", re.IGNORECASE | re.MULTILINE | re.DOTALL
)


def contains_answer(text: str, answers: Iterable[str]) -> bool:
    """Whether any accepted answer occurs in ``text`` (see the module)."""
    return holds(text, *answers)


def states_every_part(texts: Sequence[str], parts: Sequence[Sequence[str]]) -> bool:
    """Whether, for every part of a question, one of ``texts`` holds one of its accepted answers
    (one text per part will do: each part may come from another source or step)."""
    return all(any(contains_answer(text, part) for text in texts) for part in parts)


def answer_body(report: str) -> str:
    """The report without its References / Other sources sections."""
    return _REFERENCES.sub("", report).strip()


# Answers that decline rather than state something. Checked only when the answer is not
# correct, so "the sources do not say X, but Y" that contains the answer still counts as correct.
_DECLINES = re.compile(
    r"\b(i (do not|don t|cannot|can t) (know|say|tell|determine|find|answer)"
    r"|(is|are) not (mentioned|specified|stated|provided|given)"
    r"|(sources|documents|passages|context|results|information)( provided| given)? (do not|does not|don t|doesn t)"
    r" (contain|say|state|mention|specify|provide|include|answer)"
    r"|no (information|answer|mention)"
    r"|not enough information|unable to (find|answer|determine)|cannot be determined)\b"
)
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)


def looks_not_attempted(answer: str) -> bool:
    """The no-judge stand-in for SimpleQA's NOT_ATTEMPTED: an empty answer or one that declines.

    A small heuristic on the normalised body: "I don't know", "the sources do not contain/say
    ...", "is not mentioned", "no information", "unable to find/answer" and the like.
    """
    body = normalize(answer_body(answer))
    return not body or bool(_DECLINES.search(body))


def citation_markers(text: str) -> list[int]:
    """Every citation number in ``text`` in order, one per occurrence (``[1, 3]`` gives 1 and 3).

    Code spans are skipped (``xs[0]`` is an index, not a citation); cut References off first.
    """
    prose = _CODE.sub(" ", text)
    return [int(n) for match in CITATION.finditer(prose) for n in match.group(1).split(",")]

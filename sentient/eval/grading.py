"""Answer matching shared by the graders and the dataset checks.

An accepted answer counts as present in a text when its normalised form occurs in the
normalised text as whole words: case, accents, punctuation and spacing are ignored, so
``"asyncio.sleep()"`` matches "calls asyncio sleep" but ``"3"`` does not match ``"30"``.
The References part of a report is not part of the answer and is cut before matching.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sentient.context.grounding import normalize

_REFERENCES = re.compile(
    r"^#{1,6}\s*(References|Other sources consulted)\b.*", re.IGNORECASE | re.MULTILINE | re.DOTALL
)


def contains_answer(text: str, answers: Iterable[str]) -> bool:
    """Whether any accepted answer occurs in ``text`` as whole normalised words."""
    haystack = f" {normalize(text)} "
    return any((needle := normalize(answer)) and f" {needle} " in haystack for answer in answers)


def answer_body(report: str) -> str:
    """The report without its References / Other sources sections."""
    return _REFERENCES.sub("", report).strip()

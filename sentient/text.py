"""Checks and cleaning for untrusted text: goals people type, answers models write.

- :func:`goal_problem` says why a goal cannot be researched: empty once whitespace is gone,
  carrying control characters (the ASCII separators U+001C-U+001F count as whitespace to
  ``str.strip`` but not to every validator, so a goal of them alone slipped through one check
  and crashed the next), or without one visible character (only zero-width characters, bidi
  controls, combining marks or a BOM and no-break spaces). Every surface (CLI, REST, Python API)
  asks it.
- :func:`neutralise_bidi` removes the Unicode bidirectional controls that let text display in
  an order other than the one it is stored in ("Trojan Source" spoofing of names and links).
"""

from __future__ import annotations

import re
import unicodedata

# Tab, newline and carriage return are ordinary in a pasted goal; every other C0/C1 control is not.
_ALLOWED_CONTROLS = frozenset("\t\n\r")
# Letters, numbers, punctuation and symbols are what shows. Format characters (zero-width ones, bidi
# controls, the BOM), marks with nothing to combine with, spaces and unassigned or private-use code
# points show nothing, in any script.
_VISIBLE_CATEGORIES = frozenset("LNPS")
# LRM, RLM, the embeddings and overrides (LRE, RLE, PDF, LRO, RLO), the isolates (LRI, RLI, FSI, PDI).
BIDI_CONTROLS = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")


def goal_problem(goal: str, subject: str = "the goal", *, plural: bool = False) -> str | None:
    """Why ``goal`` is not a researchable goal, in one sentence about ``subject`` (``plural``: the
    verbs agree with a plural one, such as "the instructions"); None when it is fine."""
    contains, is_, has = ("contain", "are", "have") if plural else ("contains", "is", "has")
    for char in goal:
        if unicodedata.category(char) == "Cc" and char not in _ALLOWED_CONTROLS:
            return f"{subject} {contains} the control character U+{ord(char):04X}: describe what to research in words."
    if not goal.strip():
        return f"{subject} {is_} empty: describe what to research."
    if not any(unicodedata.category(char)[0] in _VISIBLE_CATEGORIES for char in goal):
        return f"{subject} {has} no visible text: describe what to research in words."
    return None


def neutralise_bidi(text: str) -> str:
    """``text`` without bidirectional control characters, so it displays in its stored order."""
    return _BIDI.sub("", text)

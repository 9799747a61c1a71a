"""Markdown tables rewritten as one sentence per row, so a row can be found, shown and quoted alone.

Passages are whitespace-collapsed, so a pipe table becomes one long line in which the header
is far from most rows: a small model reading "| Cormorant | Yevgenia Palk | Rafferty Coll |"
cannot tell the team lead from the on-call lead, and a snippet cut around the best-matching
words shows cells without their columns. Each data row is rewritten as
"Team: Cormorant; Team lead: Yevgenia Palk; On-call lead: Rafferty Coll." — it names its
columns, ends like a sentence (so snippets keep or drop it whole) and holds the cells verbatim
(so quotes of a cell still verify against what the model was shown).
"""

from __future__ import annotations

import re

_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_ROW = re.compile(r"^\s*\|.*\|\s*$")
_END = re.compile(r"[.!?]$")
# A sentence as _record writes it: two or more "name: value" cells joined by "; ".
_RECORD = re.compile(r"[^:;]{1,40}: [^;]+(?:; [^:;]{1,40}: [^;]+)+")


def tables_as_records(text: str) -> str:
    """``text`` with every Markdown pipe table (header row, separator row, data rows) rewritten
    as one line per data row, ``Header: cell; Header: cell.``; other lines stay as they are."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if _ROW.match(lines[i]) and i + 1 < len(lines) and _SEPARATOR.match(lines[i + 1]):
            header = _cells(lines[i])
            i += 2
            while i < len(lines) and _ROW.match(lines[i]):
                out.append(_record(header, _cells(lines[i])))
                i += 1
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def _cells(line: str) -> list[str]:
    inner = line.strip()[1:-1]
    # "\|" is an escaped pipe inside a cell, not a column break.
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", inner)]


def _record(header: list[str], cells: list[str]) -> str:
    """One row as a sentence: each non-empty cell after its column's name."""
    parts = []
    for n, cell in enumerate(cells):
        if not cell:
            continue
        name = header[n] if n < len(header) else ""
        parts.append(f"{name}: {cell}" if name else cell)
    sentence = "; ".join(parts)
    return sentence if _END.search(sentence) else f"{sentence}."


def is_record(sentence: str) -> bool:
    """Whether ``sentence`` reads as a table row rewritten by :func:`tables_as_records`
    ("Team: Sandpiper; On-call lead: Dorotea Quayle.")."""
    return _RECORD.fullmatch(sentence) is not None

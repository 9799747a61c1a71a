"""Tables rewritten as one sentence per row, so a row can be found, shown and quoted alone.

Passages are whitespace-collapsed, so a pipe table becomes one long line in which the header
is far from most rows: a small model reading "| Cormorant | Yevgenia Palk | Rafferty Coll |"
cannot tell the team lead from the on-call lead, and a snippet cut around the best-matching
words shows cells without their columns. Each data row is rewritten as
"Team: Cormorant; Team lead: Yevgenia Palk; On-call lead: Rafferty Coll." — it names its
columns, ends like a sentence (so snippets keep or drop it whole) and holds the cells verbatim
(so quotes of a cell still verify against what the model was shown).

Two layouts are read: Markdown pipe tables and reStructuredText grid tables (the layout of
Python's own reference topics: the operator precedence and sequence operation tables). A grid
row spans several lines, each cell wrapped within its column; its lines are joined per column.
A snippet of a bordered table shows a few cells among its dashes; as records, whole rows.

A question that names a row by its first cell ("the usable capacity of KESTREL-archive" names
"Limit: Usable capacity; Value: 640 TiB.") is answered by that row: :func:`named_row` finds it,
and :func:`named_first` ranks the passage holding it first within its source, so search shows
that passage, from that row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import pairwise

_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_ROW = re.compile(r"^\s*\|.*\|\s*$")
_END = re.compile(r"[.!?]$")
# A sentence as _record writes it: two or more "name: value" cells joined by "; ".
_RECORD = re.compile(r"[^:;]{1,40}: [^;]+(?:; [^:;]{1,40}: [^;]+)+")
# A record as it appears in a passage, at its start or after a sentence end: its first column's
# name (group 1) and first cell (group 2), then a second cell.
_RECORD_START = re.compile(r"(?:^|(?<=[.!?])\s)([^:;.!?]{1,40}): ([^:;]{1,60}); [^:;]{1,40}: ")
_TEXT_WORD = re.compile(r"\w+(?:-\w+)*")
_IDENTIFIER = re.compile(r"\d.*[a-z]|[a-z].*\d")  # a (lower-cased) word with letters and digits: sev1, acp-7
# A grid table's border ("+-----+----+") and header rule ("+=====+====+", or "|=====|====|" as
# Python's pydoc topics write it).
_GRID_BORDER = re.compile(r"^\s*\+(?:-+\+)+\s*$")
_GRID_RULE = re.compile(r"^\s*[+|](?:=+[+|])+\s*$")


def tables_as_records(text: str) -> str:
    """``text`` with every Markdown pipe table (header row, separator row, data rows) and every
    grid table (see the module docstring) rewritten as one line per data row, ``Header: cell;
    Header: cell.``; other lines stay as they are."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if _GRID_BORDER.match(lines[i]):
            end, records = _grid_table(lines, i)
            if records:
                out.extend(records)
                i = end
                continue
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


def _grid_table(lines: list[str], top: int) -> tuple[int, list[str]]:
    """The grid table whose top border is ``lines[top]``: the index after it and its data rows as
    records; no records if it is not a well-formed table with a header rule.

    Columns are where the top border has its ``+``; each row's lines are cut there and joined
    per column. A row whose lines do not keep to those columns (a cell spanning two) makes the
    whole table stay as it is.
    """
    border = lines[top].rstrip()
    indent = len(border) - len(border.lstrip())
    cuts = [n for n, ch in enumerate(border) if ch == "+"]
    header: list[str] | None = None
    rows: list[list[str]] = []
    cells: list[list[str]] = [[] for _ in cuts[1:]]
    i = top + 1
    while i < len(lines):
        line = lines[i].rstrip()
        boundary = _GRID_BORDER.match(line) or _GRID_RULE.match(line)
        if boundary or not line.strip():
            if not boundary or len(line) != len(border):
                return top, []  # text after a row with no closing border, or a border that moved
            row = [" ".join(" ".join(part).split()) for part in cells]
            if _GRID_RULE.match(line):
                if header is not None or rows:
                    return top, []
                header = row
            else:
                rows.append(row)
            cells = [[] for _ in cuts[1:]]
            i += 1
            if i == len(lines) or not lines[i].startswith(" " * indent + "|"):
                break
            continue
        if len(line) != len(border) or any(line[n] != "|" for n in cuts):
            return top, []
        for n, (left, right) in enumerate(pairwise(cuts)):
            cells[n].append(line[left + 1 : right].strip())
        i += 1
    if header is None or not rows or any(cells):  # no header, no rows, or a row left open at the end
        return top, []
    return i, [_record(header, row) for row in rows]


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


def named_row(text: str, asked: str, besides: str = "") -> int | None:
    """Where the first row of ``text`` that ``asked`` names starts (as :func:`tables_as_records`
    writes rows), or None.

    A row is named when its first cell, what the row is about, occurs in ``asked`` as words in
    the same order: "What is the usable capacity of KESTREL-archive?" names the row "Limit:
    Usable capacity; Value: 640 TiB." A first cell without a word of four characters (or an
    identifier such as "Sev1") names nothing; a one-word cell names its row only as an
    identifier or a name (capitalised in ``asked``: "Team Cormorant", not "how many nodes").
    Neither does a first cell that ``besides`` names too:
    a document's title names the document, and its revision history's row "Version: ACP-7"
    does not say which of its parts answers.
    """
    words = _words(asked)
    ignored = _words(besides)
    for match in _RECORD_START.finditer(text):
        cell = _words(match.group(2))
        if not any(len(w) >= 4 or _IDENTIFIER.search(w) for w in cell):
            continue
        if _holds(ignored, cell) or not _holds(words, cell):
            continue
        if len(cell) == 1 and not _IDENTIFIER.search(cell[0]) and not _capitalised_in(match.group(2).strip(), asked):
            continue  # one common word ("Nodes") is too vague to name a row; a name ("Cormorant") is not
        return match.start(1)
    return None


def _capitalised_in(word: str, text: str) -> bool:
    """Whether ``word`` occurs in ``text`` capitalised, after its first word (so, as a name)."""
    return word[:1].isupper() and re.search(rf"(?<=\S\s)\b{re.escape(word)}\b", text) is not None


def _words(text: str) -> list[str]:
    """Lower-case words, a plural's "s" dropped ("Query timeouts" and "query timeout" match)."""
    return [
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in _TEXT_WORD.findall(text.lower())
    ]


def _holds(words: list[str], run: list[str]) -> bool:
    """Whether ``run`` occurs in ``words`` as consecutive words."""
    n = len(run)
    return n > 0 and any(words[i : i + n] == run for i in range(len(words) - n + 1))


def is_record(sentence: str) -> bool:
    """Whether ``sentence`` reads as a table row rewritten by :func:`tables_as_records`
    ("Team: Sandpiper; On-call lead: Dorotea Quayle.")."""
    return _RECORD.fullmatch(sentence) is not None


def holds_records(text: str) -> bool:
    """Whether ``text`` (a passage) holds a table row rewritten by :func:`tables_as_records`."""
    return _RECORD_START.search(text) is not None


def named_first(
    ranked: list[tuple[int, float]], source_of: Callable[[int], str], named: dict[int, int]
) -> list[tuple[int, float]]:
    """``ranked`` with each source's passages reordered, those in ``named`` first (in rank order),
    in the places that source's passages held: other sources keep their places."""
    by_source: dict[str, list[tuple[int, float]]] = {}
    for item in ranked:
        by_source.setdefault(source_of(item[0]), []).append(item)
    reordered = {
        source: iter(sorted(items, key=lambda item: item[0] not in named)) for source, items in by_source.items()
    }
    return [next(reordered[source_of(rowid)]) for rowid, _ in ranked]

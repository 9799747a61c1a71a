"""Sentence-window snippets: the part of a passage a model is shown for one query.

A passage is split into sentences; each sentence is scored by the query's words it contains,
a word weighing more the fewer of the passage's sentences contain it, and the snippet is the
best sentence grown by whole neighbouring sentences (the better-matching side first) up to a
character budget. A fixed window around the first query word, as before, often ended right
before the sentence that answered the question; the answer usually sits in the sentence that
matches most words.

A table row is different: the snippet starts at the row and only reads on. The small model
answers from the first row it is shown: "Who is Sandpiper's on-call lead?", shown Lanternfish's
row above Sandpiper's, was answered with Lanternfish's. Prose keeps the sentences before the
best one, which often say what it is about ("A dict comprehension …" before "… in the order
they are produced"); starting prose at the best sentence too lost three Python questions.
"""

from __future__ import annotations

import math
import re

from sentient.tools.tables import is_record

SNIPPET_CHARS = 700
_ELLIPSIS = "…"
# A sentence ends at . ! ? or : followed by space and something that can start a sentence;
# "e.g. foo" or "os.path" stay whole because a lower-case word or no space follows.
_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+(?=[A-Z0-9\"'(\[`*>_-])")
_ENDS_SENTENCE = re.compile(r"[.!?][\"')\]`*]*$")


def sentences(text: str) -> list[str]:
    """Split whitespace-collapsed text into sentences (pieces longer than a snippet are cut at spaces)."""
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        # Code listings and tables have no sentence ends; cut them so one piece cannot fill a snippet.
        while len(sentence) > SNIPPET_CHARS // 2:
            cut = sentence.rfind(" ", 0, SNIPPET_CHARS // 2)
            cut = cut if cut > 0 else SNIPPET_CHARS // 2
            pieces.append(sentence[:cut])
            sentence = sentence[cut:].lstrip()
        if sentence:
            pieces.append(sentence)
    return pieces


def word_patterns(tokens: list[str]) -> list[re.Pattern[str]]:
    """One pattern per query word, matching it or its stem at a word start."""
    # A prefix stands in for the porter stem the index uses ('scheduling' finds 'schedule').
    return [re.compile(rf"\b{re.escape(t[: max(4, len(t) - 3)])}", re.IGNORECASE) for t in tokens]


def best_window(body: str, tokens: list[str], budget: int = SNIPPET_CHARS, *, row: int | None = None) -> str:
    """Cut `body` to at most `budget` characters around its best-matching sentences, or from
    the table row that starts at offset `row` (one the query names, see
    :func:`~sentient.tools.tables.named_row`).

    A body within the budget is returned whole. Ellipses mark where text was left out.
    """
    if len(body) <= budget:
        return body
    parts = sentences(body)
    scores = _scores(parts, tokens)
    # Ties: the earliest sentence.
    best = max(range(len(parts)), key=lambda i: (scores[i], -i)) if row is None else _piece_at(parts, row)
    room = budget - 2 * len(_ELLIPSIS)
    # A table record ("Team: Sandpiper; On-call lead: Dorotea Quayle.") is cut at its colons, and
    # the piece that matches may follow the value asked for: the snippet starts where it starts.
    start, end = _sentence_span(parts, best)
    record = is_record(" ".join(parts[start : end + 1]))
    first, last = (start if record and _length(parts, start, best) <= room else best), best
    used = _length(parts, first, last)
    while True:
        left = first - 1 if first > 0 and used + 1 + len(parts[first - 1]) <= room else None
        right = last + 1 if last + 1 < len(parts) and used + 1 + len(parts[last + 1]) <= room else None
        # Grow toward the better-matching neighbour; on a tie, read on (answers follow their lead-in).
        # From a record, only read on: a small model answers from the first row it is shown.
        if right is not None and (left is None or record or scores[right] >= scores[left]):
            last, used = right, used + 1 + len(parts[right])
        elif left is not None and not record:
            first, used = left, used + 1 + len(parts[left])
        else:
            break
    text = " ".join(parts[first : last + 1])
    return (_ELLIPSIS if first else "") + text + (_ELLIPSIS if last < len(parts) - 1 else "")


def joined(window: str, other: str, words: list[str]) -> str:
    """``window`` followed by the sentences of ``other``, another window of the same passage,
    that hold one of ``words`` that ``window`` lacks: one snippet of what two queries found in
    one passage, without the second window's sentences that only repeat what the first shows."""
    missing = [pattern for pattern in word_patterns(words) if not pattern.search(window)]
    shown = set(sentences(window.strip(_ELLIPSIS)))
    extra = [
        piece
        for piece in sentences(other.strip(_ELLIPSIS))
        if piece not in shown and any(pattern.search(piece) for pattern in missing)
    ]
    if not extra:
        return window
    return f"{window.removesuffix(_ELLIPSIS)}{_ELLIPSIS} {' '.join(extra)}{_ELLIPSIS}"


def _piece_at(parts: list[str], offset: int) -> int:
    """The index of the piece that holds character ``offset`` of the whitespace-collapsed text
    that :func:`sentences` cut into ``parts``."""
    end = -1
    for i, part in enumerate(parts):
        end += len(part) + 1
        if offset < end:
            return i
    return len(parts) - 1


def _length(parts: list[str], first: int, last: int) -> int:
    """The length of pieces ``first`` to ``last`` joined by spaces."""
    return sum(map(len, parts[first : last + 1])) + last - first


def _sentence_span(parts: list[str], i: int) -> tuple[int, int]:
    """The first and last index of the pieces of the sentence that piece ``i`` belongs to
    (:func:`sentences` also cuts at colons)."""
    first = last = i
    while first > 0 and not _ENDS_SENTENCE.search(parts[first - 1]):
        first -= 1
    while last + 1 < len(parts) and not _ENDS_SENTENCE.search(parts[last]):
        last += 1
    return first, last


def _scores(parts: list[str], tokens: list[str]) -> list[float]:
    patterns = word_patterns(tokens)
    counts = [[len(p.findall(part)) for p in patterns] for part in parts]
    weights = _rarity(counts)
    return [_score(row, weights) for row in counts]


def _rarity(counts: list[list[int]]) -> list[float]:
    """Each query word's weight in this passage: higher the fewer of its sentences contain it.

    In a table of teams, "team" and "lead" are in every row and "Cormorant" in one: the row that
    names what was asked about must outscore the introduction that repeats the common words.
    """
    words = len(counts[0]) if counts else 0
    return [math.log(1 + len(counts) / (1 + sum(1 for row in counts if row[w]))) for w in range(words)]


def _score(counts: list[int], weights: list[float]) -> float:
    """The weights of the query words found, plus a little for repeats (a sentence about the word)."""
    return sum(weight for count, weight in zip(counts, weights, strict=True) if count) + 0.1 * min(sum(counts), 5)

"""KnowledgeStore: what the run has learned so far (SQLite), and which of it relates to a goal."""

from __future__ import annotations

import math
import re
import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_WORD = re.compile(r"[A-Za-z0-9_]{3,}")
_STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "are",
        "was",
        "were",
        "what",
        "which",
        "who",
        "how",
        "why",
        "when",
        "where",
        "about",
        "its",
        "their",
        "them",
        "they",
        "than",
        "then",
        "there",
        "these",
        "those",
        "has",
        "have",
        "had",
        "not",
        "but",
        "can",
        "will",
        "would",
        "should",
    ]
)


@dataclass(frozen=True)
class KnowledgeEntry:
    task_id: str
    goal: str
    result: str
    sources: tuple[str, ...]
    score: float = 0.0


class KnowledgeStore:
    """Node goals, results and sources of one project; :meth:`related` picks what a goal shares words with."""

    def __init__(self, db_path: Path | str = ":memory:") -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(db_path), check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS entries ("
            "  id INTEGER PRIMARY KEY, task_id TEXT UNIQUE NOT NULL, goal TEXT, result TEXT, sources TEXT)"
        )

    def add(self, task_id: str, goal: str, result: str, sources: list[str] | tuple[str, ...] = ()) -> None:
        """Record a finished node (replacing an earlier entry for the same task)."""
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO entries (task_id, goal, result, sources) VALUES (?, ?, ?, ?)",
                (task_id, goal, result, "\n".join(sources)),
            )

    def related(self, query: str, among: set[str] | frozenset[str], limit: int = 3) -> list[KnowledgeEntry]:
        """The entries of the tasks ``among`` that share the most rare words with ``query``.

        The answer depends only on those tasks' entries, never on what else the store holds at
        that moment. The context builder offers knowledge this way so an agent sees the same
        context on every run (and the response cache can answer it), however the parallel work
        before it happened to interleave.
        """
        if limit <= 0 or not among:
            return []
        wanted = sorted(among)
        with self._lock:
            rows = self._db.execute(
                f"SELECT task_id, goal, result, sources FROM entries WHERE task_id IN ({','.join('?' * len(wanted))})",
                wanted,
            ).fetchall()
        query_terms = _terms(query)
        entry_terms = [_terms(f"{r[1]} {r[2]}") & query_terms for r in rows]
        freq = Counter(t for terms in entry_terms for t in terms)
        scored = []
        for row, terms in zip(rows, entry_terms, strict=True):
            score = sum(math.log(1 + len(rows) / freq[t]) for t in terms)
            if score > 0:
                scored.append((-score, row[0], row))
        scored.sort()
        return [
            KnowledgeEntry(
                task_id=r[0], goal=r[1], result=r[2], sources=tuple(filter(None, r[3].split("\n"))), score=-s
            )
            for s, _, r in scored[:limit]
        ]

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT COUNT(*) FROM entries").fetchone()
        return int(count)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _terms(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOPWORDS}

"""KnowledgeStore: what the run has learned so far, full-text searchable (SQLite FTS5)."""

from __future__ import annotations

import re
import sqlite3
import threading
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
    """Node goals, results and sources of one project, searchable by relevance."""

    def __init__(self, db_path: Path | str = ":memory:") -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(db_path), check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS knowledge USING fts5("
            "task_id UNINDEXED, goal, result, sources UNINDEXED, tokenize='porter unicode61')"
        )

    def add(self, task_id: str, goal: str, result: str, sources: list[str] | tuple[str, ...] = ()) -> None:
        """Record a finished node (replacing an earlier entry for the same task)."""
        with self._lock, self._db:
            self._db.execute("DELETE FROM knowledge WHERE task_id = ?", (task_id,))
            self._db.execute(
                "INSERT INTO knowledge (task_id, goal, result, sources) VALUES (?, ?, ?, ?)",
                (task_id, goal, result, "\n".join(sources)),
            )

    def search(
        self, query: str, limit: int = 3, exclude: set[str] | frozenset[str] = frozenset()
    ) -> list[KnowledgeEntry]:
        """Most relevant entries for ``query``, skipping the task ids in ``exclude``."""
        terms = [t for t in dict.fromkeys(w.lower() for w in _WORD.findall(query)) if t not in _STOPWORDS]
        if not terms or limit <= 0:
            return []
        match = " OR ".join(f'"{t}"' for t in terms[:24])
        with self._lock:
            rows = self._db.execute(
                "SELECT task_id, goal, result, sources, bm25(knowledge) FROM knowledge "
                "WHERE knowledge MATCH ? ORDER BY bm25(knowledge) LIMIT ?",
                (match, limit + len(exclude)),
            ).fetchall()
        entries = [
            KnowledgeEntry(
                task_id=r[0], goal=r[1], result=r[2], sources=tuple(filter(None, r[3].split("\n"))), score=-r[4]
            )
            for r in rows
            if r[0] not in exclude
        ]
        return entries[:limit]

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM knowledge").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

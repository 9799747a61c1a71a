"""KnowledgeStore: what the run has learned so far, full-text searchable (SQLite FTS5)."""

from __future__ import annotations

import math
import re
import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_WORD = re.compile(r"[A-Za-z0-9_]{3,}")
_MIN_COMMON = 50  # below this many entries every word counts
_COMMON_FRACTION = 20  # a word in more than 1/20 of the entries is too common to rank by
_MAX_TERMS = 8
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
    """Node goals, results and sources of one project, searchable by relevance.

    Search uses only the query's discriminative words: a word found in most entries (the
    project's topic, say) tells nothing about relevance and would make every query rank the
    whole store. Document frequencies are kept in memory, so a search costs the size of the
    rare words' posting lists, not the size of the store.
    """

    def __init__(self, db_path: Path | str = ":memory:") -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(db_path), check_same_thread=False)
        self._db.executescript(
            "CREATE TABLE IF NOT EXISTS entries ("
            "  id INTEGER PRIMARY KEY, task_id TEXT UNIQUE NOT NULL, goal TEXT, result TEXT, sources TEXT);"
            "CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5("
            "  goal, result, content='entries', content_rowid='id', tokenize='porter unicode61');"
        )
        self._doc_freq: Counter[str] = Counter()
        self._size = 0
        for goal, result in self._db.execute("SELECT goal, result FROM entries"):
            self._doc_freq.update(_terms(f"{goal} {result}"))
            self._size += 1

    def add(self, task_id: str, goal: str, result: str, sources: list[str] | tuple[str, ...] = ()) -> None:
        """Record a finished node (replacing an earlier entry for the same task)."""
        with self._lock, self._db:
            old = self._db.execute("SELECT id, goal, result FROM entries WHERE task_id = ?", (task_id,)).fetchone()
            if old is not None:
                self._db.execute(
                    "INSERT INTO entries_fts (entries_fts, rowid, goal, result) VALUES ('delete', ?, ?, ?)", old
                )
                self._db.execute("DELETE FROM entries WHERE id = ?", (old[0],))
                self._doc_freq.subtract(_terms(f"{old[1]} {old[2]}"))
                self._size -= 1
            row_id = self._db.execute(
                "INSERT INTO entries (task_id, goal, result, sources) VALUES (?, ?, ?, ?)",
                (task_id, goal, result, "\n".join(sources)),
            ).lastrowid
            self._db.execute("INSERT INTO entries_fts (rowid, goal, result) VALUES (?, ?, ?)", (row_id, goal, result))
            self._doc_freq.update(_terms(f"{goal} {result}"))
            self._size += 1

    def search(
        self, query: str, limit: int = 3, exclude: set[str] | frozenset[str] = frozenset()
    ) -> list[KnowledgeEntry]:
        """Most relevant entries for ``query``, skipping the task ids in ``exclude``."""
        if limit <= 0:
            return []
        with self._lock:
            common = max(_MIN_COMMON, self._size // _COMMON_FRACTION)
            terms = sorted((t for t in _terms(query) if self._doc_freq[t] <= common), key=self._doc_freq.__getitem__)
            if not terms:
                return []
            match = " OR ".join(f'"{t}"' for t in terms[:_MAX_TERMS])
            rows = self._db.execute(
                "SELECT e.task_id, e.goal, e.result, e.sources, bm25(entries_fts) AS score "
                "FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid "
                "WHERE entries_fts MATCH ? ORDER BY score LIMIT ?",
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

    def related(self, query: str, among: set[str] | frozenset[str], limit: int = 3) -> list[KnowledgeEntry]:
        """The entries of the tasks ``among`` that share the most rare words with ``query``.

        Unlike :meth:`search`, the answer depends only on those tasks' entries, never on what
        else the store holds at that moment. The context builder offers knowledge this way so
        an agent sees the same context on every run (and the response cache can answer it),
        however the parallel work before it happened to interleave.
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
        return self._size

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _terms(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOPWORDS}

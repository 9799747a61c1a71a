"""KnowledgeStore: what a project's finished tasks learned, and which of it relates to a goal.

The entries live in the project store's ``knowledge`` table, one per DONE task: the one record
of a project's findings, read by the context builder while the project runs and searched by
users afterwards. A run keeps it in step through its events (the store is a subscriber), so an
entry is there as soon as its task is DONE, and a task that is removed by a replan or redone by
a resumed run loses its entry.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sentient.events import Event, NodesRemoved, NodeStatusChanged, RunStarted
from sentient.graph.status import TaskStatus
from sentient.store import ProjectStore

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
    """The findings of one project in its project store; :meth:`related` picks what a goal shares words with.

    Subscribe it to a run's events to keep it in step with the run (see the module docstring).
    """

    def __init__(self, store: ProjectStore, project_id: str) -> None:
        self._store = store
        self._project_id = project_id

    def __call__(self, event: Event) -> None:
        if isinstance(event, NodeStatusChanged):
            node = event.node
            if node.status is TaskStatus.DONE and node.result is not None:
                self.add(node.task_id, node.goal, node.result, [s.ref for s in node.sources])
            elif event.old is TaskStatus.DONE:  # a resumed run redoes it
                self.forget([node.task_id])
        elif isinstance(event, NodesRemoved):
            self.forget(event.task_ids)
        elif isinstance(event, RunStarted):
            # A process killed between storing an entry and its task's DONE status left it behind.
            self.forget([n.task_id for n in event.nodes if n.status is not TaskStatus.DONE])

    def add(self, task_id: str, goal: str, result: str, sources: Sequence[str] = ()) -> None:
        """Record a finished task (replacing an earlier entry for it); stored before this returns."""
        self._store.add_knowledge(self._project_id, task_id, goal, result, sources)

    def forget(self, task_ids: Collection[str]) -> None:
        """Drop the entries of ``task_ids``."""
        if task_ids:
            self._store.forget_knowledge(self._project_id, task_ids)

    def entries(self) -> list[KnowledgeEntry]:
        """Every entry, in the order the tasks finished."""
        return [_entry(row) for row in self._store.knowledge(self._project_id)]

    def related(self, query: str, among: set[str] | frozenset[str], limit: int = 3) -> list[KnowledgeEntry]:
        """The entries of the tasks ``among`` that share the most rare words with ``query``.

        The answer depends only on those tasks' entries, never on what else the store holds at
        that moment. The context builder offers knowledge this way so an agent sees the same
        context on every run (and the response cache can answer it), however the parallel work
        before it happened to interleave.
        """
        if limit <= 0 or not among:
            return []
        return _ranked(query, self._store.knowledge(self._project_id, among), limit)

    def search(self, query: str, limit: int = 10) -> list[KnowledgeEntry]:
        """The entries of the whole project that share the most rare words with ``query``."""
        if limit <= 0:
            return []
        return _ranked(query, self._store.knowledge(self._project_id), limit)

    def __len__(self) -> int:
        return len(self._store.knowledge(self._project_id))


def _ranked(query: str, rows: list[dict[str, Any]], limit: int) -> list[KnowledgeEntry]:
    """``rows`` scored by the rare words they share with ``query`` (summed IDF over ``rows``), best first."""
    query_terms = _terms(query)
    entry_terms = [_terms(f"{r['goal']} {r['result']}") & query_terms for r in rows]
    freq = Counter(t for terms in entry_terms for t in terms)
    scored = []
    for row, terms in zip(rows, entry_terms, strict=True):
        score = sum(math.log(1 + len(rows) / freq[t]) for t in terms)
        if score > 0:
            scored.append((-score, row["task_id"], row))
    scored.sort(key=lambda item: item[:2])
    return [_entry(row, -score) for score, _, row in scored[:limit]]


def _entry(row: dict[str, Any], score: float = 0.0) -> KnowledgeEntry:
    return KnowledgeEntry(row["task_id"], row["goal"], row["result"], tuple(row["sources"]), score)


def _terms(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOPWORDS}

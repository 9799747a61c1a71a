"""KnowledgeStore: what a project's finished tasks learned, and which of it relates to a goal.

The entries live in the project store's ``knowledge`` table, one per DONE task: the one record
of a project's findings, read by the context builder while the project runs and searched by
users afterwards. The run's :class:`~sentient.store.writer.StoreWriter` stores each entry in the
transaction that stores its task's DONE status.

Subscribed to a run's events, a KnowledgeStore keeps the project's entries in memory: loaded
when the run starts, changed by each event, so an entry is known as soon as its task is DONE,
and a task that is removed by a replan or redone by a resumed run loses its entry. The context
builder reads them on the engine's loop, which thus never waits for the database. Without a
project store (a run that persists nothing) the entries are only in memory.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sentient.context.wording import STOPWORDS, normalize
from sentient.events import Event, NodesRemoved, NodeStatusChanged, RunStarted
from sentient.graph.status import TaskStatus
from sentient.store import ProjectStore


@dataclass(frozen=True)
class KnowledgeEntry:
    task_id: str
    goal: str
    result: str
    sources: tuple[str, ...]
    score: float = 0.0


class KnowledgeStore:
    """The findings of one project; :meth:`related` picks what a goal shares words with.

    Read from ``store`` until it is subscribed to a run's events, from memory after (see the
    module docstring); ``store`` None: in memory only.
    """

    def __init__(self, store: ProjectStore | None, project_id: str) -> None:
        self._store = store
        self._project_id = project_id
        self._live: dict[str, dict[str, Any]] | None = None  # by task, in the order they finished

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._start(event)
            return
        live = self._load()
        if isinstance(event, NodeStatusChanged):
            node = event.node
            if event.learned:
                live.pop(node.task_id, None)  # a task finished again moves to the end
                sources = [s.ref for s in node.sources]
                live[node.task_id] = {
                    "task_id": node.task_id,
                    "goal": node.goal,
                    "result": node.result,
                    "sources": sources,
                }
            elif event.old is TaskStatus.DONE:  # a resumed run redoes it
                live.pop(node.task_id, None)
        elif isinstance(event, NodesRemoved):
            for task_id in event.task_ids:
                live.pop(task_id, None)

    def _start(self, event: RunStarted) -> None:
        """Take the stored entries of the tasks that are DONE as the run starts; drop the others.

        A task that is no longer DONE (a resumed run redoes it) must not be offered. An older
        version of Sentient stored an entry before its task's DONE status, and a process killed
        between the two left one behind.
        """
        undone = [n.task_id for n in event.nodes if n.status is not TaskStatus.DONE]
        live = self._load()
        stale = [task_id for task_id in undone if task_id in live]
        if stale and self._store is not None:
            self._store.forget_knowledge(self._project_id, stale)
        for task_id in stale:
            del live[task_id]

    def _load(self) -> dict[str, dict[str, Any]]:
        """Keep the project's entries in memory from now on (the run's events update them)."""
        if self._live is None:
            rows = self._store.knowledge(self._project_id) if self._store is not None else []
            self._live = {row["task_id"]: row for row in rows}
        return self._live

    def _rows(self, among: Collection[str] | None = None) -> list[dict[str, Any]]:
        """The entries (of the tasks ``among``), in the order the tasks finished."""
        if self._live is None and self._store is not None:
            return self._store.knowledge(self._project_id, among)
        return [row for task_id, row in self._load().items() if among is None or task_id in among]

    def entries(self) -> list[KnowledgeEntry]:
        """Every entry, in the order the tasks finished."""
        return [_entry(row) for row in self._rows()]

    def related(self, query: str, among: set[str] | frozenset[str], limit: int = 3) -> list[KnowledgeEntry]:
        """The entries of the tasks ``among`` that share the most rare words with ``query``.

        The answer depends only on those tasks' entries, never on what else the store holds at
        that moment. The context builder offers knowledge this way so an agent sees the same
        context on every run (and the response cache can answer it), however the parallel work
        before it happened to interleave.
        """
        if limit <= 0 or not among:
            return []
        return _ranked(query, self._rows(among), limit)

    def search(self, query: str, limit: int = 10) -> list[KnowledgeEntry]:
        """The entries of the whole project that share the most rare words with ``query``."""
        if limit <= 0:
            return []
        return _ranked(query, self._rows(), limit)

    def __len__(self) -> int:
        return len(self._rows())


def shared_word_scores(query: str, texts: Sequence[str]) -> list[float]:
    """How much each of ``texts`` shares with ``query``: the IDF (over ``texts``) of the rare words
    they share, summed; 0 for a text that shares none."""
    query_terms = _terms(query)
    text_terms = [_terms(text) & query_terms for text in texts]
    freq = Counter(t for terms in text_terms for t in terms)
    return [sum(math.log(1 + len(texts) / freq[t]) for t in terms) for terms in text_terms]


def _ranked(query: str, rows: list[dict[str, Any]], limit: int) -> list[KnowledgeEntry]:
    """``rows`` scored by the rare words they share with ``query`` (:func:`shared_word_scores`), best first."""
    scores = shared_word_scores(query, [f"{r['goal']} {r['result']}" for r in rows])
    scored = []
    for row, score in zip(rows, scores, strict=True):
        if score > 0:
            scored.append((-score, row["task_id"], row))
    scored.sort(key=lambda item: item[:2])
    return [_entry(row, -score) for score, _, row in scored[:limit]]


def _entry(row: dict[str, Any], score: float = 0.0) -> KnowledgeEntry:
    return KnowledgeEntry(row["task_id"], row["goal"], row["result"], tuple(row["sources"]), score)


def _terms(text: str) -> set[str]:
    return {w for w in normalize(text).split() if len(w) > 2 and w not in STOPWORDS}

"""PriorKnowledge: what the project a follow-up question follows holds already.

A follow-up question is researched as a run of its own (:mod:`sentient.projects.followups`),
seeded with its parent project's finished work: the findings of the parent's DONE tasks, which its
agents read as context, and the passages those tasks read, which its executors may cite before
anything is searched again (:class:`~sentient.agents.passages.Passages`). Both are fixed for the
run, so an agent sees the same context on every run of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from sentient.context.citations import renumber
from sentient.context.knowledge import shared_word_scores
from sentient.graph.node import Source
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph

T = TypeVar("T")


@dataclass(frozen=True)
class Finding:
    """A finished task of the parent project: its goal and result (citation markers removed)."""

    task_id: str
    goal: str
    result: str


class PriorKnowledge:
    """The findings and passages of the project ``project_id``, ranked by the words they share with a query."""

    def __init__(self, project_id: str, findings: Sequence[Finding], passages: Sequence[Source]) -> None:
        self.project_id = project_id
        self._findings = list(findings)
        self._passages = list(passages)

    @classmethod
    def of(cls, project_id: str, graph: TaskGraph) -> PriorKnowledge:
        """What the stored ``graph`` of ``project_id`` learned: its DONE tasks' results and the
        passages they cite (each once, its verdict cleared: it is judged again for a new answer)."""
        findings: list[Finding] = []
        passages: dict[str, Source] = {}
        for node in graph:
            if node.status is not TaskStatus.DONE or not node.result:
                continue
            findings.append(Finding(node.task_id, node.goal, renumber(node.result, {})))
            for source in node.sources:
                if source.snippet:
                    passages.setdefault(source.ref, source.model_copy(update={"verified": None}))
        return cls(project_id, findings, list(passages.values()))

    def findings(self, query: str, limit: int) -> list[Finding]:
        """At most ``limit`` findings that share words with ``query``, best first."""
        scores = shared_word_scores(query, [f"{f.goal} {f.result}" for f in self._findings])
        return _best(self._findings, scores, limit)

    def passages(self, query: str, limit: int) -> list[Source]:
        """At most ``limit`` passages that share words with ``query``, best first."""
        scores = shared_word_scores(query, [f"{s.title} {s.snippet}" for s in self._passages])
        return _best(self._passages, scores, limit)

    def __len__(self) -> int:
        return len(self._findings)


def _best(items: Sequence[T], scores: Sequence[float], limit: int) -> list[T]:
    """The ``items`` that scored above 0, best first (ties in their order), at most ``limit``."""
    ranked = sorted((-score, i) for i, score in enumerate(scores) if score > 0)
    return [items[i] for _, i in ranked[:limit]]

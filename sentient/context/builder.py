"""ContextBuilder: what each agent call sees, within a token budget.

Always included: the overall goal, the ancestor chain, and the user's instructions for the node
or an ancestor (given when it was re-run, :mod:`sentient.engine.resume`). Then, by priority: the results the
node depends on (dependencies, or children when aggregating), the sources it may cite, its
place in the parent's plan, related knowledge, and in a follow-up question's run the related
findings of the project it follows (:mod:`sentient.context.prior`). Over budget, knowledge entries are dropped
first (least relevant first), then long results are shortened; every cut is recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sentient.context.citations import SourceList, renumber
from sentient.context.grounding import strip_markers
from sentient.context.knowledge import KnowledgeStore
from sentient.context.prior import PriorKnowledge
from sentient.graph.node import Source, TaskNode
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph

_CHARS_PER_TOKEN = 4
_MIN_RESULT_CHARS = 400
_QUERY_RESULT_CHARS = 300  # of each dependency's result, in a search query
_QUERY_CHARS = 1_500
_MIN_GOAL_CHARS = 2000  # a goal up to this long is never cut, whatever the budget


def estimate_tokens(text: str) -> int:
    return len(text) // _CHARS_PER_TOKEN + 1


@dataclass
class Section:
    """One block of context. ``required`` blocks are never cut; ``droppable`` ones go first."""

    title: str
    text: str
    required: bool = False
    droppable: bool = False


@dataclass
class AgentContext:
    """The context of one agent call: rendered sections plus the sources it may cite as [n]."""

    sections: list[Section]
    sources: list[Source] = field(default_factory=list)
    cut: list[str] = field(default_factory=list)

    def render(self) -> str:
        blocks = [f"## {s.title}\n{s.text}" for s in self.sections if s.text]
        if self.sources:
            # The path stays out of the prompt: small models copy it into the answer; the report lists it.
            listed = "\n".join(f"[{i}] {s.title or s.ref}: {s.snippet}".rstrip() for i, s in enumerate(self.sources, 1))
            blocks.append(f"## Sources you may cite as [n]\n{listed}")
        return "\n\n".join(blocks)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.render())

    def to_trace(self) -> dict[str, Any]:
        return {
            "sections": [s.title for s in self.sections],
            "sources": [s.ref for s in self.sources],
            "tokens": self.tokens,
            "cut": list(self.cut),
        }


class ContextBuilder:
    """Builds :class:`AgentContext` for each role from the graph and the knowledge store."""

    def __init__(
        self,
        graph: TaskGraph,
        knowledge: KnowledgeStore,
        token_budget: int,
        knowledge_results: int,
        instructions: Mapping[str, str] | None = None,
        prior: PriorKnowledge | None = None,
    ) -> None:
        self._graph = graph
        self._knowledge = knowledge
        self._budget = token_budget
        self._knowledge_results = knowledge_results
        self._instructions = dict(instructions or {})  # task id -> what the user asked of it
        self.prior = prior  # a follow-up question's: what the project it follows holds

    # -- per role ----------------------------------------------------------------------------

    def for_planning(self, node: TaskNode) -> AgentContext:
        sections = self._frame(node)
        sections += self._dependency_sections(node, SourceList())
        sections += self._knowledge_sections(node)
        sections += self._prior_sections(node)
        return self._fit(AgentContext(sections))

    def for_atomizing(self, node: TaskNode, goal: str, plan_goals: Sequence[str]) -> AgentContext:
        sections = self._frame(node)
        plan = "\n".join(f"{i}. {g}" for i, g in enumerate(plan_goals))
        sections.append(Section("The plan this subtask belongs to", plan))
        return self._fit(AgentContext(sections))

    def for_execution(self, node: TaskNode, found: Sequence[Source]) -> AgentContext:
        sources = SourceList()
        sections = self._frame(node)
        sections += self._dependency_sections(node, sources)
        for source in found:
            sources.add(source)
        sections += self._knowledge_sections(node)
        sections += self._prior_sections(node)
        return self._fit(AgentContext(sections, sources=sources.sources))

    def for_verifying(self, node: TaskNode, passages: Sequence[Source]) -> AgentContext:
        """The passages the verifier judges an answer of ``node`` against, after what the results
        it depends on found (a second hop's passage states its answer about what the first
        found: "Dispatch is led by X" answers "who leads the team that owns S" once the first
        found that Dispatch owns S)."""
        found = [Section(f"Found before: {dep.goal}", strip_markers(dep.result or "")) for dep in self._found(node)]
        return AgentContext(found, sources=list(passages))

    def for_aggregation(self, node: TaskNode) -> AgentContext:
        """The subtasks' results, in plan order, with the sources they cite."""
        sources = SourceList()
        sections = self._frame(node)
        for child in self._graph.children(node.task_id):
            done = f"Result of subtask {child.task_id}: {child.goal}"
            sections.append(_outcome(child, sources, done, f"Subtask {child.task_id} did not finish: {child.goal}"))
        return self._fit(AgentContext(sections, sources=sources.sources))

    def for_replanning(self, node: TaskNode, feedback: str) -> AgentContext:
        sources = SourceList()
        sections = self._frame(node)
        for child in self._graph.children(node.task_id):
            if child.status is TaskStatus.DONE and child.result:
                text = sources.adopt(child.result, child.sources)
                sections.append(Section(f"Already done (keep): {child.goal}", text))
            elif child.status is TaskStatus.FAILED:
                sections.append(Section(f"Failed: {child.goal}", child.error or "failed", required=True))
        sections.append(Section("Feedback to address", feedback, required=True))
        return self._fit(AgentContext(sections, sources=sources.sources))

    def search_query(self, node: TaskNode) -> str:
        """What a node's retrieval searches for: its task in the words of the question.

        A planner's paraphrase can drop what was asked, so the goals above the task come along,
        and the results it depends on, so that a second hop searches with what the first found.
        """
        parts = [node.goal, *(a.goal for a in reversed(self._graph.ancestors(node.task_id)))]
        parts += [renumber(dep.result or "", {})[:_QUERY_RESULT_CHARS] for dep in self._found(node)]
        return "\n".join(parts)[:_QUERY_CHARS]

    def _found(self, node: TaskNode) -> list[TaskNode]:
        """The results ``node`` depends on that finished with a text."""
        return [d for d in self._graph.dependencies(node.task_id) if d.status is TaskStatus.DONE and d.result]

    # -- building blocks ---------------------------------------------------------------------

    def _frame(self, node: TaskNode) -> list[Section]:
        ancestors = self._graph.ancestors(node.task_id)
        # A very long goal (a pasted document) would fill every prompt: it gets a share of the budget.
        limit = max(_MIN_GOAL_CHARS, self._budget * _CHARS_PER_TOKEN // 4)
        overall = _clip(ancestors[0].goal if ancestors else node.goal, limit)
        sections = [Section("Overall goal", overall, required=True)]
        if ancestors:
            chain = "\n".join(f"{'  ' * i}- {_clip(a.goal, min(limit, 500))}" for i, a in enumerate(ancestors))
            sections.append(Section("Where this task sits (from the overall goal down)", chain, required=True))
            parent = ancestors[-1]
            siblings = self._graph.children(parent.task_id)
            if len(siblings) > 1:
                plan = "\n".join(
                    f"{'->' if s.task_id == node.task_id else '  '} {s.task_id}: {s.goal}" for s in siblings
                )
                sections.append(Section("The parent's plan (-> marks this task)", plan))
        # Instructions given for an ancestor hold for the subtasks its new plan made too.
        for task in [*ancestors, node]:
            given = self._instructions.get(task.task_id)
            if given:
                whose = "this task" if task is node else f"{task.task_id}, which this task is part of"
                sections.append(Section(f"Instructions from the user for {whose}", given, required=True))
        return sections

    def _dependency_sections(self, node: TaskNode, sources: SourceList) -> list[Section]:
        return [
            _outcome(
                dep,
                sources,
                f"Result of {dep.task_id} (this task depends on it): {dep.goal}",
                f"Dependency {dep.task_id} did not finish: {dep.goal}",
            )
            for dep in self._graph.dependencies(node.task_id)
        ]

    def _knowledge_sections(self, node: TaskNode) -> list[Section]:
        if self._knowledge_results <= 0:
            return []
        entries = self._knowledge.related(node.goal, self._settled_before(node), limit=self._knowledge_results)
        return [Section(f"Related finding ({e.task_id}): {e.goal}", e.result, droppable=True) for e in entries]

    def _prior_sections(self, node: TaskNode) -> list[Section]:
        if self.prior is None or self._knowledge_results <= 0:
            return []
        found = self.prior.findings(node.goal, self._knowledge_results)
        return [
            Section(
                f"Finding of the project this question follows up ({f.task_id}): {f.goal}", f.result, droppable=True
            )
            for f in found
        ]

    def _settled_before(self, node: TaskNode) -> set[str]:
        """Tasks certain to have finished before ``node`` starts, whatever the timing: the work
        that the node's ancestors depend on, with all of its subtasks. The node's own
        dependencies are excluded (their results are in the context already)."""
        settled: set[str] = set()
        for task in [*self._graph.ancestors(node.task_id), node]:
            for dep in self._graph.dependencies(task.task_id):
                settled.update(n.task_id for n in self._graph.subtree(dep.task_id))
        return settled - set(node.depends_on)

    def _fit(self, context: AgentContext) -> AgentContext:
        """Drop or shorten sections until the context fits the token budget."""
        budget_chars = self._budget * _CHARS_PER_TOKEN
        for section in reversed([s for s in context.sections if s.droppable]):
            if len(context.render()) <= budget_chars:
                return context
            context.sections.remove(section)
            context.cut.append(f"dropped '{section.title}' ({estimate_tokens(section.text)} tokens)")
        excess = len(context.render()) - budget_chars
        if excess <= 0:
            return context
        cuttable = [s for s in context.sections if not s.required and len(s.text) > _MIN_RESULT_CHARS]
        cuttable.sort(key=lambda s: len(s.text), reverse=True)
        for section in cuttable:
            if excess <= 0:
                break
            keep = max(_MIN_RESULT_CHARS, len(section.text) - excess - 40)
            removed = len(section.text) - keep
            section.text = section.text[:keep].rstrip() + f" [... {removed} characters cut ...]"
            excess -= removed
            context.cut.append(f"shortened '{section.title}' by {removed} characters")
        if excess > 0:
            context.cut.append(f"still over budget by about {excess // _CHARS_PER_TOKEN} tokens")
        return context


def _clip(goal: str, limit: int) -> str:
    """``goal`` cut to ``limit`` characters, with a marker saying how much was cut."""
    if len(goal) <= limit:
        return goal
    return goal[:limit].rstrip() + f" [... {len(goal) - limit} characters of the goal cut ...]"


def _outcome(node: TaskNode, sources: SourceList, done_title: str, unfinished_title: str) -> Section:
    """A finished node's result (citations adopted into ``sources``), or why it did not finish."""
    if node.status is TaskStatus.DONE and node.result:
        return Section(done_title, sources.adopt(node.result, node.sources))
    return Section(unfinished_title, node.error or node.status.value.lower())

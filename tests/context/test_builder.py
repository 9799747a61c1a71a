"""ContextBuilder: what each agent call sees, on a real task graph and a real knowledge store."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest

from sentient.context.builder import AgentContext, ContextBuilder
from sentient.context.knowledge import KnowledgeStore
from sentient.graph.node import NodeType, Source, TaskNode, TaskType
from sentient.graph.plan import SubTask
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.store import ProjectStore

OVERALL = "Explain how Python lists and tuples differ"
A = Source(ref="/docs/list.md", title="Lists", snippet="Lists are mutable sequences.")
B = Source(ref="/docs/tuple.md", title="Tuples", snippet="Tuples are immutable sequences.")
C = Source(ref="/docs/hash.md", title="Hashing", snippet="Hashable objects never change.")


@dataclass
class Tree:
    """root -> root.0 (PLAN) -> root.0.0, root.0.1 (depends on root.0.0), root.0.2; and root.1."""

    graph: TaskGraph
    projects: ProjectStore

    @property
    def knowledge(self) -> KnowledgeStore:
        return KnowledgeStore(self.projects, "p-1")

    def node(self, task_id: str) -> TaskNode:
        return self.graph.get(task_id)

    def learn(self, task_id: str, goal: str, result: str) -> None:
        """Store what ``task_id`` learned, as a run's store writer does when it is DONE."""
        self.projects.add_knowledge("p-1", task_id, goal, result, [])

    def finish(self, task_id: str, result: str, sources: Sequence[Source] = ()) -> None:
        node = self.node(task_id)
        node.status = TaskStatus.DONE
        node.result = result
        node.sources = list(sources)

    def builder(self, token_budget: int = 3000, knowledge_results: int = 3) -> ContextBuilder:
        return ContextBuilder(self.graph, self.knowledge, token_budget, knowledge_results)


@pytest.fixture
def tree() -> Iterator[Tree]:
    graph = TaskGraph()
    graph.add_root(OVERALL, TaskType.WRITE, NodeType.PLAN)
    graph.add_children(
        "root",
        [
            SubTask(goal="Research the mutability of lists and tuples", task_type=TaskType.SEARCH),
            SubTask(goal="Write how tuples and lists change", task_type=TaskType.WRITE, depends_on_indices=[0]),
        ],
        [NodeType.PLAN, NodeType.EXECUTE],
    )
    graph.add_children(
        "root.0",
        [
            SubTask(goal="Find how lists change in place", task_type=TaskType.SEARCH),
            SubTask(goal="Find whether tuples can change", task_type=TaskType.SEARCH, depends_on_indices=[0]),
            SubTask(goal="Find which sequences are hashable", task_type=TaskType.SEARCH),
        ],
        [NodeType.EXECUTE] * 3,
    )
    with ProjectStore.in_memory() as projects:
        projects.create_project("p-1", OVERALL, "general_agent", {})
        yield Tree(graph, projects)


def titles(context: AgentContext) -> list[str]:
    return [s.title for s in context.sections]


def section(context: AgentContext, prefix: str) -> str:
    matches = [s.text for s in context.sections if s.title.startswith(prefix)]
    assert len(matches) == 1, f"expected one section starting {prefix!r} in {titles(context)}"
    return matches[0]


# -- the frame: overall goal and ancestors -------------------------------------------------------


def test_overall_goal_and_ancestor_chain_come_first(tree: Tree) -> None:
    context = tree.builder().for_planning(tree.node("root.0.1"))
    assert titles(context)[:2] == ["Overall goal", "Where this task sits (from the overall goal down)"]
    assert section(context, "Overall goal") == OVERALL
    chain = section(context, "Where this task sits")
    assert chain.index(OVERALL) < chain.index("Research the mutability of lists and tuples")
    plan = section(context, "The parent's plan")
    assert "-> root.0.1: Find whether tuples can change" in plan
    assert "   root.0.0: Find how lists change in place" in plan


def test_the_root_sees_its_own_goal_as_the_overall_goal(tree: Tree) -> None:
    context = tree.builder().for_planning(tree.node("root"))
    assert titles(context) == ["Overall goal"]
    assert context.render().startswith(f"## Overall goal\n{OVERALL}")


def test_overall_goal_and_ancestors_survive_a_tiny_budget(tree: Tree) -> None:
    tree.finish("root.0", "Lists change in place: append, extend and slice assignment. " * 40, [A])
    tree.learn("root.0.2", "Compare tuples and lists", "Tuples and lists both index from zero. " * 30)
    context = tree.builder(token_budget=10).for_execution(tree.node("root.1"), [B])
    rendered = context.render()
    assert OVERALL in rendered
    assert "lists and tuples differ" in section(context, "Where this task sits")
    assert not any(t.startswith("Related finding") for t in titles(context))
    assert any(c.startswith("dropped 'Related finding (root.0.2)") for c in context.cut)
    assert any(c.startswith("shortened 'Result of root.0") for c in context.cut)
    assert context.cut[-1].startswith("still over budget")


# -- dependencies and sources ---------------------------------------------------------------------


def test_dependency_results_are_included_with_citations_renumbered_into_the_context(tree: Tree) -> None:
    tree.finish("root.0.0", "Lists grow in place [2] and shrink [1]; invented [5].", [C, A])
    context = tree.builder().for_execution(tree.node("root.0.1"), [B, A])
    # Only the sources the result cites come along, numbered in the order it cites them.
    assert [s.ref for s in context.sources] == [A.ref, C.ref, B.ref]
    text = section(context, "Result of root.0.0 (this task depends on it)")
    assert text == "Lists grow in place [1] and shrink [2]; invented."
    rendered = context.render()
    assert "[2] Hashing: " in rendered
    assert "[3] Tuples: " in rendered
    assert "/docs/hash.md" not in rendered  # paths go to the report, not the prompt


def test_a_dependency_that_did_not_finish_is_reported_with_its_reason(tree: Tree) -> None:
    dep = tree.node("root.0.0")
    dep.status = TaskStatus.FAILED
    dep.error = "agent call timed out after 5s"
    context = tree.builder().for_execution(tree.node("root.0.1"), [])
    assert section(context, "Dependency root.0.0 did not finish") == "agent call timed out after 5s"
    assert context.sources == []


def test_knowledge_comes_from_settled_work_related_to_the_goal(tree: Tree) -> None:
    """root.1 depends on root.0, so root.0's subtasks have surely finished before it starts;
    its own dependency (root.0) is in the context already, and unrelated entries are left out."""
    for task_id in ("root", "root.0", "root.0.0", "root.0.1"):
        tree.learn(task_id, tree.node(task_id).goal, "Tuples cannot change; lists can change.")
    tree.learn("root.0.2", "Find which sequences are hashable", "Tuples can be dict keys; lists cannot.")
    tree.learn("root.0.0", "Describe garden soil", "Loam holds water for roots.")
    context = tree.builder().for_execution(tree.node("root.1"), [])
    related = [t for t in titles(context) if t.startswith("Related finding")]
    assert related == [
        "Related finding (root.0.1): Find whether tuples can change",
        "Related finding (root.0.2): Find which sequences are hashable",
    ]


def test_knowledge_from_work_that_may_still_be_running_is_not_offered(tree: Tree) -> None:
    """root.0.2 runs in parallel with root.0.1: offering its result would make the context
    depend on timing (and defeat the response cache on a re-run)."""
    tree.learn("root.0.2", "Find whether tuples can change", "Tuples can be dict keys; lists cannot.")
    context = tree.builder().for_execution(tree.node("root.0.1"), [])
    assert not any(t.startswith("Related finding") for t in titles(context))


def test_knowledge_is_not_offered_when_disabled(tree: Tree) -> None:
    tree.learn("root.0.2", "Find which sequences are hashable", "Tuples can change? No.")
    context = tree.builder(knowledge_results=0).for_execution(tree.node("root.1"), [])
    assert not any(t.startswith("Related finding") for t in titles(context))


# -- the token budget -----------------------------------------------------------------------------


def _with_knowledge(tree: Tree) -> None:
    """A long dependency result and two knowledge entries, one clearly more relevant."""
    tree.finish("root.0", "Lists change in place with append and extend [1]. " * 40, [A])
    tree.learn("root.0.2", "Whether tuples can change", "Tuples can never change; tuples are immutable. " * 25)
    tree.learn(
        "root.0.1", "Notes on sequences", "Sequences support indexing and slicing. " * 30 + "Some of them change."
    )


def test_over_budget_the_least_relevant_knowledge_is_dropped_first(tree: Tree) -> None:
    _with_knowledge(tree)
    full = tree.builder(token_budget=100_000).for_execution(tree.node("root.1"), [])
    assert [t for t in titles(full) if t.startswith("Related")] == [
        "Related finding (root.0.2): Whether tuples can change",
        "Related finding (root.0.1): Notes on sequences",
    ]
    assert full.cut == []
    budget = (len(full.render()) - 600) // 4  # dropping one entry (about 1200 characters) is enough
    context = tree.builder(token_budget=budget).for_execution(tree.node("root.1"), [])
    assert context.cut == [
        f"dropped 'Related finding (root.0.1): Notes on sequences' ({_tokens(tree, 'root.0.1')} tokens)"
    ]
    assert "Related finding (root.0.2): Whether tuples can change" in titles(context)
    assert section(context, "Result of root.0 ") == tree.node("root.0").result
    assert len(context.render()) <= budget * 4
    assert context.to_trace()["cut"] == context.cut


def test_when_dropping_knowledge_is_not_enough_long_results_are_shortened(tree: Tree) -> None:
    _with_knowledge(tree)
    frame = tree.builder(token_budget=100_000, knowledge_results=0).for_execution(tree.node("root.1"), [])
    budget = (len(frame.render()) - 1000) // 4
    context = tree.builder(token_budget=budget).for_execution(tree.node("root.1"), [])
    assert [c.split(" ", 1)[0] for c in context.cut] == ["dropped", "dropped", "shortened"]
    assert context.cut[2].startswith("shortened 'Result of root.0 (this task depends on it)")
    shortened = section(context, "Result of root.0 ")
    assert shortened.endswith("characters cut ...]")
    assert shortened.startswith("Lists change in place with append and extend [1].")
    assert len(context.render()) <= budget * 4
    assert section(context, "Overall goal") == OVERALL


def _tokens(tree: Tree, task_id: str) -> int:
    [entry] = tree.knowledge.related("tuples sequences change", {task_id})
    return len(entry.result) // 4 + 1


# -- aggregation and replanning -------------------------------------------------------------------


def test_aggregation_renumbers_children_citations_and_dedupes_shared_sources(tree: Tree) -> None:
    tree.finish("root.0.0", "Lists change in place [1]; see also [2].", [A, C])
    tree.finish("root.0.1", "Tuples never change [1]; they hash [2].", [B, C])
    failed = tree.node("root.0.2")
    failed.status = TaskStatus.FAILED
    failed.error = "planning failed: invalid JSON"
    context = tree.builder().for_aggregation(tree.node("root.0"))
    assert [s.ref for s in context.sources] == [A.ref, C.ref, B.ref]
    assert section(context, "Result of subtask root.0.0") == "Lists change in place [1]; see also [2]."
    assert section(context, "Result of subtask root.0.1") == "Tuples never change [3]; they hash [2]."
    assert section(context, "Subtask root.0.2 did not finish") == "planning failed: invalid JSON"


def aggregation_order(question: str, steps: list[tuple[str, TaskType, str]]) -> list[str]:
    """The order in which the root's aggregator reads its finished steps (goal, type, result)."""
    graph = TaskGraph()
    graph.add_root(question, TaskType.SEARCH, NodeType.PLAN)
    graph.add_children(
        "root", [SubTask(goal=goal, task_type=kind) for goal, kind, _ in steps], [NodeType.EXECUTE] * len(steps)
    )
    for child, (_, _, result) in zip(graph.children("root"), steps, strict=True):
        child.status, child.result, child.sources = TaskStatus.DONE, result, [A]
    with ProjectStore.in_memory() as store:
        store.create_project("p-1", question, "general_agent", {})
        builder = ContextBuilder(graph, KnowledgeStore(store, "p-1"), 3000, 0)
        context = builder.for_aggregation(graph.get("root"))
    return [s.title.split(":")[0].removeprefix("Result of subtask ") for s in context.sections if "subtask" in s.title]


def test_aggregation_reads_the_steps_in_plan_order() -> None:
    order = aggregation_order(
        "Which team owns the service, and who leads it?",
        [
            ("Which team owns the service?", TaskType.SEARCH, "Team A [1]."),
            ("Who leads that team?", TaskType.SEARCH, "B leads it [1]."),
            ("Combine them.", TaskType.THINK, "A, led by B [1]."),
        ],
    )
    assert order == ["root.0", "root.1", "root.2"]


def test_replanning_keeps_failures_and_feedback_even_over_budget(tree: Tree) -> None:
    tree.finish("root.0.0", "Lists change in place. " * 100, [A])
    failed = tree.node("root.0.1")
    failed.status = TaskStatus.FAILED
    failed.error = "the executor found nothing"
    context = tree.builder(token_budget=50).for_replanning(tree.node("root.0"), "try the hashing docs instead")
    assert section(context, "Failed: Find whether tuples can change") == "the executor found nothing"
    assert section(context, "Feedback to address") == "try the hashing docs instead"
    assert section(context, "Already done (keep)").endswith("characters cut ...]")


def test_atomizing_shows_the_plan_the_subtask_belongs_to(tree: Tree) -> None:
    goals = ["Find how lists change in place", "Find whether tuples can change"]
    context = tree.builder().for_atomizing(tree.node("root.0"), goals[1], goals)
    assert section(context, "The plan this subtask belongs to") == (
        "0. Find how lists change in place\n1. Find whether tuples can change"
    )
    assert section(context, "Overall goal") == OVERALL

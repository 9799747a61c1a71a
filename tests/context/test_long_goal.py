"""A very long goal (a pasted document) is cut in the context of each call, not repeated whole."""

from __future__ import annotations

from sentient.context.builder import ContextBuilder
from sentient.context.knowledge import KnowledgeStore
from sentient.graph.node import NodeType, TaskType
from sentient.graph.plan import SubTask
from sentient.graph.task_graph import TaskGraph
from sentient.store import ProjectStore


def test_a_100_kb_goal_is_shortened_with_a_marker_in_every_context() -> None:
    goal = "Summarise this text: " + "lorem ipsum dolor sit amet " * 4000  # about 108 KB
    graph = TaskGraph()
    root = graph.add_root(goal, TaskType.WRITE, NodeType.PLAN)
    [child] = graph.add_children(
        root.task_id, [SubTask(goal="Find the main claim", task_type=TaskType.THINK)], [NodeType.EXECUTE]
    )
    with ProjectStore.in_memory() as projects:
        projects.create_project("p-1", goal, "general_agent", {})
        knowledge = KnowledgeStore(projects, "p-1")
        builder = ContextBuilder(graph, knowledge, token_budget=3000, knowledge_results=0)
        for context in (builder.for_planning(root), builder.for_execution(child, [])):
            rendered = context.render()
            assert len(rendered) < 5_000, f"the goal was not cut: {len(rendered)} characters"
            assert rendered.count("Summarise this text: lorem ipsum") >= 1, "its beginning is kept"
            assert "characters of the goal cut ...]" in rendered
        short = ContextBuilder(graph, knowledge, token_budget=10, knowledge_results=0)
        root.goal = "Compare lists and tuples"
        assert "Compare lists and tuples" in short.for_planning(root).render(), "a short goal is never cut"

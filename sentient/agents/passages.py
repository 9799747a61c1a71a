"""The passages an executor reads: the search run before it is called.

:class:`Passages` searches with the tools of the profile's executors (the local documents, the
web). The :class:`~sentient.agents.processor.AgentProcessor` asks it before each executor call;
it keeps nothing between calls.
"""

from __future__ import annotations

from collections.abc import Mapping

from sentient.agents.registry import Profile
from sentient.context.builder import ContextBuilder
from sentient.graph.node import Source, TaskNode, TaskType
from sentient.graph.task_graph import TaskGraph
from sentient.tools.toolbox import ToolBox

RETRIEVED_SOURCES = 5  # per retrieval tool, before each executor call


class Passages:
    """Searches for one graph's tasks with the tools of the profile's executors."""

    def __init__(
        self, graph: TaskGraph, profile: Profile, context: ContextBuilder, toolboxes: Mapping[str, ToolBox]
    ) -> None:
        self._graph = graph
        self._profile = profile
        self._context = context
        self._toolboxes = toolboxes

    def executor_tools(self, task_type: TaskType) -> ToolBox | None:
        """The tools of the profile's executor for ``task_type`` (None when it has none)."""
        return self._toolboxes.get(self._profile.executor_for(task_type).name)

    async def for_task(self, node: TaskNode, tools: ToolBox | None) -> list[Source]:
        """Search with the executor's retrieval tools (documents, the web) before it is called.

        The query keeps the words of the task, of the goals above it and of the results it
        depends on (a second hop searches with what the first one found). Passages its
        dependencies already cite are skipped: their results are in the context anyway.
        """
        if tools is None or not tools.retrieval_tools():
            return []
        seen = {s.ref for dep in self._graph.dependencies(node.task_id) for s in dep.sources if s.verified}
        found = await tools.retrieve(self._context.search_query(node), RETRIEVED_SOURCES + len(seen))
        node.warnings.extend(found.warnings)
        return [s for s in found.sources if s.ref not in seen][:RETRIEVED_SOURCES]

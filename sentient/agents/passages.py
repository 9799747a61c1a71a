"""The passages an executor reads: the search run before it is called.

:class:`Passages` searches with the tools of the profile's executors (the local documents, the
web). The :class:`~sentient.agents.processor.AgentProcessor` asks it before each executor call;
it keeps nothing between calls. In a follow-up question's run, the passages the project it
follows read come first (:mod:`sentient.context.prior`), and a question answered first is answered
from them alone when some relate to it: it is searched again only when they do not support it.
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

    async def for_task(self, node: TaskNode, tools: ToolBox | None, *, answering_first: bool = False) -> list[Source]:
        """Search with the executor's retrieval tools (documents, the web) before it is called.

        The query keeps the words of the task, of the goals above it and of the results it
        depends on (a second hop searches with what the first one found). Passages its
        dependencies already cite are skipped: their results are in the context anyway.

        A follow-up question's passages that relate to the query come first; ``answering_first``
        (a question answered directly first), they are all it gets when there are any.
        """
        if tools is None or not tools.retrieval_tools():
            return []
        query = self._context.search_query(node)
        prior = self._context.prior.passages(query, RETRIEVED_SOURCES) if self._context.prior is not None else []
        if prior and answering_first:
            return prior
        seen = {s.ref for dep in self._graph.dependencies(node.task_id) for s in dep.sources if s.verified}
        seen.update(s.ref for s in prior)
        found = await tools.retrieve(query, RETRIEVED_SOURCES + len(seen))
        node.warnings.extend(found.warnings)
        return prior + [s for s in found.sources if s.ref not in seen][:RETRIEVED_SOURCES]

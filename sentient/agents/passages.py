"""The passages an agent reads: the searches run before an executor, a report or a second look is asked.

:class:`Passages` searches with the tools of the profile's executors (the local documents, the
web) and decides from the documents alone whether a goal is a lookup (:meth:`Passages.is_lookup`).
The :class:`~sentient.agents.processor.AgentProcessor` asks it before each call that answers
from sources; it keeps nothing between calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from functools import cache

from sentient.agents.registry import Profile
from sentient.context.builder import ContextBuilder
from sentient.context.citations import renumber
from sentient.context.evidence import coverage
from sentient.context.grounding import Grounded
from sentient.context.wording import opening, own_words
from sentient.graph.node import Source, TaskNode, TaskType
from sentient.graph.task_graph import TaskGraph
from sentient.tools.follow import KEEP
from sentient.tools.snippets import joined
from sentient.tools.toolbox import DocsSearch, ToolBox

RETRIEVED_SOURCES = 5  # per retrieval tool, before each executor call
# A task one document passage holds this share of the words of (by rarity) is a lookup: it is executed
# without asking the atomizer (bench/README.md, "adaptive recursion").
LOOKUP_COVERAGE = 0.85


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

    async def is_lookup(self, goal: str, task_type: TaskType) -> bool:
        """Whether one passage of the local documents holds nearly every word of ``goal``.

        The embedded model's atomizer cannot tell a lookup from a question that must find
        something first (bench/README.md); the documents can: the words of "what is the payload
        limit of KESTREL-ingest" meet in one passage, those of "the title of the on-call lead
        of Team Cormorant" only across two. Each word counts by its rarity in the documents.
        Only the local documents are searched (no web request for a decision); without them the
        atomizer decides alone.
        """
        tools = self.executor_tools(task_type)
        docs = tools.docs() if tools is not None else None
        if docs is None:
            return False
        return await _one_holds(goal, await docs.retrieve(goal, RETRIEVED_SOURCES), docs)

    async def for_task(self, node: TaskNode, tools: ToolBox | None) -> list[Source]:
        """Search with the executor's retrieval tools (documents, the web) before it is called.

        The query keeps the words of the task, of the goals above it and of the results it
        depends on (a second hop searches with what the first one found). Passages its
        dependencies already cite are skipped: their results are in the context anyway.

        When one of the docs search's best passages holds the task's words, as a lookup's does,
        only the docs search's best passages and what following references found are shown (no
        weaker hits, no web results): the embedded model reads every shown token, about 60 a
        second on two cores, and a lookup's answer is in its best passages (bench/README.md,
        "A lookup's executor is not shown the search's weaker hits").
        """
        if tools is None or not tools.retrieval_tools():
            return []
        seen = {s.ref for dep in self._graph.dependencies(node.task_id) for s in dep.sources if s.verified}
        query, limit = self._context.search_query(node), RETRIEVED_SOURCES + len(seen)
        found = await tools.retrieve(query, limit)
        node.warnings.extend(found.warnings)
        sources = [s for s in found.sources if s.ref not in seen][:RETRIEVED_SOURCES]
        docs = tools.docs()
        if docs is None or not await _one_holds(node.goal, sources[:KEEP], docs):
            return sources
        return [s for s in await docs.retrieve(query, limit, fill=False) if s.ref not in seen][:RETRIEVED_SOURCES]

    async def for_report(self, node: TaskNode) -> list[Source]:
        """The best passages for the whole goal: the first ``REPORT_SOURCES`` are shown to the
        root's aggregator beside the results, all of them to a second look (:meth:`to_confirm`).

        A plan can go astray where one search for the question would not: the small planner
        asked "what is the current time of the service" for "how far behind real time is the
        data of the service", and one search for the question finds the page that says "72
        hours behind real time" (bench/README.md, "the report reads the question's own
        search").
        """
        return await self.for_task(node, self.executor_tools(node.task_type))

    async def to_confirm(
        self, node: TaskNode, answer: Grounded, found: Sequence[Source], tools: ToolBox | None
    ) -> list[Source]:
        """The passages a second look reads: ``found`` (the goal's), then those that a search for
        the goal and the words its unconfirmed answer adds finds besides, ``RETRIEVED_SOURCES`` in all.

        A sentence that would confirm the answer may be in a passage ranked below the goal's best,
        or in one of them but outside its snippet, which the goal's words cut ("This behavior is
        compliant with IEEE 754" after the NaN sentences of a long passage on comparisons). Such a
        passage's snippet is followed by the second search's sentences that hold a word of the
        answer's it lacks (:func:`~sentient.tools.snippets.joined`). The goal's passages keep their
        places and their snippets otherwise: the small model reads whatever it is shown, and
        re-cut by a wrong answer's words ("Mersenne Twister"), the random module's notes lost the
        sentence saying why random() is threadsafe to it.
        """
        asked = set(own_words(node.goal))
        added = [w for w in own_words(renumber(opening(answer.text), {})) if w not in asked]
        if tools is None or not tools.retrieval_tools() or not added:
            return list(found)
        guided = await tools.retrieve(f"{self._context.search_query(node)} {' '.join(added)}", RETRIEVED_SOURCES)
        node.warnings.extend(guided.warnings)
        windows = {source.ref: source.snippet for source in guided.sources}
        shown = [
            source.model_copy(update={"snippet": joined(source.snippet, windows[source.ref], added)})
            if source.ref in windows
            else source
            for source in found
        ]
        listed = {source.ref for source in found}
        return [*shown, *(source for source in guided.sources if source.ref not in listed)][:RETRIEVED_SOURCES]


async def _one_holds(goal: str, sources: Sequence[Source], docs: DocsSearch) -> bool:
    """Whether one of ``sources`` holds ``LOOKUP_COVERAGE`` of ``goal``'s words, each weighed by
    its rarity in the documents (:func:`evidence.coverage`): the lookup rule."""
    rarity = cache(docs.rarity)
    covered = await asyncio.to_thread(lambda: max((coverage(goal, s, rarity) for s in sources), default=0.0))
    return covered >= LOOKUP_COVERAGE

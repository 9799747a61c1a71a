"""AgentProcessor: one handler per phase of a node's life (plan, review, atomize, execute,
aggregate, replan), each done by asking the profile's agents. Each handler moves the node through
the transition table and publishes what happened; the scheduler decides *when* handlers run.

It implements the engine's :class:`sentient.engine.processor.NodeProcessor` protocol without
importing the engine: the engine is driven by agents, it does not know them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

from loguru import logger
from pydantic import BaseModel

from sentient.agents.config import AgentConfig, Role
from sentient.agents.passages import Passages
from sentient.agents.plans import asks_with_slot, distinct_subtasks, filled, is_goal, lists_goal, splits_nothing
from sentient.agents.registry import Profile
from sentient.agents.report import ReportPhases
from sentient.agents.runner import AgentCall, AgentRunner
from sentient.agents.schemas import (
    AggregationOutput,
    AtomizerOutput,
    ExecutionOutput,
    PlanReply,
    QuestionPlan,
    SourcedAnswer,
    sourced_schema,
)
from sentient.agents.structured import cited_value, structured_schema
from sentient.context.builder import AgentContext, ContextBuilder, Section
from sentient.context.citations import SourceList, renumber
from sentient.context.grounding import (
    Choice,
    Grounded,
    Reading,
    Verdict,
    accepted,
    choice_schema,
    judged,
    rejudged,
    stating,
    strip_markers,
    to_judge,
)
from sentient.context.wording import questions
from sentient.events import (
    EventBus,
    NodeCreated,
    NodeSnapshot,
    NodesRemoved,
    NodeStatusChanged,
    PlanProposed,
    ReviewAnswered,
    ReviewRequested,
    snapshot,
)
from sentient.exceptions import AgentError
from sentient.graph.node import NodeType, Source, TaskNode, TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.hitl.protocol import (
    Approve,
    Modify,
    PlanReviewer,
    Reject,
    ReviewDecision,
    ReviewRequest,
    plan_problems,
)
from sentient.settings import EngineSettings, ReviewMode, ReviewTimeoutAction
from sentient.structured import CitedValue
from sentient.tools.toolbox import SourceSink, ToolBox

_S = TaskStatus
T = TypeVar("T", bound=BaseModel)


class AgentProcessor:
    """Runs the phases of nodes of one graph with agents. Keeps nothing between calls but the
    graph and which roots are being answered first."""

    def __init__(
        self,
        graph: TaskGraph,
        profile: Profile,
        settings: EngineSettings,
        runner: AgentRunner,
        context: ContextBuilder,
        reviewer: PlanReviewer,
        bus: EventBus,
        toolboxes: Mapping[str, ToolBox] | None = None,
    ) -> None:
        self.graph = graph
        self._profile = profile
        self._settings = settings
        self._runner = runner
        self._context = context
        self._reviewer = reviewer
        self._bus = bus
        self._toolboxes = toolboxes or {}
        self._passages = Passages(graph, profile, context, self._toolboxes)
        self._tasks = profile.prompts.for_run(settings.report_length, settings.language)
        self._report = ReportPhases(self)  # the phases of a report's nodes
        # Roots answered directly first (:meth:`decide_root_type`). The unconfirmed direct answer
        # of one then planned is kept on the node itself (:meth:`_plan_instead`).
        self._answering_first: set[str] = set()

    # -- status --------------------------------------------------------------------------

    def move(self, node: TaskNode, target: TaskStatus, error: str | None = None) -> None:
        """Change a node's status (through the table) and publish it."""
        old = node.move_to(target)
        if error is not None:
            node.error = error
        self._bus.publish(NodeStatusChanged(snapshot(node), old, node.history[-1].at, error))

    def announce(self, node: TaskNode) -> None:
        self._bus.publish(NodeCreated(snapshot(node)))

    def fail(self, node: TaskNode, error: str) -> None:
        logger.debug("task {} failed: {}", node.task_id, error)
        self.move(node, _S.FAILED, error)

    # -- phases --------------------------------------------------------------------------

    async def decide_root_type(self, root: TaskNode) -> None:
        """Unless root planning is forced, decide how the root starts.

        A question is answered directly first, from one search, and planned only when no source
        is found to support that answer (:meth:`execute`): a question that needs two lookups
        gets them, a simple one costs about as much as one retrieve-then-answer call. Any other
        goal goes to the atomizer.
        """
        if self._report.forced(root):
            return
        if self._settings.force_root_planning:
            return
        if root.unconfirmed_answer is not None:  # resumed: answered first in an earlier run, and planned
            return
        if self._answers_first(root):
            self._answering_first.add(root.task_id)
            root.node_type = NodeType.EXECUTE
            return
        root.node_type = await self._report.root_type(root)

    def _answers_first(self, root: TaskNode) -> bool:
        """Whether the root is a question whose executor searches (a source can support its answer)."""
        if not self._settings.answer_first or self._settings.skip_atomization or not questions(root.goal):
            return False
        tools = self._passages.executor_tools(root.task_type)
        return tools is not None and bool(tools.retrieval_tools())

    async def plan(self, node: TaskNode) -> None:
        """PLANNING -> (review) -> ATOMIZATION -> PLAN_DONE, or FAILED; a root whose planner
        fails is executed instead (:meth:`execute`). A report's nodes are planned by its shape
        (:mod:`sentient.agents.report`)."""
        if self._report.plans(node):
            await self._report.plan(node)
            return
        if node.unconfirmed_answer is not None:
            await self._plan_question(node)
            return
        self.move(node, _S.PLANNING)
        try:
            agent = self._profile.planner_for(node.parent_id is None)
            reply = await self._ask(
                node,
                Role.PLANNER,
                agent,
                self._tasks.plan_task(node, self._settings.max_subtasks),
                self._context.for_planning(node),
                PlanReply,
                enough=partial(lists_goal, node.goal),
            )
            self._bus.publish(PlanProposed(node.task_id, reply, by="planner"))
            subtasks = distinct_subtasks(reply.subtasks)
            why_not = splits_nothing(node.goal, subtasks)
            if why_not is not None:
                await self._execute_instead(node, why_not)
                return
            if len(subtasks) < len(reply.subtasks):
                node.warnings.append(f"{len(reply.subtasks) - len(subtasks)} repeated subtask(s) dropped from the plan")
            approved = await self._review(node, PlanOutput(subtasks=subtasks))
            if approved is not None:
                await self._adopt_plan(node, approved.subtasks)
        except AgentError as exc:
            if node.parent_id is not None:
                self.fail(node, f"planning failed: {exc}")
                return
            # The root has no parent to replan it: an answer without a plan beats a failed run (a
            # weak model that cannot write a valid plan can often still answer).
            await self._execute_instead(node, f"planning failed ({exc})")

    async def _plan_question(self, node: TaskNode) -> None:
        """PLANNING -> (review) -> ATOMIZATION -> PLAN_DONE: a question answered first whose answer
        no passage supports, planned as two lookups: what it refers to without naming it, then
        the question about that, asked with what the first found (:meth:`_fill`). If the planner
        finds nothing to look up first, or fails, the unconfirmed direct answer stands."""
        self.move(node, _S.PLANNING)
        agent = self._profile.planner_for(node.parent_id is None)
        task = self._tasks.plan_question_task(node.goal)
        try:
            reply = await self._ask(node, Role.PLANNER, agent, task, self._context.for_planning(node), QuestionPlan)
        except AgentError as exc:
            self._stand(node, f"planning failed ({exc})")
            return
        first = SubTask(goal=" ".join(reply.first.split()), task_type=TaskType.SEARCH)
        # The question about what the first lookup finds, its slot filled when that is found
        # (:meth:`_fill`); the question itself, searched with what the first found, when the
        # planner wrote no slot.
        template = " ".join(reply.then.split())
        asked = template if asks_with_slot(template, node.goal) else node.goal
        then = SubTask(goal=asked, task_type=TaskType.SEARCH, depends_on_indices=[0])
        plan = PlanOutput(subtasks=[first, then])
        self._bus.publish(PlanProposed(node.task_id, plan, by="planner"))
        if is_goal(node.goal, first.goal):
            self._stand(node, "the planner found nothing to look up first")
            return
        approved = await self._review(node, plan)
        if approved is not None:
            await self._adopt_plan(node, approved.subtasks)

    async def _execute_instead(self, node: TaskNode, why: str) -> None:
        """Execute ``node`` instead of planning it (``why`` noted), or, when it was answered
        before it was planned, let that unconfirmed direct answer stand."""
        if node.unconfirmed_answer is not None:
            self._stand(node, why)
            return
        node.node_type = NodeType.EXECUTE
        node.warnings.append(f"{why}: it was executed directly")
        await self.execute(node)

    def _stand(self, node: TaskNode, why: str) -> None:
        """Finish ``node`` with its unconfirmed direct answer, because its plan came to nothing (``why``)."""
        node.warnings.append(f"{why}; the unconfirmed direct answer stands")
        if not node.children:
            node.node_type = NodeType.EXECUTE  # a leaf after all
        # Its subtasks all failed (PLAN_DONE), its plan was dropped or rejected, or its aggregate
        # was not supported (already AGGREGATING).
        if node.status is not _S.AGGREGATING:
            self.move(node, _S.AGGREGATING if node.status is _S.PLAN_DONE else _S.EXECUTING)
        self._finish(node, node.result or "", node.sources)

    async def replan(self, node: TaskNode, feedback: str) -> None:
        """NEEDS_REPLAN -> PLAN_MODIFICATION -> ATOMIZATION -> PLAN_DONE, rebuilding unfinished work."""
        node.replans += 1
        self.move(node, _S.PLAN_MODIFICATION)
        try:
            plan = await self._modify(node, None, feedback, self._context.for_replanning(node, feedback))
            approved = await self._review(node, plan)
            if approved is None:
                return
            unfinished = [c for c in self.graph.children(node.task_id) if c.status is not _S.DONE]
            removed: list[str] = []
            for child in unfinished:
                removed += self.graph.remove_subtree(child.task_id)
            if removed:
                self._bus.publish(NodesRemoved(node.task_id, tuple(removed)))
            await self._adopt_plan(node, approved.subtasks)
        except AgentError as exc:
            self.fail(node, f"replanning failed: {exc}")

    async def execute(self, node: TaskNode) -> None:
        """READY (or PLANNING, see :meth:`plan`) -> EXECUTING -> DONE (or FAILED).

        A question answered first whose answer no source supports is planned instead; its
        model's own answer, asked without sources, stands if the plan comes to nothing
        (:meth:`_plan_instead`). A section's searches and writing step are a report's.
        """
        if self._report.executes(node):
            await self._report.execute(node)
            return
        self._fill(node)
        self.move(node, _S.EXECUTING)
        agent = self._profile.executor_for(node.task_type)
        tools = self._toolboxes.get(agent.name)
        try:
            first = node.task_id in self._answering_first
            found = await self._passages.for_task(node, tools, answering_first=first)
            context = self._context.for_execution(node, found)
            grounded = await self._executed(node, agent, context, tools, sourced=bool(found))
        except AgentError as exc:
            if node.task_id in self._answering_first:
                await self._plan_instead(node, f"the direct answer failed ({exc})")
                return
            self.fail(node, str(exc))
            return
        node.warnings.extend(grounded.notes)
        if node.task_id in self._answering_first and not grounded.settled:
            # What stands if the research finds nothing better: when the passage named for the
            # answer, read for the question alone, gives another answer, that reading; else the
            # model's own, asked without the passages that do not state it.
            if grounded.reading:
                direct, memory = replace(grounded, text=grounded.reading), False
            else:
                direct, memory = await self._memory(node, grounded)
            await self._plan_instead(node, "no source supports the direct answer", direct, memory=memory)
            return
        self._answering_first.discard(node.task_id)
        self._finish(node, grounded.text, grounded.sources)

    async def _plan_instead(
        self, node: TaskNode, why: str, direct: Grounded | None = None, *, memory: bool = False
    ) -> None:
        """Plan a question that was answered first (:meth:`decide_root_type`) after all, because
        its ``direct`` answer is unconfirmed (it stands if the plan comes to nothing) or failed;
        ``memory``: that answer is the model's own, asked without passages."""
        self._answering_first.discard(node.task_id)
        node.warnings.append(f"{why}: the question is planned")
        if direct is not None:
            # On the node, so in the store with its next status: a resumed run keeps it too.
            node.result, node.sources, node.answered_from_memory = direct.text, list(direct.sources), memory
        node.node_type = NodeType.PLAN
        await self.plan(node)

    async def aggregate(self, node: TaskNode) -> None:
        """PLAN_DONE -> AGGREGATING -> DONE; fails without a call if no child succeeded.

        A question planned because its direct answer was unconfirmed is answered by its subtask
        that asks the question itself (after the lookups before it), else by the aggregate, read
        by the verifier; if no source supports that answer, it stands uncited over a passage's
        reading, not over the model's own answer (:func:`_stands_over_direct`). A report and its
        parts are assembled (:mod:`sentient.agents.report`).
        """
        if self._report.assembles(node):
            await self._report.aggregate(node)
            return
        children = self.graph.children(node.task_id)
        done = [c for c in children if c.status is _S.DONE]
        if not done:
            first = next((c for c in children if c.error), None)
            reason = f"all {len(children)} subtasks failed or were cancelled"
            reason += f": {first.task_id}: {first.error}" if first else ""
            if node.unconfirmed_answer is None:
                self.fail(node, reason)
            else:
                self._stand(node, reason)
            return
        fallback = node.unconfirmed_answer
        self.move(node, _S.AGGREGATING)
        if fallback is not None and (
            asked := next((c for c in done if is_goal(node.goal, c.restates or c.goal)), None)
        ):
            self._answered_by_lookups(node, asked)
            return
        is_root = node.parent_id is None
        agent = self._profile.aggregator_for(is_root)
        try:
            context = self._context.for_aggregation(node)
            task = self._tasks.aggregate_task(node, is_root=is_root)
            output = await self._ask(node, Role.AGGREGATOR, agent, task, context, AggregationOutput)
            grounded = Grounded(output.answer, context.sources)
            if fallback is not None:
                grounded = await self._rejudged(node, grounded)
        except AgentError as exc:
            # A failed aggregation fails the node even when a direct answer could stand: the run is
            # resumable, and its partial report shows that answer beside what finished.
            self.fail(node, f"aggregation failed: {exc}")
            return
        node.warnings.extend(grounded.notes)
        if fallback is not None and not grounded.confirmed:
            if not _stands_over_direct(node, grounded.text):
                self._stand(node, "no source supports the research's answer")
                return
            node.warnings.append(_OVER_READING)
            grounded = replace(grounded, text=strip_markers(grounded.text))
        self._finish(node, grounded.text, grounded.sources)

    def _answered_by_lookups(self, node: TaskNode, asked: TaskNode) -> None:
        """Finish a question planned as lookups (:meth:`_plan_question`) with the answer of the one
        that asks the question itself (with what they found: :meth:`_fill`), after what it rests on:
        each lookup before it, with its citations, verified or not (an aggregator asked to
        restate them drops the citations). Asked about what the lookup before it found (the
        question's bridge), it is confirmed only if both cite a verified source: its passage
        states the answer about the bridge, not about what the question names. It stands if
        either does (it answers the question as asked, which the direct answer's passage did
        not), shown without citations when not confirmed. Unconfirmed, and with neither, it
        stands only over a passage's reading (:func:`_stands_over_direct`); else the unconfirmed
        direct answer stands."""
        sources = SourceList()
        chain = [*self.graph.dependencies(asked.task_id), asked]
        answered = _confirmed(asked)
        # Asked with its slot filled, it rests on the lookup that filled it: None when it asks the question itself.
        bridge = _confirmed(chain[-2]) if asked.restates is not None and len(chain) > 1 else None
        if not answered and not bridge and not _stands_over_direct(node, asked.result or ""):
            self._stand(node, "no source supports the research's answer")
            return
        steps = [f"- {step.goal} {sources.adopt(step.result or '', step.sources)}" for step in chain[:-1]]
        answer = sources.adopt(asked.result or "", asked.sources)
        text = "\n\n".join([answer, "\n".join(steps)])
        if not answered and bridge:
            node.warnings.append("no source supports the research's answer, asked about what a confirmed lookup found")
            text = strip_markers(text)
        elif not answered:
            node.warnings.append(_OVER_READING)
            text = strip_markers(text)
        elif bridge is False:
            node.warnings.append("the research's answer is about what a lookup no source supports found")
            text = strip_markers(text)
        self._finish(node, text, sources.sources)

    async def structure(self, schema: dict[str, Any]) -> CitedValue:
        """The finished root's answer as a JSON value of the run's output ``schema``, with the
        sources each of its strings cites (:mod:`sentient.agents.structured`): one more call of
        the root's aggregator, given the answer and its sources. Raises AgentError."""
        root = self.graph.root
        context = AgentContext([Section("The answer", root.result or "", required=True)], sources=list(root.sources))
        agent = self._profile.aggregator_for(True)
        task = self._tasks.structure_task(root.goal, schema)
        output = await self._ask(root, Role.AGGREGATOR, agent, task, context, structured_schema(schema))
        return cited_value(output.root, len(root.sources))

    # -- helpers -------------------------------------------------------------------------

    async def _ask(
        self,
        node: TaskNode,
        role: Role,
        agent: AgentConfig,
        task: str,
        context: AgentContext,
        schema: type[T],
        tools: ToolBox | None = None,
        sink: SourceSink | None = None,
        layer: int | None = None,
        enough: Callable[[str], bool] | None = None,
    ) -> T:
        layer = node.layer if layer is None else layer
        call = AgentCall(
            node.task_id,
            node.goal,
            role,
            agent,
            task,
            context,
            tools,
            sink,
            layer,
            partial(_charge, node),
            enough,
            prompts=self._tasks,  # a model under a grammar is offered its tools in the run's words
        )
        reply = await self._runner.run(call, schema)
        node.warnings.extend(reply.notes)
        return reply.output

    async def _executed(
        self, node: TaskNode, agent: AgentConfig, context: AgentContext, tools: ToolBox | None, *, sourced: bool
    ) -> Grounded:
        """An executor's answer. ``sourced`` (passages were found for it): the executor names the
        passage that states its answer, and the verifier reads that passage for the question
        without being shown the answer (:meth:`_accepted`); else it cites the results it was given
        inline, as verified upstream."""
        sink = SourceSink(context.sources, node.task_id)
        if not sourced:
            task = self._tasks.execute_task(node, sourced=False)
            plain = await self._ask(node, Role.EXECUTOR, agent, task, context, ExecutionOutput, tools, sink)
            return Grounded(plain.answer, sink.sources)
        # Under a grammar (the embedded model) it can only name a passage it was shown; a hosted
        # model may name one its own tool calls found, so the number is checked here.
        grammar = self._runner.decodes_under_grammar(agent)
        schema = sourced_schema(len(context.sources)) if grammar else SourcedAnswer
        output = await self._ask(
            node, Role.EXECUTOR, agent, self._tasks.execute_task(node, sourced=True), context, schema, tools, sink
        )
        named = output.source if 1 <= output.source <= len(sink.sources) else 0
        first = await self._accepted(node, output, sink.sources, named) if named else None
        if first is not None and (first.confirmed or first.contradicted):
            return first
        # The passage it named does not hold its answer, or it named none: it is asked again which
        # of the passages shown states the answer, if one does.
        chosen = await self._chosen(node, agent, replace(context, sources=list(sink.sources)), output.answer)
        if chosen and chosen != named:
            return await self._accepted(node, output, sink.sources, chosen)
        if first is not None:
            return first
        grounded = judged(output.answer, sink.sources, [], False)
        return Grounded(grounded.text, grounded.sources, [*grounded.notes, "no source shown states the answer"])

    async def _judged(self, node: TaskNode, answer: str, passages: Sequence[Source]) -> bool:
        """Whether the verifier finds that ``passages`` support ``answer`` to the node's goal
        (False, noted, when it cannot be asked: a citation that cannot be shown to support the
        answer is not verified)."""
        context = self._context.for_verifying(node, passages)
        try:
            verdict = await self._ask(
                node,
                Role.VERIFIER,
                self._profile.verifier,
                self._tasks.support_task(node.goal, answer),
                context,
                Verdict,
            )
        except AgentError as exc:
            node.warnings.append(f"the verifier could not be asked, the citation is not verified: {exc}")
            return False
        return verdict.supports

    async def _chosen(self, node: TaskNode, executor: AgentConfig, executed: AgentContext, answer: str) -> int:
        """The number of the passage shown to ``executor`` that states ``answer``, or 0 (also when
        it cannot be asked). Asked in the executor's own prompt (``executed``) with only the task
        replaced: the embedded model then reads just the new task, from the state the answer left
        (:mod:`~sentient.agents.models.prompt_states`), not every passage again. The passage it
        names is cited as verified only if the verifier reads the same answer in it
        (:meth:`_accepted`)."""
        passages = executed.sources
        grammar = self._runner.decodes_under_grammar(executor)
        schema = choice_schema(len(passages)) if grammar else Choice
        task = self._tasks.support_choice_task(node.goal, answer)
        try:
            choice = await self._ask(node, Role.VERIFIER, executor, task, executed, schema)
        except AgentError as exc:
            node.warnings.append(f"the second reading failed, the citation is not verified: {exc}")
            return 0
        return choice.source if 1 <= choice.source <= len(passages) else 0

    async def _accepted(self, node: TaskNode, output: SourcedAnswer, sources: Sequence[Source], cited: int) -> Grounded:
        """``output``, whose executor named its ``cited`` passage, cited and verified only if that
        passage holds its words, the verifier, asked what answer the passage states without being
        shown ``output``, reads the same one, and then, shown it, judges that the passage supports
        it (:func:`accepted`). Shown an answer first, a verifier accepts nearly any passage on its
        topic; asked second, it rejects about half of the answers that both readings got wrong."""
        held = stating(output.answer, [output.short], sources, [cited])
        reading = await self._read(node, sources[cited - 1]) if held else ""
        grounded = accepted(node.goal, output.answer, output.short, sources, cited, reading)
        if grounded.confirmed and not await self._judged(node, output.answer, [sources[cited - 1]]):
            return accepted(node.goal, output.answer, output.short, sources, cited, reading, supports=False)
        return grounded

    async def _read(self, node: TaskNode, passage: Source, question: str | None = None) -> str:
        """The answer to ``question`` (default: ``node``'s goal) that the verifier reads in
        ``passage``, asked without being shown any answer (:class:`Reading`); "" (noted) when it
        cannot be asked."""
        task = self._tasks.read_task(question or node.goal)
        context = self._context.for_verifying(node, [passage])
        try:
            return (await self._ask(node, Role.VERIFIER, self._profile.verifier, task, context, Reading)).answer
        except AgentError as exc:
            node.warnings.append(f"the verifier could not read the passage again: {exc}")
            return ""

    async def _rejudged(self, node: TaskNode, answer: Grounded) -> Grounded:
        """``answer`` (an aggregate) after the verifier read the passages it cites, as a whole."""
        cited = to_judge(answer)
        if not cited:
            return answer
        supports = await self._judged(node, renumber(answer.text, {}), [answer.sources[n - 1] for n in cited])
        return rejudged(answer, supports)

    def _fill(self, node: TaskNode) -> None:
        """Ask ``node`` as one lookup when it is the question of a parent planned as lookups
        (:meth:`_plan_question`) with a slot for what the lookup before it found: "who leads X",
        once Dispatch was found to own the system the question named, is asked as "who leads
        Dispatch", and searched, answered and verified as that. It then ``restates`` the parent's
        question (:meth:`aggregate` answers the parent with it)."""
        parent = self.graph.get(node.parent_id) if node.parent_id is not None else None
        found = [dep for dep in self.graph.dependencies(node.task_id) if dep.result]
        if parent is None or parent.unconfirmed_answer is None or not found:
            return
        if not asks_with_slot(node.goal, parent.goal):
            return
        lookup = found[-1]
        question = filled(node.goal, strip_markers(lookup.result or ""))
        node.restates, node.goal = parent.goal, question
        node.warnings.append(f"asked as {question!r}, with what {lookup.task_id} found")

    async def _memory(self, node: TaskNode, sourced: Grounded) -> tuple[Grounded, bool]:
        """The model's own answer to ``node``'s goal, asked without sources: what stands when no
        source supports an answer (the sourced one, if this call fails: it was read with passages
        that do not state it, and may have been misled by them); and whether it is the model's own."""
        agent = self._profile.executor_for(node.task_type)
        try:
            output = await self._ask(
                node, Role.EXECUTOR, agent, self._tasks.memory_task(node.goal), AgentContext([]), ExecutionOutput
            )
        except AgentError as exc:
            node.warnings.append(f"the answer from the model's own knowledge failed: {exc}")
            return Grounded(renumber(sourced.text, {}).strip(), sourced.sources), False
        return Grounded(renumber(output.answer, {}).strip(), sourced.sources), True

    async def _review(self, node: TaskNode, plan: PlanOutput) -> PlanOutput | None:
        """Ask the reviewer until the plan is approved; None if it was rejected: the node failed
        (the root: cancelled, so the project ends as stopped by its reviewer), or, a question
        answered first, finished with its unconfirmed direct answer (the reviewer refused more
        research, not the answer already given)."""
        mode = self._settings.review
        if mode is ReviewMode.NONE or (mode is ReviewMode.ROOT and node.parent_id is not None):
            return plan
        round_ = 1
        while True:
            self._bus.publish(ReviewRequested(node.task_id, plan))
            context = self._context.for_planning(node).render()
            decision, note = await self._decide(
                node, ReviewRequest(node.task_id, node.goal, node.layer, plan, round_, context)
            )
            if isinstance(decision, Approve):
                self._bus.publish(ReviewAnswered(node.task_id, "approve", note))
                return plan
            if isinstance(decision, Reject):
                self._bus.publish(ReviewAnswered(node.task_id, "reject", decision.reason))
                if node.unconfirmed_answer is not None:
                    self._stand(node, f"plan rejected by reviewer ({decision.reason})")
                elif node.parent_id is None:  # the reviewer stopped the project: cancelled (resumable), not failed
                    self.move(node, _S.CANCELLED, f"plan rejected by reviewer: {decision.reason}")
                else:
                    self.fail(node, f"plan rejected by reviewer: {decision.reason}")
                return None
            assert isinstance(decision, Modify)
            round_ += 1
            if node.status is _S.PLANNING:
                self.move(node, _S.PLAN_MODIFICATION)
            if decision.plan is not None:
                problems = plan_problems(decision.plan)
                if problems:
                    self._bus.publish(
                        ReviewAnswered(node.task_id, "modify", "edited plan refused: " + "; ".join(problems))
                    )
                    continue
                self._bus.publish(ReviewAnswered(node.task_id, "modify", "edited plan"))
                self._bus.publish(PlanProposed(node.task_id, decision.plan, by="reviewer"))
                return decision.plan
            instructions = decision.instructions or ""
            self._bus.publish(ReviewAnswered(node.task_id, "modify", instructions))
            plan = await self._modify(node, plan, instructions, self._context.for_planning(node))

    async def _decide(self, node: TaskNode, request: ReviewRequest) -> tuple[ReviewDecision, str]:
        """The reviewer's decision, or the configured one when no answer came in time (noted)."""
        timeout = self._settings.review_timeout_s
        if timeout is None:
            return await self._reviewer.review_plan(request), ""
        try:
            async with asyncio.timeout(timeout):
                return await self._reviewer.review_plan(request), ""
        except TimeoutError:
            action = self._settings.review_timeout_action
            note = f"no review within {timeout:g} s: {action.value}d by timeout"
            node.warnings.append(note)
            logger.warning("{}: {}", node.task_id, note)
            return (Approve() if action is ReviewTimeoutAction.APPROVE else Reject(note)), note

    async def _modify(
        self, node: TaskNode, plan: PlanOutput | None, instructions: str, context: AgentContext
    ) -> PlanOutput:
        agent = self._profile.plan_modifier
        task = self._tasks.modify_task(node, plan, instructions)
        new_plan = await self._ask(node, Role.PLAN_MODIFIER, agent, task, context, PlanOutput)
        self._bus.publish(PlanProposed(node.task_id, new_plan, by="plan_modifier"))
        return new_plan

    async def _adopt_plan(self, node: TaskNode, subtasks: Sequence[SubTask]) -> None:
        self.move(node, _S.ATOMIZATION)
        goals = [s.goal for s in subtasks]
        layer = node.layer + 1
        node_types = await asyncio.gather(
            *(self._node_type_for(node, s.goal, s.task_type, goals, layer) for s in subtasks)
        )
        children = self.graph.add_children(node.task_id, subtasks, node_types)
        for child in children:
            self.announce(child)
        self.move(node, _S.PLAN_DONE)

    async def _node_type_for(
        self, node: TaskNode, goal: str, task_type: TaskType, plan_goals: list[str], layer: int
    ) -> NodeType:
        if layer >= self._settings.max_depth:
            return NodeType.EXECUTE
        if self._settings.skip_atomization:
            return NodeType.PLAN
        context = self._context.for_atomizing(node, goal, plan_goals)
        try:
            task = self._tasks.atomize_task(goal, task_type.value)
            verdict = await self._ask(
                node, Role.ATOMIZER, self._profile.atomizer, task, context, AtomizerOutput, layer=layer
            )
        except AgentError as exc:
            node.warnings.append(f"atomizer failed for '{goal[:60]}', executing it directly: {exc}")
            return NodeType.EXECUTE
        return NodeType.EXECUTE if verdict.is_atomic else NodeType.PLAN

    def _finish(self, node: TaskNode, answer: str, sources: Sequence[Source]) -> None:
        # A citation must resolve: numbers beyond the offered (or tool-found) sources are removed.
        node.result = renumber(answer, {n: n for n in range(1, len(sources) + 1)}).strip()
        node.sources = list(sources)
        self.move(node, _S.DONE)


_OVER_READING = "no source supports the research's answer; it stands over the direct answer's reading"


def _stands_over_direct(node: TaskNode, answer: str) -> bool:
    """Whether the research's unconfirmed ``answer`` to a question planned after its direct answer
    was unconfirmed stands over that direct answer: it does over a passage's reading of the
    question (the research asked the question as asked), never over the model's own answer,
    asked without passages (research must not lose what the model knows), and not when empty."""
    return not node.answered_from_memory and bool(strip_markers(answer))


def _confirmed(node: TaskNode) -> bool:
    """Whether ``node``'s result cites a source verified for it."""
    return Grounded(node.result or "", node.sources).confirmed


def _charge(node: TaskNode, input_tokens: int, output_tokens: int, cost_usd: float) -> NodeSnapshot:
    """Count one agent call (failed ones too: they used tokens) on ``node``; its snapshot for the call's event."""
    node.agent_calls += 1
    node.input_tokens += input_tokens
    node.output_tokens += output_tokens
    node.cost_usd += cost_usd
    return snapshot(node)

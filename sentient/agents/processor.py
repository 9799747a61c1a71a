"""AgentProcessor: one handler per phase of a node's life (plan, review, atomize, execute,
aggregate, replan), each done by asking the profile's agents. Each handler moves the node through
the transition table and publishes what happened; the scheduler decides *when* handlers run.

It implements the engine's :class:`sentient.engine.processor.NodeProcessor` protocol without
importing the engine: the engine is driven by agents, it does not know them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TypeVar

from loguru import logger
from pydantic import BaseModel

from sentient.agents.config import AgentConfig, Role
from sentient.agents.passages import Passages
from sentient.agents.plans import distinct_subtasks, lists_goal, splits_nothing
from sentient.agents.prompts import (
    aggregate_task,
    atomize_task,
    execute_task,
    modify_task,
    number_is_not_an_answer,
    plan_task,
)
from sentient.agents.registry import Profile
from sentient.agents.runner import AgentCall, AgentRunner
from sentient.agents.schemas import (
    AggregationOutput,
    AnswerOutput,
    AtomizerOutput,
    ExecutionOutput,
    PlanReply,
    quoting_schema,
)
from sentient.context.answer_text import (
    drop_disclaimers,
    drop_unfinished,
    marker_as_answer,
    state_markers,
    written_as_report,
)
from sentient.context.builder import AgentContext, ContextBuilder
from sentient.context.citations import renumber
from sentient.context.evidence import carry_citations, cite_by_evidence, confirmed_by_evidence, confirmed_in
from sentient.context.grounding import Grounded, confirmed_by_quote, ground, opens_confirmed, quotable
from sentient.context.wording import opening, questions
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
from sentient.tools.toolbox import SourceSink, ToolBox

_S = TaskStatus
T = TypeVar("T", bound=BaseModel)
A = TypeVar("A", AnswerOutput, ExecutionOutput)  # an executor's output
REPORT_SOURCES = 3  # of the whole goal's search, shown to the root's aggregator


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
        """Unless root planning is forced, ask the atomizer whether the whole goal is atomic.

        A simple question is then researched and answered in one step, as cheaply as a single
        retrieve-then-answer call; only a compound goal is planned, and a compound question is
        answered directly first (:meth:`_answers_first`).
        """
        if self._settings.force_root_planning:
            return
        if root.unconfirmed_answer is not None:  # resumed: answered first in an earlier run, and planned
            return
        node_type = await self._node_type_for(root, root.goal, root.task_type, [], layer=0)
        if node_type is NodeType.PLAN and self._answers_first(root):
            logger.info(
                "question '{}' is answered directly first; planned only if no source confirms it", root.goal[:60]
            )
            self._answering_first.add(root.task_id)
            node_type = NodeType.EXECUTE
        root.node_type = node_type

    def _answers_first(self, root: TaskNode) -> bool:
        """Whether the root, a question the atomizer would plan, is answered directly first.

        On the dev splits, of the questions its atomizer sent to planning, the embedded model
        answered as many or more this way (Python 19 of 22, private 17 of 21) as when each was
        planned (19, 16), at half the calls (bench/README.md, "answer first, plan if
        unconfirmed"): a source confirmed the direct answer of all but two. A plan is kept for
        those no source confirms. So only a question whose executor searches (a source can
        confirm its answer) is answered first, and only on the atomizer's word
        (``skip_atomization`` plans as configured).
        """
        if not self._settings.answer_first or self._settings.skip_atomization or not questions(root.goal):
            return False
        tools = self._passages.executor_tools(root.task_type)
        return tools is not None and bool(tools.retrieval_tools())

    async def plan(self, node: TaskNode) -> None:
        """PLANNING -> (review) -> ATOMIZATION -> PLAN_DONE, or FAILED; a root whose planner
        fails is executed instead (:meth:`execute`)."""
        self.move(node, _S.PLANNING)
        try:
            agent = self._profile.planner_for(node.parent_id is None)
            reply = await self._ask(
                node,
                Role.PLANNER,
                agent,
                plan_task(node, self._settings.max_subtasks),
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
        # Its subtasks all failed (PLAN_DONE), or its plan was dropped or rejected.
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
        """READY (or PLANNING, see :meth:`plan`) -> EXECUTING -> DONE (or FAILED)."""
        self.move(node, _S.EXECUTING)
        agent = self._profile.executor_for(node.task_type)
        tools = self._toolboxes.get(agent.name)
        try:
            found = await self._passages.for_task(node, tools)
            context = self._context.for_execution(node, found)
            grounded = await self._sourced_answer(node, agent, context, tools)
        except AgentError as exc:
            if node.task_id in self._answering_first:
                await self._plan_instead(node, f"the direct answer failed ({exc})")
                return
            self.fail(node, str(exc))
            return
        node.warnings.extend(grounded.notes)
        if node.parent_id is None:
            grounded = await self._second_look(node, grounded, found)
        if node.task_id in self._answering_first and not opens_confirmed(grounded):
            await self._plan_instead(node, "no source confirms the direct answer", grounded)
            return
        self._answering_first.discard(node.task_id)
        self._finish(node, grounded.text, grounded.sources)

    async def _plan_instead(self, node: TaskNode, why: str, direct: Grounded | None = None) -> None:
        """Plan a question that was answered first (:meth:`decide_root_type`) after all, because
        its ``direct`` answer is unconfirmed (it stands if the plan comes to nothing) or failed."""
        self._answering_first.discard(node.task_id)
        node.warnings.append(f"{why}: the question is planned")
        if direct is not None:
            # On the node, so in the store with its next status: a resumed run keeps it too.
            node.result, node.sources = direct.text, list(direct.sources)
        node.node_type = NodeType.PLAN
        await self.plan(node)

    async def aggregate(self, node: TaskNode) -> None:
        """PLAN_DONE -> AGGREGATING -> DONE; fails without a call if no child succeeded."""
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
        self.move(node, _S.AGGREGATING)
        is_root = node.parent_id is None
        agent = self._profile.aggregator_for(is_root)
        try:
            found = await self._passages.for_report(node) if is_root else []
            context = self._context.for_aggregation(node, found[:REPORT_SOURCES])
            task = aggregate_task(node, is_root=is_root, searched=bool(found))
            output = await self._ask(node, Role.AGGREGATOR, agent, task, context, AggregationOutput)
        except AgentError as exc:
            self.fail(node, f"aggregation failed: {exc}")
            return
        results = [s.text for s in context.sections]
        # The aggregator is not asked again: the result that cites the source says what it states.
        answer, replaced = state_markers(self._whole(node, output.answer), results)
        if replaced:
            node.warnings.append(
                f"{replaced} sentence(s) giving a citation number as the answer replaced by the result citing it"
            )
        answer, carried = carry_citations(answer, results)
        if carried:
            node.warnings.append(f"citations carried over from the subtasks to {carried} sentence(s)")
        # The subtasks' citations were verified where they were made; one of a source found for
        # the report is kept where that source states the clause, as an executor's is.
        grounded = cite_by_evidence(answer, node.goal, context.sources)
        node.warnings.extend(grounded.notes)
        if is_root:
            grounded = await self._second_look(node, grounded, found)
        self._finish(node, grounded.text, grounded.sources)

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
            node.task_id, node.goal, role, agent, task, context, tools, sink, layer, partial(_charge, node), enough
        )
        reply = await self._runner.run(call, schema)
        node.warnings.extend(reply.notes)
        return reply.output

    async def _answer(
        self,
        node: TaskNode,
        agent: AgentConfig,
        task: str,
        context: AgentContext,
        schema: type[A],
        tools: ToolBox | None,
        sink: SourceSink,
    ) -> A:
        """An executor's answer; asked once more, with the reason, when it gives a source's number
        where the answer belongs ("The RFC it is based on is [2]."): such an answer says nothing."""
        output = await self._ask(node, Role.EXECUTOR, agent, task, context, schema, tools, sink)
        sentence = marker_as_answer(output.answer)
        if sentence is None:
            return output
        node.warnings.append(f"the executor gave a citation number as its answer ({sentence!r}): asked again")
        return await self._ask(
            node, Role.EXECUTOR, agent, task + number_is_not_an_answer(sentence), context, schema, tools, sink
        )

    async def _sourced_answer(
        self,
        node: TaskNode,
        agent: AgentConfig,
        context: AgentContext,
        tools: ToolBox | None,
        *,
        strict: bool = False,
        quote_first: bool = False,
    ) -> Grounded:
        """An executor's answer from ``context``'s sources, its citations checked (``strict``: see
        :func:`execute_task`). ``quote_first``: the embedded model too copies its supporting
        sentences before it answers, as hosted models always do, held to those it was shown."""
        sink = SourceSink(context.sources)
        grammar = bool(context.sources) and self._runner.decodes_under_grammar(agent)
        if grammar and not quote_first:
            # The embedded model answers from its sources more often when asked for the answer
            # alone (bench/README.md, answer quality); its [n] are checked against the sources here.
            task = execute_task(node, has_sources=True, quoting=False, strict=strict)
            plain = await self._answer(node, agent, task, context, AnswerOutput, tools, sink)
            return cite_by_evidence(self._whole(node, plain.answer), node.goal, sink.sources)
        task = execute_task(node, has_sources=bool(context.sources), strict=strict)
        # Under a grammar, the embedded model may only quote a sentence it was shown.
        schema = quoting_schema(quotable(context.sources)) if grammar else ExecutionOutput
        output = await self._answer(node, agent, task, context, schema, tools, sink)
        return ground(self._whole(node, output.answer), output.citations, sink.sources)

    async def _second_look(self, node: TaskNode, answer: Grounded, found: Sequence[Source]) -> Grounded:
        """The root's ``answer``, or, when no source confirms it, a second look's answer that one does.

        An answer is confirmed when its first sentence, the direct answer, cites a verified
        source (supporting facts cited below an uncited answer do not confirm it). One that does
        not rests on the model: the executor may answer from memory when its sources do not hold
        the answer, and a plan can go astray. The second look asks the SEARCH executor once more,
        shown only the goal and passages (``found``, searched for the goal itself, and what a
        search with the answer's words adds: :meth:`Passages.to_confirm`), to answer from them alone,
        copying the sentences that support it first (quote-first: the embedded model, which
        answers plainly elsewhere, then answers from the sentence it found, not from memory);
        its answer is kept if a quote confirms it (:func:`confirmed_by_quote`), else the
        research's answer stays (bench/README.md, "a second look"), cited where a passage the
        second look read states it (:func:`_cited_if_stated`; also when the second look fails
        or the budget has no room for it). The replaced answer stays in the node's trace. Only
        the answer to a question, in one paragraph, gets one: a report that was asked for ("Write
        an overview of …") or that was written as one (headings, paragraphs, lists) is not
        replaced by a short answer. It is optional work: it runs only where the budget has room
        for it at its worst, so it never stops a run that has its answer.
        """
        if not self._settings.second_look or not found or not questions(node.goal):
            return answer
        if written_as_report(answer.text):
            return answer
        if opens_confirmed(answer):
            return answer
        agent = self._profile.executor_for(TaskType.SEARCH)
        tools = self._toolboxes.get(agent.name)
        passages = await self._passages.to_confirm(node, answer, found, tools)
        context = self._context.for_second_look(node, passages)
        if not self._runner.has_room(agent, context.tokens):
            node.warnings.append("no second look at the unconfirmed answer: the budget has no room left for it")
            return _cited_if_stated(node, answer, context.sources)
        try:
            second = await self._sourced_answer(node, agent, context, tools, strict=True, quote_first=True)
        except AgentError as exc:
            node.warnings.append(f"second look failed, the unconfirmed answer is kept: {exc}")
            return _cited_if_stated(node, answer, context.sources)
        confirmed = confirmed_by_quote(second, node.goal) or confirmed_by_evidence(second, node.goal)
        if confirmed is None:
            node.warnings.append("second look: no source states its answer either; the first answer is kept")
            return _cited_if_stated(node, answer, context.sources)
        node.warnings.append("no source confirmed the answer: replaced by a second look's, which a source states")
        node.warnings.extend(second.notes)
        if renumber(opening(confirmed.text), {}) != renumber(opening(second.text), {}):
            node.warnings.append("second look: its answer only restated the question; the sentence it quoted answers")
        return confirmed

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
        task = modify_task(node, plan, instructions)
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
        if await self._passages.is_lookup(goal, task_type):
            logger.info("task '{}' is a lookup: one passage holds its words; executed directly", goal[:60])
            return NodeType.EXECUTE
        context = self._context.for_atomizing(node, goal, plan_goals)
        try:
            task = atomize_task(goal, task_type.value)
            verdict = await self._ask(
                node, Role.ATOMIZER, self._profile.atomizer, task, context, AtomizerOutput, layer=layer
            )
        except AgentError as exc:
            node.warnings.append(f"atomizer failed for '{goal[:60]}', executing it directly: {exc}")
            return NodeType.EXECUTE
        return NodeType.EXECUTE if verdict.is_atomic else NodeType.PLAN

    @staticmethod
    def _whole(node: TaskNode, answer: str) -> str:
        """``answer`` without a last sentence the model stopped in the middle of (noted on the node)."""
        answer, unfinished = drop_unfinished(answer)
        if unfinished is not None:
            node.warnings.append(f"the answer's last sentence stopped mid-way and was removed: {unfinished!r}")
        return answer

    def _finish(self, node: TaskNode, answer: str, sources: Sequence[Source]) -> None:
        # A citation must resolve: numbers beyond the offered (or tool-found) sources are removed.
        answer = renumber(answer, {n: n for n in range(1, len(sources) + 1)}).strip()
        answer, disclaimers = drop_disclaimers(answer, sources)
        if disclaimers:
            node.warnings.append(f"{disclaimers} sentence(s) saying the sources do not confirm a cited answer removed")
        node.result = answer
        node.sources = list(sources)
        self.move(node, _S.DONE)


def _cited_if_stated(node: TaskNode, answer: Grounded, passages: Sequence[Source]) -> Grounded:
    """The first ``answer``, kept without a second look's, cited where one of the ``passages``
    the second look was (or would have been) shown states it (:func:`confirmed_in`): the search
    with the answer's own words may have found one. No model call."""
    kept = confirmed_in(answer, node.goal, passages)
    if kept is None:
        return answer
    node.warnings.append("a passage the second look read states the first answer: cited there")
    return kept


def _charge(node: TaskNode, input_tokens: int, output_tokens: int, cost_usd: float) -> NodeSnapshot:
    """Count one agent call (failed ones too: they used tokens) on ``node``; its snapshot for the call's event."""
    node.agent_calls += 1
    node.input_tokens += input_tokens
    node.output_tokens += output_tokens
    node.cost_usd += cost_usd
    return snapshot(node)

"""AgentRunner: one agent call on agno, with a timeout, bounded concurrency and validation retries.

An output that does not validate against its pydantic schema is retried with the validation
error fed back to the model. After the last retry the call fails with
:class:`AgentOutputError`; it never turns into a raw string result.

Calls go through agno's model layer (``Model.aresponse``: provider clients, message format,
JSON-schema response formats, the tool-call loop, token metrics). The agno ``Agent`` wrapper is
not used: its chat-session bookkeeping cost 0.5 ms of event-loop time per call (measured with
``bench/engine_bench.py``; a sixth of T2's makespan), it turns model exceptions into string
content, and it logs to stdout. Sentient's agent is the ``AgentConfig`` plus this runner.

Around each model call, in order: the response cache (a hit costs no call), the run's
concurrency slots, then for hosted models the provider's gate (requests per minute, adaptive
concurrency) with retries and exponential backoff on 429 / 5xx / connection errors / malformed
answers; every attempt has the timeout and all attempts together the call's deadline. Every
request reserves its estimated cost in the run's budget before it is sent and settles the real
cost after, so a cost limit is overshot by at most one request's estimate.

A model that decodes under a grammar (the embedded one) has no provider tool-call loop: it calls
its tools through the grammar, in a bounded loop of requests (:mod:`sentient.agents.tool_loop`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, Generic, TypeVar

from agno.metrics import RunMetrics
from agno.models.message import Message
from agno.models.response import ModelResponse
from agno.run.agent import RunOutput
from agno.tools.function import Function
from loguru import logger
from pydantic import BaseModel, ValidationError

from sentient.agents.config import AgentConfig, Role
from sentient.agents.json_repair import extract_json
from sentient.agents.models.cache import CachedResponse, ResponseCache
from sentient.agents.models.embedded import ENOUGH_KEY, Enough
from sentient.agents.models.factory import ModelHandle
from sentient.agents.models.providers import Provider, response_format_for, schema_name
from sentient.agents.models.resilience import DeadlineExceeded, call_with_retries, describe
from sentient.agents.prompts import TaskPrompts
from sentient.agents.tool_loop import ToolRequest, describe_tools, step_schema, tool_request
from sentient.budget import Budget
from sentient.context.builder import AgentContext, estimate_tokens
from sentient.events import AgentCallFinished, EventBus, NodeSnapshot
from sentient.exceptions import (
    AgentError,
    AgentOutputError,
    AgentTimeoutError,
    BudgetExhaustedError,
    MalformedResponseError,
    ModelError,
)
from sentient.graph.node import Source
from sentient.tools.base import Tool
from sentient.tools.toolbox import SourceSink, ToolBox, ToolCall

T = TypeVar("T", bound=BaseModel)
_MIN_OUTPUT_ESTIMATE = 1000  # output tokens reserved per request before any answer was seen


@dataclass(frozen=True)
class AgentCall:
    """Everything one agent call needs."""

    task_id: str
    goal: str
    role: Role
    agent: AgentConfig
    task: str
    context: AgentContext
    tools: ToolBox | None = None  # offered to models that run a tool-call loop, or call tools under a grammar
    sink: SourceSink | None = None  # numbers the sources tools return; the node cites them
    layer: int = 0  # depth of the task the call is about (an atomizer decides for the layer below)
    # Counts the call (input tokens, output tokens, cost) on its node, once, and returns the node's
    # snapshot for the call's event; None: the call is charged to no node.
    charge: Callable[[int, int, float], NodeSnapshot] | None = None
    # Whether the output so far is all the caller needs: the embedded model stops there (a plan
    # that already lists its own goal); other models ignore it. Its JSON is then closed as a cut-off's.
    enough: Enough | None = None
    # The run's tasks: a model that calls its tools under a grammar is offered them, and given their
    # results, in these words. None: it is not offered its tools.
    prompts: TaskPrompts | None = None


@dataclass(frozen=True)
class AgentReply(Generic[T]):
    output: T
    attempts: int
    input_tokens: int
    output_tokens: int
    notes: tuple[str, ...] = ()  # e.g. that a cut-off output was repaired
    cost_usd: float = 0.0


@dataclass
class _Tally:
    """What one agent call (all its attempts) used."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    model_calls: int = 0
    cache_hits: int = 0


class _InvalidOutput(Exception):
    def __init__(self, error: str, raw: str) -> None:
        super().__init__(error)
        self.error = error
        self.raw = raw


class AgentRunner:
    """Runs agent calls for one run. Dependencies come in through the constructor."""

    def __init__(
        self,
        model_for: Callable[[AgentConfig], ModelHandle],
        bus: EventBus,
        *,
        max_concurrent: int,
        timeout_s: float,
        max_validation_retries: int,
        budget: Budget | None = None,
        max_transient_attempts: int = 4,
        backoff_s: tuple[float, float] = (1.0, 30.0),
        deadline_s: float | None = None,
        local_timeout_s: float | None = None,
        max_tool_steps: int = 0,
    ) -> None:
        self._model_for = model_for
        self._bus = bus
        self._slots = asyncio.Semaphore(max_concurrent)
        self._timeout_s = timeout_s
        # The embedded model is CPU-bound: on a busy machine one call can take minutes.
        self._local_timeout_s = local_timeout_s if local_timeout_s is not None else timeout_s
        # All attempts of one model request together, backoff included (hosted models).
        self._deadline_s = deadline_s if deadline_s is not None else 3 * timeout_s
        self._expected_output_tokens = _MIN_OUTPUT_ESTIMATE  # grows to the largest answer seen
        self._retries = max_validation_retries
        self._budget = budget
        self._transient_attempts = max_transient_attempts
        self._backoff_s = backoff_s
        self._max_tool_steps = max_tool_steps  # tool calls of a model under a grammar before it must answer

    def decodes_under_grammar(self, agent: AgentConfig) -> bool:
        """Whether ``agent``'s model is held to the output schema's grammar (the embedded one)."""
        return self._model_for(agent).grammar

    def has_room(self, agent: AgentConfig, prompt_tokens: int) -> bool:
        """Whether the budget has room for one more call of ``agent`` at its worst: every attempt
        it may make, each at the estimated cost of a ``prompt_tokens`` prompt, for its whole timeout."""
        if self._budget is None:
            return True
        handle = self._model_for(agent)
        requests = (self._retries + 1) * self._transient_attempts
        estimate = self._estimate(handle, agent, prompt_tokens)
        return self._budget.has_room(requests, requests * estimate, self._timeout_for(handle))

    def _estimate(self, handle: ModelHandle, agent: AgentConfig, prompt_tokens: int) -> float:
        """What one request of ``agent`` with a ``prompt_tokens`` prompt is expected to cost, its
        answer as long as the longest seen so far."""
        return handle.price.cost(estimate_tokens(agent.instructions) + prompt_tokens, self._expected_output_tokens)

    async def run(self, call: AgentCall, schema: type[T]) -> AgentReply[T]:
        """Run ``call`` until its output validates as ``schema``; raise AgentError otherwise."""
        handle = self._model_for(call.agent)
        base_prompt = f"{call.context.render()}\n\n## Your task\n{call.task}"
        prompt = base_prompt
        started, clock = time.time(), time.perf_counter()
        tally = _Tally()
        attempts = 0
        raw: str | None = None
        last_invalid: _InvalidOutput | None = None
        notes: list[str] = []
        try:
            # A plain loop, not tenacity's AsyncRetrying: its objects form reference cycles (about 40
            # a call) that only the cyclic garbage collector frees, a quarter of T3's CPU time per node.
            while True:
                attempts += 1
                prompt = _with_feedback(base_prompt, last_invalid)
                try:
                    raw, output = await self._attempt(call, handle, prompt, schema, attempts, tally, notes)
                    break
                except _InvalidOutput as invalid:
                    if attempts > self._retries:
                        raise
                    last_invalid = invalid
        except _InvalidOutput as exc:
            error = AgentOutputError(
                f"output did not match {schema_name(schema)} after {attempts} attempt(s): {exc.error}",
                attempts=attempts,
                agent=call.agent.name,
                task_id=call.task_id,
            )
            self._publish(call, handle, prompt, exc.raw, error, attempts, tally, started, clock)
            raise error from None
        except AgentError as exc:
            self._publish(call, handle, prompt, raw, exc, attempts, tally, started, clock)
            raise
        self._publish(call, handle, prompt, raw, None, attempts, tally, started, clock)
        return AgentReply(output, attempts, tally.input_tokens, tally.output_tokens, tuple(notes), tally.cost_usd)

    async def _attempt(
        self,
        call: AgentCall,
        handle: ModelHandle,
        prompt: str,
        schema: type[T],
        attempt: int,
        tally: _Tally,
        notes: list[str],
    ) -> tuple[str, T]:
        acting = self._acting_tools(call, handle)
        if acting:
            raw = await self._tool_loop(call, handle, prompt, schema, attempt, tally, acting)
        else:
            tools = call.tools if call.tools is not None and call.sink is not None and handle.native_tools else None
            raw = await self._request(
                call,
                handle,
                [("user", prompt)],
                response_format_for(handle.model, schema),
                _schema_of(schema),
                attempt,
                tally,
                tools,
            )
        text, repaired = extract_json(raw)
        try:
            output = schema.model_validate_json(text)
        except ValidationError as exc:
            raise _InvalidOutput(_summarise(exc), raw) from exc
        if repaired and not (call.enough is not None and call.enough(raw)):
            notes.append(f"{call.role.value} output was cut off (token limit) and its JSON was closed")
        return raw, output

    def _acting_tools(self, call: AgentCall, handle: ModelHandle) -> list[Tool]:
        """The tools ``call``'s model calls in a tool loop under its grammar; none for other models."""
        if not handle.grammar or not self._max_tool_steps or call.prompts is None:
            return []
        if call.tools is None or call.sink is None:
            return []
        return call.tools.acting_tools()

    async def _tool_loop(
        self,
        call: AgentCall,
        handle: ModelHandle,
        prompt: str,
        schema: type[BaseModel],
        attempt: int,
        tally: _Tally,
        acting: list[Tool],
    ) -> str:
        """The answer of a model that may call ``acting`` tools first: each step it answers under a
        grammar that lets it call one of them or answer as ``schema``; a tool's result is added to
        the conversation and the model asked again. After ``max_tool_steps`` calls, or a call it
        made before (its result is above already), it must answer."""
        assert call.tools is not None and call.sink is not None and call.prompts is not None
        answer = _schema_of(schema)
        turns = [("user", f"{prompt}\n\n{call.prompts.use_tools_task(describe_tools(acting))}")]
        made: list[ToolRequest] = []
        repeated = False  # it asked for a call it made before: its result is above, it answers now
        while True:
            offered = acting if len(made) < self._max_tool_steps and not repeated else []
            json_schema = step_schema(offered, answer) if offered else answer
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": schema_name(schema), "schema": json_schema},
            }
            raw = await self._request(call, handle, turns, response_format, json_schema, attempt, tally, None)
            request = tool_request(raw, [tool.name for tool in offered])
            if isinstance(request, str):
                return request
            repeated = request in made
            if repeated:
                continue
            made.append(request)
            result = await call.tools.call(request.tool, request.arguments, call.sink)
            turns += [("assistant", raw), ("user", call.prompts.tool_result_task(request.tool, result))]

    async def _request(
        self,
        call: AgentCall,
        handle: ModelHandle,
        turns: list[tuple[str, str]],
        response_format: dict[str, Any] | type[BaseModel],
        json_schema: dict[str, Any],
        attempt: int,
        tally: _Tally,
        tools: ToolBox | None,
    ) -> str:
        """One model request of the conversation ``turns`` (role, text), answered from the response
        cache when it can be; its tokens and cost go to ``tally``."""
        key = None
        if handle.cache is not None:
            key = ResponseCache.key(
                handle.name,
                [
                    {"role": "system", "content": call.agent.instructions},
                    *({"role": r, "content": t} for r, t in turns),
                ],
                json_schema,
                list(tools.names) if tools is not None else [],
            )
        cached = handle.cache.get(key) if handle.cache is not None and key is not None else None
        if cached is not None:
            tally.input_tokens += cached.input_tokens
            tally.output_tokens += cached.output_tokens
            tally.cache_hits += 1
            _replay_tools(cached.extra, call.sink)
            return cached.content
        found_before = len(call.sink) if call.sink is not None else 0
        raw, used_in, used_out = await self._call_model(call, handle, turns, response_format, attempt, tools)
        tally.input_tokens += used_in
        tally.output_tokens += used_out
        tally.cost_usd += handle.price.cost(used_in, used_out)
        tally.model_calls += 1
        if handle.cache is not None and key is not None:
            extra = _tool_record(call.sink, found_before) if tools is not None else {}
            handle.cache.put(key, handle.name, CachedResponse(raw, used_in, used_out, extra))
        return raw

    async def _call_model(
        self,
        call: AgentCall,
        handle: ModelHandle,
        turns: list[tuple[str, str]],
        response_format: dict[str, Any] | type[BaseModel],
        attempt: int,
        tools: ToolBox | None,
    ) -> tuple[str, int, int]:
        """One model call of the conversation ``turns`` asking for ``response_format``: (raw
        content, input tokens, output tokens). Raises AgentError."""
        budget = self._budget
        estimate = self._estimate(handle, call.agent, sum(estimate_tokens(text) for _, text in turns))
        requests = 0
        cost = 0.0

        async def refused() -> BudgetExhaustedError:
            await asyncio.sleep(0)  # the engine was told to stop: its cancellation lands here
            reason = budget.exhausted if budget is not None else None
            return BudgetExhaustedError(reason or "budget reached", agent=call.agent.name, task_id=call.task_id)

        async def request() -> tuple[ModelResponse, RunMetrics]:
            nonlocal requests, cost
            # Every request counts: the reservation counted the first, each retry counts again.
            if requests and budget is not None and not budget.count_retry():
                raise await refused()
            requests += 1
            # Fresh messages per try: agno appends the assistant's reply to the list it is given.
            messages = [
                Message(role="system", content=call.agent.instructions),
                *(Message(role=role, content=text) for role, text in turns),
            ]
            # The run record carries who is calling to the model (the scripted fake answers by role).
            # Its metrics sum the tokens of every request of a tool-call loop.
            run = RunOutput(
                metrics=RunMetrics(),
                run_id=f"{call.task_id}:{call.role.value}:{attempt}",
                agent_name=call.agent.name,
                metadata={
                    "task_id": call.task_id,
                    "role": call.role.value,
                    "agent": call.agent.name,
                    "goal": call.goal,
                    "layer": call.layer,
                    "attempt": attempt,
                    **({ENOUGH_KEY: call.enough} if call.enough is not None else {}),
                },
            )
            functions: list[Function | dict[str, Any]] | None = None
            if tools is not None and call.sink is not None:
                functions = [*tools.agno_functions(call.sink)]
            response = await handle.model.aresponse(
                messages=messages,
                response_format=response_format,
                run_response=run,
                tools=functions,
            )
            assert run.metrics is not None
            cost = handle.price.cost(run.metrics.input_tokens or 0, run.metrics.output_tokens or 0)
            # A tool-call loop sent one request per assistant message; the first is counted already.
            extra = sum(1 for m in messages if m.role == "assistant") - 1
            if extra > 0 and budget is not None:
                budget.charge(0.0, extra)
            return response, run.metrics

        # The call reserves its estimated cost before it is sent, and settles the real cost after.
        if budget is not None and not await budget.reserve(estimate):
            raise await refused()
        try:
            async with self._slots:
                response, metrics = await self._send(call, handle, request)
        except DeadlineExceeded as exc:
            raise AgentTimeoutError(
                exc.deadline_s, agent=call.agent.name, task_id=call.task_id, detail=str(exc)
            ) from None
        except TimeoutError:
            raise AgentTimeoutError(self._timeout_for(handle), agent=call.agent.name, task_id=call.task_id) from None
        except AgentError as exc:
            if not isinstance(exc, MalformedResponseError):
                raise  # already says what happened (a budget refusal, the fake's injected failure)
            raise ModelError(
                f"model call failed after {requests} attempt(s): {describe(exc)}",
                agent=call.agent.name,
                task_id=call.task_id,
            ) from exc
        except Exception as exc:  # the provider boundary: any failure of the model is a ModelError
            tries = f" after {requests} attempts" if requests > 1 else ""
            text = str(exc).strip() or type(exc).__name__  # some SDK errors have no message
            raise ModelError(f"model call failed{tries}: {text}", agent=call.agent.name, task_id=call.task_id) from exc
        finally:
            if budget is not None:
                budget.settle(estimate, cost)
        content = response.content
        raw = content if isinstance(content, str) else json.dumps(content, default=str)
        used_out = metrics.output_tokens or 0
        self._expected_output_tokens = max(self._expected_output_tokens, used_out)
        return raw, metrics.input_tokens or 0, used_out

    def _timeout_for(self, handle: ModelHandle) -> float:
        # Embedded handles are named "local:<weights>" (the name keys the response cache).
        is_local = handle.name.partition(":")[0] == Provider.LOCAL.value
        return self._local_timeout_s if is_local else self._timeout_s

    async def _send(
        self,
        call: AgentCall,
        handle: ModelHandle,
        request: Callable[[], Awaitable[tuple[ModelResponse, RunMetrics]]],
    ) -> tuple[ModelResponse, RunMetrics]:
        """``request()`` under the attempt timeout; for hosted models through the provider's gate,
        with retries of transient failures within the call's deadline."""
        if handle.gate is None:
            async with asyncio.timeout(self._timeout_for(handle)):
                return await request()
        return await call_with_retries(
            request,
            handle.gate,
            max_attempts=self._transient_attempts,
            base_delay_s=self._backoff_s[0],
            max_delay_s=self._backoff_s[1],
            attempt_timeout_s=self._timeout_s,
            deadline_s=self._deadline_s,
            on_retry=lambda n, exc, delay: logger.warning(
                "{} {}: {} (attempt {}), retrying in {:.1f}s", call.task_id, handle.name, describe(exc), n, delay
            ),
        )

    def _publish(
        self,
        call: AgentCall,
        handle: ModelHandle,
        prompt: str,
        response: str | None,
        error: Exception | None,
        attempts: int,
        tally: _Tally,
        started: float,
        clock: float,
    ) -> None:
        latency = time.perf_counter() - clock
        logger.info(
            "{} {} ({}) {} in {:.1f}s, {} attempt(s), {}+{} tokens{}",
            call.task_id,
            call.role.value,
            call.agent.name,
            "failed" if error else "done",
            latency,
            attempts,
            tally.input_tokens,
            tally.output_tokens,
            ", from cache" if tally.cache_hits and not tally.model_calls else "",
        )
        node = call.charge(tally.input_tokens, tally.output_tokens, tally.cost_usd) if call.charge else None
        self._bus.publish(
            AgentCallFinished(
                task_id=call.task_id,
                role=call.role.value,
                agent=call.agent.name,
                model=handle.name,
                prompt=prompt,
                context=call.context.to_trace(),
                response=response,
                error=str(error) if error else None,
                attempts=attempts,
                input_tokens=tally.input_tokens,
                output_tokens=tally.output_tokens,
                started_at=started,
                latency_s=latency,
                cost_usd=tally.cost_usd,
                cached=tally.cache_hits > 0 and tally.model_calls == 0,
                tool_calls=tuple(asdict(c) for c in call.sink.calls) if call.sink is not None else (),
                node=node,
            )
        )


@functools.lru_cache(maxsize=64)
def _schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    return schema.model_json_schema()


def _tool_record(sink: SourceSink | None, found_before: int) -> dict[str, Any]:
    """What the call's tools found, kept with a cached response so a cache hit cites the same."""
    if sink is None:
        return {}
    return {
        "sources": [s.model_dump() for s in sink.sources[found_before:]],
        "tool_calls": [asdict(c) for c in sink.calls],
    }


def _replay_tools(extra: dict[str, Any], sink: SourceSink | None) -> None:
    if sink is None:
        return
    for source in extra.get("sources", ()):
        sink.add(Source.model_validate(source))
    for call in extra.get("tool_calls", ()):
        sink.record(ToolCall(**call))


def _summarise(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def _with_feedback(base_prompt: str, exc: _InvalidOutput | None) -> str:
    if exc is None:
        return base_prompt
    previous = exc.raw if len(exc.raw) <= 800 else exc.raw[:800] + "..."
    return (
        f"{base_prompt}\n\n## Your previous answer was invalid\n{previous}\n\n"
        f"Validation error: {exc.error}\nAnswer again with JSON that matches the schema exactly."
    )

"""ScriptedModel: a deterministic agno model for tests and benchmarks.

It answers each agent call from a script keyed by role (planner, atomizer, executor,
aggregator, plan_modifier, verifier). A script entry is a fixed output or a function of the
:class:`FakeRequest`; an output may be a pydantic model, a dict, raw text (returned verbatim,
e.g. to test invalid JSON) or an exception (raised as a model failure). Optional latency per
call, and every call is recorded with monotonic timestamps so tests can check ordering.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agno.metrics import MessageMetrics
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse
from pydantic import BaseModel

from sentient.agents.models.embedded import ENOUGH_KEY, Enough
from sentient.agents.schemas import (
    AggregationOutput,
    AtomizerOutput,
    ExecutionOutput,
    Items,
    Outline,
    OutlineSection,
    QuestionPlan,
    ReportFrame,
)
from sentient.context.grounding import Reading, Verdict
from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask


@dataclass(frozen=True)
class FakeRequest:
    """What the fake model knows about the call it is answering."""

    role: str
    agent: str
    task_id: str
    goal: str
    prompt: str
    attempt: int
    layer: int = 0  # of the task the call is about; an atomizer call decides for that layer
    enough: Enough | None = None  # the caller's stop condition (the runner's AgentCall.enough)
    response_format: Any = None  # the structured output asked for (a JSON-schema request or a class)


@dataclass
class FakeCall:
    """A recorded call: the request, when it started and ended (``time.monotonic``), and the outcome."""

    request: FakeRequest
    started_at: float
    finished_at: float = 0.0
    output: str | None = None
    error: str | None = None


Output = BaseModel | dict[str, Any] | str | BaseException
_LISTED_SOURCE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)
SOURCES_HEADING = "## Sources you may cite as [n]"


def listed_passages(prompt: str) -> dict[int, str]:
    """The sources a prompt lists (the context's "Sources you may cite" block): number -> the first
    line of its passage (after "title: ")."""
    if SOURCES_HEADING not in prompt:
        return {}
    listed = _LISTED_SOURCE.finditer(prompt.split(SOURCES_HEADING)[-1])
    return {int(m.group(1)): m.group(2).partition(": ")[2] or m.group(2) for m in listed}


def listed_sources(prompt: str) -> list[int]:
    """The numbers of the sources a prompt lists."""
    return list(listed_passages(prompt))


def asks_for(request: FakeRequest, field_name: str) -> bool:
    """Whether the structured output the request asks for has a field ``field_name``."""
    schema = request.response_format
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return field_name in schema.model_fields
    return f'"{field_name}"' in json.dumps(schema, default=str)


Responder = Output | Callable[[FakeRequest], Output]


def executor_answer(request: FakeRequest, answer: str, *, sourced: bool = True) -> Output:
    """An executor's ``answer`` in the shape the request asks for. Answering from passages, it
    names the first one it was shown as the one that states it (``sourced``), and copies that
    passage's first words as the answer's few words; else it names 0 (its own knowledge). Its [n]
    markers are left to the code. Asked for the passages that state it (a report's question), it
    names those ``answer`` cites, or else the first it was shown (``sourced``), with the first
    words of the first it names as its key words. Otherwise the
    answer as written."""
    if not (asks_for(request, "answers") or asks_for(request, "source")):
        return ExecutionOutput(answer=answer)
    unmarked = re.sub(r"\s*\[\d+\]", "", answer)
    passages = listed_passages(request.prompt) if sourced else {}
    if asks_for(request, "answers"):
        cited = [int(n) for n in re.findall(r"\[(\d+)\]", answer)] or list(passages)[:1]
        return {"answers": [{"answer": unmarked, "keys": [_first_words(passages, cited)], "sources": cited}]}
    first = next(iter(passages), 0)
    return {"answer": unmarked, "short": _first_words(passages, [first]), "source": first}


def _first_words(passages: dict[int, str], cited: list[int]) -> str:
    """The first two words of the first ``cited`` passage shown ("" when none was)."""
    return " ".join(passages[cited[0]].split()[:2]) if cited and cited[0] in passages else ""


def _stopped(text: str, enough: Enough) -> str:
    """``text`` up to the first closing brace after which ``enough`` holds: where the embedded
    model stops generating (:class:`~sentient.agents.models.embedded.LlamaRuntime`)."""
    for at, char in enumerate(text):
        if char == "}" and enough(text[: at + 1]):
            return text[: at + 1]
    return text


def default_response(request: FakeRequest) -> Output:
    """A valid answer for any role: two-step plans for the root (a first lookup for a question planned
    after its direct answer), atomic subtasks, echoing executors;
    a report's outline of two sections, two items for a fan-out, and a title and summary."""
    if request.role == "planner" and asks_for(request, "sections"):
        return Outline(sections=[OutlineSection(title=f"Part {i} of {request.goal}", find=["What?"]) for i in (1, 2)])
    if request.role == "planner" and asks_for(request, "items") and not asks_for(request, "subtasks"):
        return Items(items=["First item", "Second item"])
    if request.role == "aggregator" and asks_for(request, "summary"):
        return ReportFrame(title=f"Report: {request.goal}", summary=f"Summary of {request.goal}")
    if request.role == "planner" and asks_for(request, "first"):  # a question no passage answered as asked
        return QuestionPlan(question=request.goal, first=f"Find facts about: {request.goal}", then=request.goal)
    if request.role in ("planner", "plan_modifier"):
        return PlanOutput(
            subtasks=[
                SubTask(goal=f"Find facts about: {request.goal}", task_type=TaskType.SEARCH),
                SubTask(goal=f"Write up: {request.goal}", task_type=TaskType.WRITE, depends_on_indices=[0]),
            ]
        )
    if request.role == "atomizer":
        return AtomizerOutput(is_atomic=request.layer > 0)
    if request.role == "aggregator":
        return AggregationOutput(answer=f"Summary of {request.task_id}: {request.goal}")
    if request.role == "verifier":
        if asks_for(request, "source"):  # its second reading finds no passage the executor missed
            return {"source": 0}
        if asks_for(request, "answer"):  # reading the passage alone, it finds what the executor found
            return Reading(answer=_first_words(listed_passages(request.prompt), [1]))
        return Verdict(supports=True)
    return executor_answer(request, f"Result of {request.task_id}: {request.goal}")


@dataclass
class ScriptedModel(Model):
    """An agno model that answers from a script instead of a network or weights."""

    id: str = "scripted"
    name: str = "Scripted"
    provider: str = "fake"
    supports_json_schema_outputs: bool = True
    script: dict[str, Responder] = field(default_factory=dict)
    latency: float | Callable[[FakeRequest], float] = 0.0
    calls: list[FakeCall] = field(default_factory=list)
    grammar: bool = False  # asked as the embedded model is (decoded under the schema's grammar, stopped when enough)

    def _request(self, messages: list[Message], run_response: Any, response_format: Any = None) -> FakeRequest:
        meta = (getattr(run_response, "metadata", None) or {}) if run_response is not None else {}
        prompt = next((m.get_content_string() for m in reversed(messages) if m.role == "user"), "")
        return FakeRequest(
            role=str(meta.get("role", "executor")),
            agent=str(meta.get("agent", "")),
            task_id=str(meta.get("task_id", "")),
            goal=str(meta.get("goal", "")),
            prompt=prompt,
            attempt=int(meta.get("attempt", 1)),
            layer=int(meta.get("layer", 0)),
            enough=meta.get(ENOUGH_KEY),
            response_format=response_format,
        )

    def _answer(self, request: FakeRequest, call: FakeCall) -> ModelResponse:
        responder = self.script.get(request.role, default_response)
        output = responder(request) if callable(responder) and not isinstance(responder, type) else responder
        call.finished_at = time.monotonic()
        if isinstance(output, BaseException):
            call.error = str(output)
            raise output  # as a provider would; the runner maps it to a ModelError
        if isinstance(output, BaseModel):
            text = output.model_dump_json()
        elif isinstance(output, dict):
            text = json.dumps(output)
        else:
            text = str(output)
        if self.grammar and request.enough is not None:
            text = _stopped(text, request.enough)
        call.output = text
        tokens_in = max(1, len(request.prompt) // 4)
        tokens_out = max(1, len(text) // 4)
        usage = MessageMetrics(input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out)
        return ModelResponse(role="assistant", content=text, response_usage=usage)

    def _latency_for(self, request: FakeRequest) -> float:
        return self.latency(request) if callable(self.latency) else self.latency

    async def ainvoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        request = self._request(messages, kwargs.get("run_response"), kwargs.get("response_format"))
        call = FakeCall(request=request, started_at=time.monotonic())
        self.calls.append(call)
        delay = self._latency_for(request)
        if delay > 0:
            await asyncio.sleep(delay)
        return self._answer(request, call)

    def invoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        request = self._request(messages, kwargs.get("run_response"), kwargs.get("response_format"))
        call = FakeCall(request=request, started_at=time.monotonic())
        self.calls.append(call)
        delay = self._latency_for(request)
        if delay > 0:
            time.sleep(delay)
        return self._answer(request, call)

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        yield self.invoke(*args, **kwargs)

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        yield await self.ainvoke(*args, **kwargs)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response

    def calls_for(self, role: str | None = None, task_id: str | None = None) -> list[FakeCall]:
        """Recorded calls, optionally filtered by role and/or task id."""
        return [
            c
            for c in self.calls
            if (role is None or c.request.role == role) and (task_id is None or c.request.task_id == task_id)
        ]

"""The tool loop of a model that decodes under a grammar (the embedded one): a THINK step calls
the calculator through the grammar, gets its result, and answers; at most ``max_tool_steps`` calls."""

from __future__ import annotations

import json

from llama_cpp.llama_grammar import LlamaGrammar
from pydantic import BaseModel

from sentient.agents.models.fake import FakeRequest, Output, ScriptedModel, asks_for, default_response, executor_answer
from sentient.agents.schemas import sourced_schema
from sentient.agents.tool_loop import step_schema, tool_request
from sentient.events import AgentCallFinished
from sentient.graph.node import TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus
from sentient.tools.base import ToolSettings
from sentient.tools.calculator import Calculator
from sentient.tools.functions import FunctionTool
from sentient.tools.toolbox import ToolBox

GOAL = "Work out the discount on an order of 2,348 euros"
THINK = "What is 17.5% of 2,348?"
PLAN = PlanOutput(
    subtasks=[
        SubTask(goal="Which discount rate applies to orders over 2,000 euros?", task_type=TaskType.SEARCH),
        SubTask(goal=THINK, task_type=TaskType.THINK, depends_on_indices=[0]),
    ]
)
EXPRESSION = "2348 * 17.5 / 100"
RESULT = f"{EXPRESSION} = 410.9"  # the calculator's answer


def offers_tools(request: FakeRequest) -> bool:
    return asks_for(request, "tool")


def calculating(request: FakeRequest) -> Output:
    """A think executor that calls the calculator when it may and has no result yet, then answers."""
    if request.agent != "think_executor":
        return default_response(request)
    if offers_tools(request) and RESULT not in request.prompt:
        return {"tool": "calculator", "arguments": {"expression": EXPRESSION}}
    return executor_answer(request, "The discount is 410.9 euros.")


def always_calculating(request: FakeRequest) -> Output:
    """A think executor that calls the calculator whenever it may, each time with a new expression."""
    if request.agent == "think_executor" and offers_tools(request):
        return {"tool": "calculator", "arguments": {"expression": f"{EXPRESSION} + {request.prompt.count(' = ')}"}}
    return default_response(request) if request.agent != "think_executor" else executor_answer(request, "410.9")


def repeating(request: FakeRequest) -> Output:
    """A think executor that calls the calculator with the same expression whenever it may."""
    if request.agent == "think_executor" and offers_tools(request):
        return {"tool": "calculator", "arguments": {"expression": EXPRESSION}}
    return default_response(request) if request.agent != "think_executor" else executor_answer(request, "410.9")


async def test_a_think_step_under_a_grammar_calls_the_calculator_and_answers_from_its_result(
    make_agent, recorder
) -> None:
    model = ScriptedModel(grammar=True, script={"planner": PLAN, "executor": calculating})
    agent = make_agent(model, max_depth=1, force_root_planning=True, answer_first=False)
    result = await agent.arun(GOAL, write_files=False, subscribers=[recorder])

    assert result.status == "completed"
    think = next(n for n in result.graph if n.goal == THINK)
    assert think.status is TaskStatus.DONE and "410.9" in (think.result or "")
    first, second = model.calls_for(role="executor", task_id=think.task_id)
    # Offered the tools its model's calls run, by the grammar and in the prompt; search runs up-front.
    offered = json.dumps(first.request.response_format)
    assert '"calculator"' in offered and '"run_python"' in offered and "docs_search" not in offered
    assert "- calculator: " in first.request.prompt
    assert first.output == json.dumps({"tool": "calculator", "arguments": {"expression": EXPRESSION}})
    assert RESULT in second.request.prompt  # the tool ran, and its result is the next message
    (event,) = [e for e in recorder.of(AgentCallFinished) if e.task_id == think.task_id and e.role == "executor"]
    (call,) = event.tool_calls
    assert (call["tool"], call["arguments"], call["result"], call["error"]) == (
        "calculator",
        {"expression": EXPRESSION},
        RESULT,
        None,
    )
    # Offline, the SEARCH executor's fetch_page is left out: no tool its model calls, one request.
    search = next(n for n in result.graph if n.goal == PLAN.subtasks[0].goal)
    (only,) = model.calls_for(role="executor", task_id=search.task_id)
    assert not offers_tools(only.request)


async def test_after_max_tool_steps_calls_only_the_answer_is_offered(make_agent) -> None:
    model = ScriptedModel(grammar=True, script={"planner": PLAN, "executor": always_calculating})
    agent = make_agent(model, max_depth=1, force_root_planning=True, answer_first=False, max_tool_steps=2)
    result = await agent.arun(GOAL, write_files=False)

    think = next(n for n in result.graph if n.goal == THINK)
    calls = model.calls_for(role="executor", task_id=think.task_id)
    assert [offers_tools(c.request) for c in calls] == [True, True, False]
    assert think.status is TaskStatus.DONE and think.result == "410.9"


async def test_a_call_made_before_is_not_run_again_and_the_model_must_answer(make_agent, recorder) -> None:
    model = ScriptedModel(grammar=True, script={"planner": PLAN, "executor": repeating})
    agent = make_agent(model, max_depth=1, force_root_planning=True, answer_first=False, max_tool_steps=3)
    result = await agent.arun(GOAL, write_files=False, subscribers=[recorder])

    think = next(n for n in result.graph if n.goal == THINK)
    calls = model.calls_for(role="executor", task_id=think.task_id)
    assert [offers_tools(c.request) for c in calls] == [True, True, False]
    (event,) = [e for e in recorder.of(AgentCallFinished) if e.task_id == think.task_id and e.role == "executor"]
    assert len(event.tool_calls) == 1


async def test_a_model_without_a_grammar_is_not_offered_tools_through_one(make_agent) -> None:
    model = ScriptedModel(script={"planner": PLAN, "executor": calculating})
    result = await make_agent(model, max_depth=1, force_root_planning=True, answer_first=False).arun(
        GOAL, write_files=False
    )
    think = next(n for n in result.graph if n.goal == THINK)
    (only,) = model.calls_for(role="executor", task_id=think.task_id)
    assert not offers_tools(only.request)


class Point(BaseModel):
    x: float
    y: float


async def distance(a: Point, b: Point) -> str:
    """A callable whose arguments refer to a model: its schema has $defs."""
    return str(((a.x - b.x) ** 2 + (a.y - b.y) ** 2) ** 0.5)


def test_a_step_schema_with_definitions_compiles_to_a_grammar_and_tells_a_call_from_an_answer() -> None:
    tools = [Calculator(), FunctionTool(distance, "tests:distance", None)]
    schema = step_schema(tools, sourced_schema(2).model_json_schema())
    assert set(schema["$defs"]) == {"tool1_Point"}
    assert '"#/$defs/tool1_Point"' in json.dumps(schema)
    LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)  # raises on a schema it cannot compile

    call = '{"tool": "distance", "arguments": {"a": {"x": 0, "y": 0}, "b": {"x": 3, "y": 4}}}'
    request = tool_request(call, ["calculator", "distance"])
    assert request is not None and request.tool == "distance"
    assert tool_request(call, ["calculator"]) == call  # a tool not offered is no call
    answer = tool_request('{"tool": "none", "answer": "410.9", "source": 0}', ["calculator", "distance"])
    assert answer == '{"answer": "410.9", "source": 0}'  # an answer, as its schema has it


def test_offline_the_web_tools_are_not_offered_to_a_model_under_a_grammar() -> None:
    entries = ["docs_search", "web_search", "fetch_page", "run_python", "calculator"]
    online = ToolBox.for_agent(entries, ToolSettings(offline=False))
    offline = ToolBox.for_agent(entries, ToolSettings(offline=True))
    assert [t.name for t in online.acting_tools()] == ["fetch_page", "run_python", "calculator"]
    assert [t.name for t in offline.acting_tools()] == ["run_python", "calculator"]
    assert "fetch_page" in offline  # a hosted model still gets it, and is told it is offline

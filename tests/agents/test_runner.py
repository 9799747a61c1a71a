"""AgentRunner through a whole run: validation retries with the error fed back, model failures."""

from __future__ import annotations

from sentient.agents.models.fake import FakeRequest, ScriptedModel
from sentient.events import AgentCallFinished
from sentient.graph.node import NodeType, TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus

GOAL = "Summarise the asyncio event loop"
VALID = PlanOutput(
    subtasks=[
        SubTask(goal="read about the loop", task_type=TaskType.SEARCH),
        SubTask(goal="write it up", task_type=TaskType.WRITE, depends_on_indices=[0]),
    ]
)
WRONG_SCHEMA = {"subtasks": [{"goal": "no task type here"}]}


def first_then_valid(first: object):
    def respond(request: FakeRequest) -> object:
        return first if request.attempt == 1 else VALID

    return respond


async def test_invalid_json_is_retried_with_the_error_in_the_prompt_and_the_retry_is_used(make_agent) -> None:
    model = ScriptedModel(script={"planner": first_then_valid("Sure! Here is my plan: step one, step two.")})
    result = await make_agent(model, max_depth=1).arun(GOAL, write_files=False)

    assert result.status == "completed"
    first, second = model.calls_for(role="planner")
    assert (first.request.attempt, second.request.attempt) == (1, 2)
    assert "Your previous answer was invalid" not in first.request.prompt
    assert "Your previous answer was invalid" in second.request.prompt
    assert "Sure! Here is my plan" in second.request.prompt  # the bad answer is quoted back
    assert "Invalid JSON" in second.request.prompt
    assert [c.goal for c in result.graph.children("root")] == ["read about the loop", "write it up"]


async def test_a_wrong_schema_is_retried_with_the_validation_error(make_agent, recorder) -> None:
    model = ScriptedModel(script={"planner": first_then_valid(WRONG_SCHEMA)})
    result = await make_agent(model, max_depth=1).arun(GOAL, write_files=False, subscribers=[recorder])

    assert result.status == "completed"
    _, second = model.calls_for(role="planner")
    assert "Validation error: subtasks.0.task_type: Field required" in second.request.prompt
    assert len(result.graph.children("root")) == 2
    (planner_call,) = [e for e in recorder.of(AgentCallFinished) if e.role == "planner"]
    assert planner_call.attempts == 2
    assert planner_call.error is None


async def test_an_always_invalid_root_plan_is_retried_then_the_goal_is_executed_directly(make_agent, recorder) -> None:
    model = ScriptedModel(script={"planner": WRONG_SCHEMA})
    agent = make_agent(model, max_depth=1, max_validation_retries=2)
    result = await agent.arun(GOAL, write_files=False, subscribers=[recorder])

    assert [c.request.attempt for c in model.calls_for(role="planner")] == [1, 2, 3]
    (event,) = [e for e in recorder.of(AgentCallFinished) if e.role == "planner"]
    assert event.attempts == 3 and event.error is not None
    # The root has no parent to replan it: an answer without a plan, said so on the node.
    assert result.status == "completed"
    root = result.graph.root
    assert root.node_type is NodeType.EXECUTE and root.result and len(result.graph) == 1
    (warning,) = [w for w in root.warnings if w.startswith("planning failed")]
    assert warning.startswith("planning failed (output did not match PlanOutput after 3 attempt(s):")
    assert "task_type: Field required" in warning

    # When the direct answer fails too, the run fails with that error.
    model = ScriptedModel(script={"planner": WRONG_SCHEMA, "executor": ConnectionError("provider returned 503")})
    result = await make_agent(model, max_depth=1, max_validation_retries=0).arun(GOAL, write_files=False)
    assert result.status == "failed" and "provider returned 503" in (result.error or "")
    assert any(w.startswith("planning failed") for w in result.graph.root.warnings)


async def test_an_always_invalid_answer_never_becomes_a_string_result(make_agent) -> None:
    # Plain prose from an executor is not an ExecutionOutput; it must not be taken as the answer.
    model = ScriptedModel(script={"executor": "The event loop is a loop."})
    agent = make_agent(model, max_depth=1, max_validation_retries=1, failure_policy="continue")
    result = await agent.arun(GOAL, write_files=False)

    for leaf in ("root.0", "root.1"):
        node = result.graph.get(leaf)
        assert node.status is TaskStatus.FAILED
        assert node.result is None
        assert "output did not match" in node.error and "after 2 attempt(s)" in node.error
        assert len(model.calls_for(role="executor", task_id=leaf)) == 2
    assert result.status == "failed"
    assert result.final_answer is None
    assert model.calls_for(role="aggregator") == []


async def test_no_validation_retries_means_a_single_attempt(make_agent) -> None:
    model = ScriptedModel(script={"planner": "not json"})
    result = await make_agent(model, max_depth=1, max_validation_retries=0).arun(GOAL, write_files=False)

    assert len(model.calls_for(role="planner")) == 1
    assert any("after 1 attempt(s)" in w for w in result.graph.root.warnings)


async def test_a_model_exception_fails_the_node_with_its_message_and_is_not_retried(make_agent) -> None:
    def executor(request: FakeRequest):
        if request.task_id == "root.0":
            return ConnectionError("provider returned 503")
        return {"answer": f"answer for {request.task_id}"}

    model = ScriptedModel(script={"planner": VALID, "executor": executor})
    result = await make_agent(model, max_depth=1, failure_policy="continue").arun(GOAL, write_files=False)

    node = result.graph.get("root.0")
    assert node.status is TaskStatus.FAILED
    assert "provider returned 503" in node.error
    assert node.result is None
    assert len(model.calls_for(task_id="root.0")) == 1  # validation retries are for bad output only
    assert result.graph.get("root.1").result == "answer for root.1"
    assert result.status == "completed_with_failures"


async def test_json_inside_a_markdown_fence_is_accepted(make_agent) -> None:
    fenced = "Here you go:\n```json\n" + VALID.model_dump_json() + "\n```\nHope it helps."
    model = ScriptedModel(script={"planner": fenced})
    result = await make_agent(model, max_depth=1).arun(GOAL, write_files=False)

    assert result.status == "completed"
    assert len(model.calls_for(role="planner")) == 1
    assert [c.goal for c in result.graph.children("root")] == ["read about the loop", "write it up"]


def test_embedded_models_get_the_local_timeout_whatever_their_weights() -> None:
    from sentient.agents.models.catalog import FREE
    from sentient.agents.models.factory import ModelHandle
    from sentient.agents.runner import AgentRunner
    from sentient.events import EventBus

    runner = AgentRunner(
        lambda agent: None,  # type: ignore[arg-type,return-value]
        EventBus(),
        max_concurrent=1,
        timeout_s=120.0,
        max_validation_retries=0,
        local_timeout_s=300.0,
    )
    model = ScriptedModel()
    for name, expected in (("local:qwen2.5-coder-1.5b", 300.0), ("local", 300.0), ("openai:gpt-4o-mini", 120.0)):
        handle = ModelHandle(name, model, FREE, None, None, native_tools=False)
        assert runner._timeout_for(handle) == expected, name

"""Your own callables as tools: arguments derived from the signature, results as sources, and
calls of tools marked confirm: true approved (or declined) by the run's reviewer."""

from __future__ import annotations

from typing import Any

import pytest

from sentient.exceptions import ConfigError
from sentient.hitl.protocol import Approve, CallToConfirm, Modify, Reject, ReviewDecision, ReviewRequest
from sentient.tools.base import ToolSettings
from sentient.tools.confirm import CallApproval
from sentient.tools.specs import CallableTool
from sentient.tools.toolbox import SourceSink, ToolBox

OFFLINE = ToolSettings(offline=True)


def box_with(*entries: str | CallableTool, approval: CallApproval | None = None) -> ToolBox:
    return ToolBox.for_agent(list(entries), OFFLINE, approval=approval)


class ScriptedReviewer:
    """Answers each review with the next decision, and keeps what it was asked."""

    def __init__(self, *decisions: ReviewDecision) -> None:
        self.decisions = list(decisions)
        self.requests: list[ReviewRequest] = []

    async def review_plan(self, request: ReviewRequest) -> ReviewDecision:
        self.requests.append(request)
        return self.decisions.pop(0)


def test_a_callables_schema_comes_from_its_signature_and_docstring() -> None:
    box = box_with("calculator", CallableTool(callable="fakes.user_tools:lookup_customer"))

    (_, lookup) = box.agno_functions(SourceSink())
    spec = lookup.to_dict()

    assert box.names == ("calculator", "lookup_customer")
    assert spec["description"] == "Look a customer up in the CRM by number."
    assert spec["parameters"]["properties"]["customer_id"] == {
        "type": "integer",
        "minimum": 1,
        "description": "The customer's number.",
    }
    assert spec["parameters"]["required"] == ["customer_id"]


def test_built_in_tools_schemas_come_from_their_run_signature() -> None:
    spec = {f.name: f.to_dict() for f in box_with("web_search").agno_functions(SourceSink())}["web_search"]

    assert spec["parameters"]["required"] == ["query"]
    assert spec["parameters"]["properties"]["query"] == {"type": "string", "description": "What to search for."}
    assert spec["parameters"]["additionalProperties"] is False


async def test_a_callables_result_is_a_numbered_source_naming_the_call() -> None:
    box = box_with(CallableTool(callable="fakes.user_tools:lookup_customer", name="crm"))
    sink = SourceSink()

    text = await box.call("crm", {"customer_id": "42"}, sink)

    assert text == (
        "[1] crm — python:fakes.user_tools:lookup_customer?customer_id=42\n\nAda Lovelace, plan: enterprise"
    )
    assert sink.calls[0].arguments == {"customer_id": "42"}
    assert await box.call("crm", {"customer_id": 0}, sink) == (
        "Error: crm: argument customer_id: Input should be greater than or equal to 1"
    )


async def test_a_pydantic_model_parameter_takes_the_models_fields() -> None:
    box = box_with(CallableTool(callable="fakes.user_tools:refund"))
    (function,) = box.agno_functions(SourceSink())

    text = await box.call("refund", {"order": "A-7", "amount_eur": 12.5}, SourceSink())
    bad = await box.call("refund", {"order": "A-7", "amount_eur": -1}, SourceSink())

    assert set(function.to_dict()["parameters"]["properties"]) == {"order", "amount_eur"}
    assert text.endswith('{"refunded": "A-7", "amount_eur": 12.5}')
    assert bad == "Error: refund: argument amount_eur: Input should be greater than 0"


async def test_an_exception_in_a_callable_is_a_failed_call_the_model_reads() -> None:
    sink = SourceSink()

    text = await box_with(CallableTool(callable="fakes.user_tools:broken")).call("broken", {"text": "x"}, sink)

    assert text == "Error: broken failed: RuntimeError: cannot handle x"
    assert sink.calls[0].error == "broken failed: RuntimeError: cannot handle x"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("fakes.no_such_module:f", "cannot import fakes.no_such_module"),
        ("fakes.user_tools:missing", "fakes.user_tools has no missing"),
        ("fakes.user_tools:NOT_CALLABLE", "is a int, not a function"),
        ("fakes.user_tools:variadic", "parameter 'values' cannot be given by name"),
    ],
)
def test_a_callable_that_cannot_be_a_tool_is_a_config_error(path: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        box_with(CallableTool(callable=path))


async def test_a_confirmed_call_runs_once_the_reviewer_approves() -> None:
    reviewer = ScriptedReviewer(Approve())
    box = box_with(
        CallableTool(callable="fakes.user_tools:lookup_customer", confirm=True), approval=CallApproval(reviewer)
    )

    text = await box.call("lookup_customer", {"customer_id": 42}, SourceSink(task_id="root.1"))

    assert text.endswith("Ada Lovelace, plan: enterprise")
    (request,) = reviewer.requests
    assert request.task_id == "root.1"
    assert request.layer == 1
    assert request.kind == "tool_call" and request.plan is None
    assert request.tool_call == CallToConfirm("lookup_customer", {"customer_id": 42})


@pytest.mark.parametrize(
    ("decision", "told"),
    [
        (Reject("not this customer"), "the user declined this call: not this customer"),
        (Modify(instructions="ask for the order first"), "the user declined this call: ask for the order first"),
        (None, "the user declined this call (no reviewer: run with --review, or through the server, to approve it)"),
    ],
)
async def test_a_declined_call_does_not_run_and_the_model_is_told(decision: Any, told: str) -> None:
    reviewer = ScriptedReviewer(decision) if decision is not None else None
    box = box_with(CallableTool(callable="fakes.user_tools:broken", confirm=True), approval=CallApproval(reviewer))
    sink = SourceSink(task_id="root.0")

    text = await box.call("broken", {"text": "x"}, sink)

    assert text == told, "the callable (which raises) never ran"
    assert sink.calls[0].error is None


async def test_a_call_review_is_the_same_round_for_the_same_call_only() -> None:
    reviewer = ScriptedReviewer(Approve(), Approve(), Approve())
    box = box_with(
        CallableTool(callable="fakes.user_tools:lookup_customer", confirm=True), approval=CallApproval(reviewer)
    )
    for customer in (42, 42, 7):
        await box.call("lookup_customer", {"customer_id": customer}, SourceSink(task_id="root.0"))

    first, again, other = (r.round for r in reviewer.requests)
    assert first == again != other
    assert min(first, other) >= 1_000_000, "above any plan round, so a stored plan review is never taken for it"

"""Structured output through the Python API: the answer as JSON of the user's schema, with each
string's citations; a schema that is not valid refused before any model call; a value that does
not validate asked again, and never kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.lists import citing_model, lists_docs
from jsonschema import Draft202012Validator

from sentient import ProfiledSentientAgent
from sentient.agents.models.fake import FakeRequest, ScriptedModel
from sentient.agents.schemas import AggregationOutput
from sentient.exceptions import ConfigError
from sentient.settings import Settings
from sentient.store import ProjectStore

GOAL = "How do Python lists differ from tuples?"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "mutable": {"type": "string"},
        "immutable": {"type": "string"},
        "kinds": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        "count": {"type": "integer"},
    },
    "required": ["mutable", "immutable", "kinds", "count"],
    "additionalProperties": False,
}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(model="scripted", cache_dir=tmp_path / "cache", results_dir=tmp_path / "results")


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return lists_docs(tmp_path / "docs")


def asks_for_schema(request: FakeRequest) -> bool:
    """Whether the call is the structured one (it is asked for the user's schema itself)."""
    return isinstance(request.response_format, dict) and "StructuredOutput" in str(request.response_format)


def model(*structured: Any) -> ScriptedModel:
    """:func:`citing_model` whose aggregator answers ``structured`` in turn for each structured call
    (the last one repeated), and cites both passages otherwise."""
    replies = list(structured)

    def aggregate(request: FakeRequest) -> Any:
        if asks_for_schema(request):
            return replies.pop(0) if len(replies) > 1 else replies[0]
        return AggregationOutput(answer="Lists change [1]; tuples do not [2].")

    return citing_model(aggregate)


VALID = {"mutable": "lists [1]", "immutable": "tuples [2]", "kinds": ["list [1]", "tuple"], "count": 2}


def agent(settings: Settings, docs: Path, fake: ScriptedModel) -> ProfiledSentientAgent:
    return ProfiledSentientAgent.create_with_profile("general_agent", settings=settings, model=fake, docs=docs)


async def test_the_answer_is_json_of_the_schema_and_each_string_keeps_its_citations(
    settings: Settings, docs: Path
) -> None:
    fake = model(VALID)

    # Planned and aggregated (not answered directly): the root's aggregate is what is shaped.
    result = await agent(settings, docs, fake).arun(GOAL, write_files=False, output_schema=SCHEMA, answer_first=False)

    assert result.status == "completed"
    structured = result.report.structured
    assert structured is not None
    Draft202012Validator(SCHEMA).validate(structured.value)
    assert structured.value == {"mutable": "lists", "immutable": "tuples", "kinds": ["list", "tuple"], "count": 2}
    assert structured.citations == {"/mutable": [1], "/immutable": [2], "/kinds/0": [1]}
    root_sources = [source.ref for source in result.graph.root.sources]
    assert [reference.ref for reference in structured.references] == root_sources[:2]
    assert "## Structured answer\n\n```json\n" in result.report_markdown
    assert "- `/immutable` [2]" in result.report_markdown
    # The call was given the root's answer and its sources, and asked for the schema itself.
    (call,) = [c for c in fake.calls_for("aggregator") if asks_for_schema(c.request)]
    assert "Lists change [1]; tuples do not [2]." in call.request.prompt
    assert call.request.response_format["json_schema"]["schema"] == SCHEMA
    assert '"additionalProperties": false' in call.request.prompt


async def test_a_value_that_does_not_validate_is_asked_again_with_the_error(settings: Settings, docs: Path) -> None:
    fake = model({**VALID, "count": "two"}, VALID)

    result = await agent(settings, docs, fake).arun(GOAL, write_files=False, output_schema=SCHEMA)

    assert result.status == "completed"
    assert result.report.structured is not None and result.report.structured.value["count"] == 2
    retried = [c for c in fake.calls_for("aggregator") if asks_for_schema(c.request)][1]
    assert "'two' is not of type 'integer' (at /count)" in retried.request.prompt


async def test_a_value_that_never_validates_fails_the_run_and_a_resume_asks_again(
    settings: Settings, docs: Path, tmp_path: Path
) -> None:
    store = ProjectStore.open(tmp_path / "results")
    wrong = {"mutable": "lists"}  # lacks required fields, every time

    failed = await agent(settings, docs, model(wrong)).arun(GOAL, store=store, write_files=False, output_schema=SCHEMA)

    assert failed.status == "failed"
    assert failed.error is not None and failed.error.startswith("the structured answer failed: ")
    assert "'immutable' is a required property" in failed.error
    assert failed.report.structured is None  # an invalid value is never kept
    assert store.get_report_data(failed.project_id)["structured"] is None

    fixed = model(VALID)
    resumed = await agent(settings, docs, fixed).aresume(failed.project_id, store=store, write_files=False)

    assert resumed.status == "completed"
    assert [c.request.role for c in fixed.calls] == ["aggregator"]  # the research is kept: only the JSON is asked
    assert store.get_report_data(failed.project_id)["structured"]["value"]["count"] == 2
    store.close()


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        (
            {"type": "objekt"},
            "not a valid JSON Schema: 'objekt' is not valid under any of the given schemas (at /type)",
        ),
        ({"properties": {"a": {"minLength": -1}}}, "(at /properties/a/minLength)"),
        ({"required": "name"}, "'name' is not of type 'array' (at /required)"),
    ],
)
async def test_a_schema_that_is_not_valid_is_refused_before_any_model_call(
    settings: Settings, docs: Path, schema: dict[str, Any], problem: str
) -> None:
    fake = model(VALID)
    researcher = agent(settings, docs, fake)

    with pytest.raises(ConfigError, match="output_schema") as raised:
        await researcher.arun(GOAL, write_files=False, output_schema=schema)
    with pytest.raises(ConfigError):
        ProfiledSentientAgent.create_with_profile("general_agent", settings=settings, output_schema=schema)

    assert problem in str(raised.value)
    assert "\n" not in str(raised.value)
    assert fake.calls == []

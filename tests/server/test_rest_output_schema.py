"""Structured output over REST: ``config.output_schema`` is checked when the project is created
(400 naming it), kept with the project, and the report's JSON holds the answer as JSON of it."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient
from jsonschema import Draft202012Validator
from server_helpers import wait_status

GOAL = "Explain how the asyncio event loop schedules tasks"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def test_the_report_json_holds_the_answer_as_json_of_the_projects_schema(client: FlaskClient) -> None:
    created = client.post("/api/projects", json={"goal": GOAL, "config": {"output_schema": SCHEMA}})
    assert created.status_code == 201, created.get_data(as_text=True)
    project_id = created.get_json()["project_id"]
    assert created.get_json()["settings"]["output_schema"] == SCHEMA

    assert client.post(f"/api/projects/{project_id}/execute").status_code == 202
    assert wait_status(client, project_id, {"completed", "failed"})["status"] == "completed"

    structured = client.get(f"/api/projects/{project_id}/report?format=json").get_json()["structured"]
    Draft202012Validator(SCHEMA).validate(structured["value"])
    assert set(structured) == {"value", "citations", "references"}


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "objekt"}, "not a valid JSON Schema: 'objekt' is not valid under any of the given schemas"),
        ({"properties": []}, "[] is not of type 'object' (at /properties)"),
        ("a schema", "a JSON Schema must be a JSON object, not a string"),
    ],
)
def test_a_schema_that_is_not_valid_is_a_400_naming_config_output_schema(
    client: FlaskClient, schema: Any, problem: str
) -> None:
    response = client.post("/api/projects", json={"goal": GOAL, "config": {"output_schema": schema}})

    assert response.status_code == 400, response.get_data(as_text=True)
    message = response.get_json()["error"]["message"]
    assert "config.output_schema" in message and problem in message
    assert client.get("/api/projects").get_json()["projects"] == []

"""Per-project choices over REST: offline, model, profile, max depth, docs folder and language are
kept with the project and used by its runs; a bad value is a 400 naming the field."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from server_helpers import wait_status

from sentient.exceptions import ToolError
from sentient.settings import Settings
from sentient_server.config import ServerSettings

GOAL = "Explain how the asyncio event loop schedules tasks"
ENDED = {"completed", "completed_with_failures", "failed", "cancelled", "stopped"}


def create(client: FlaskClient, **body: Any) -> Any:
    response = client.post("/api/projects", json={"goal": GOAL, **body})
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()


def researcher_of(app: Flask, project_id: str) -> Any:
    """What the server would run the project with now."""
    runs = app.extensions["sentient"].runs
    return runs._researcher(runs.record(project_id))


def test_every_choice_is_kept_with_the_project_and_shown(client: FlaskClient, docs_folder: Path) -> None:
    project = create(
        client,
        profile="general_agent",
        config={"offline": True, "model": "scripted", "max_depth": 0, "docs": str(docs_folder), "language": "fr"},
    )
    assert project["profile"] == "general_agent"
    assert project["choices"] == {"model": "scripted", "offline": True, "docs": str(docs_folder.resolve())}
    assert project["settings"]["max_depth"] == 0 and project["settings"]["language"] == "fr"
    shown = client.get(f"/api/projects/{project['project_id']}").get_json()
    assert shown["choices"] == project["choices"] and shown["settings"] == project["settings"]


def test_what_a_client_leaves_out_is_the_profiles_and_the_servers(client: FlaskClient) -> None:
    project = create(client, profile="general_agent")
    assert project["choices"] == {"model": None, "offline": False, "docs": None}
    assert project["settings"]["max_depth"] == 1  # general_agent's own


async def toolboxes_of(researcher: Any) -> dict[str, Any]:
    async with AsyncExitStack() as stack:
        boxes: dict[str, Any] = await researcher.toolboxes(stack)
        return boxes


def test_an_offline_project_never_searches_the_web_on_a_server_that_is_online(
    make_app: Any, server_settings: ServerSettings
) -> None:
    online = replace(server_settings, sentient=server_settings.sentient.model_copy(update={"offline": False}))
    app = make_app(online)
    client = app.test_client()
    offline_id = create(client, config={"offline": True})["project_id"]
    online_id = create(client)["project_id"]

    offline = researcher_of(app, offline_id)
    (web,) = {box.get("web_search") for box in asyncio.run(toolboxes_of(offline)).values() if "web_search" in box}
    with pytest.raises(ToolError, match="running offline"):
        asyncio.run(web.run(query="asyncio event loop"))
    assert offline.settings.offline is True
    assert researcher_of(app, online_id).settings.offline is False  # the server's own setting


def test_a_projects_model_is_the_one_its_runs_use(
    make_app: Any, server_settings: ServerSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server's own model needs a key it does not have: only a project that chose another runs.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    sentient = Settings(
        model="openai:gpt-4o-mini",
        results_dir=tmp_path / "results",
        cache_dir=tmp_path / "cache",
        user_config=tmp_path / "no-config.yaml",
        offline=True,
    )
    client = make_app(replace(server_settings, sentient=sentient, model=None)).test_client()
    chosen = create(client, profile="general_agent", config={"model": "scripted"})["project_id"]
    default = create(client, profile="general_agent")["project_id"]

    assert client.post(f"/api/projects/{chosen}/execute").status_code == 202
    assert wait_status(client, chosen, ENDED)["status"] == "completed"
    refused = client.post(f"/api/projects/{default}/execute")
    assert refused.status_code == 400 and "OPENAI_API_KEY" in refused.get_json()["error"]["message"]


@pytest.mark.parametrize(
    ("config", "names"),
    [
        ({"offline": "yes"}, "config.offline"),
        ({"offline": 1}, "config.offline"),
        ({"model": 42}, "config.model"),
        ({"model": ""}, "config.model"),
        ({"model": "gpt-99"}, "config.model"),
        ({"model": "openai-compatible:http://127.0.0.1:9/v1:m"}, "config.model"),
        ({"language": "klingon"}, "language"),
        ({"language": 7}, "language"),
        ({"max_depth": "deep"}, "max_depth"),
    ],
)
def test_a_bad_choice_is_a_400_naming_its_field(client: FlaskClient, config: dict[str, Any], names: str) -> None:
    response = client.post("/api/projects", json={"goal": GOAL, "config": config})
    assert response.status_code == 400, response.get_data(as_text=True)
    assert names in response.get_json()["error"]["message"]
    assert client.get("/api/projects").get_json()["projects"] == []


def test_a_model_without_its_key_is_refused_when_the_project_is_created(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    response = client.post("/api/projects", json={"goal": GOAL, "config": {"model": "anthropic:claude-3-5-haiku"}})
    assert response.status_code == 400
    message = response.get_json()["error"]["message"]
    assert "config.model" in message and "ANTHROPIC_API_KEY" in message

"""``config.docs`` from REST: only inside SENTIENT_DOCS_ROOTS, no symlinks out, bounded, relative sources;
execute, cancel and resume in quick succession never leave a graph without its root."""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from server_helpers import wait_for, wait_status

from sentient.agents.models.fake import ScriptedModel
from sentient.api import ProfiledSentientAgent
from sentient.settings import Settings
from sentient.store import ProjectStore
from sentient_server.config import ServerSettings

GOAL = "Explain how asyncio schedules tasks"
ENDED = {"completed", "failed", "cancelled", "stopped"}


def post(client: FlaskClient, docs: str) -> Any:
    return client.post("/api/projects", json={"goal": GOAL, "profile": "general_agent", "config": {"docs": docs}})


def client_for(make_app: Any, settings: ServerSettings, **changes: Any) -> FlaskClient:
    return make_app(replace(settings, **changes)).test_client()  # type: ignore[no-any-return]


def test_without_configured_roots_a_rest_docs_folder_is_refused(
    make_app: Any, server_settings: ServerSettings, docs_folder: Path
) -> None:
    client = client_for(make_app, server_settings, docs_roots=())
    response = post(client, str(docs_folder))
    assert response.status_code == 403
    assert "SENTIENT_DOCS_ROOTS" in response.get_json()["error"]["message"]
    assert client.get("/api/projects").get_json()["projects"] == []


def test_docs_roots_come_from_the_environment_separated_by_pathsep(monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setenv("SENTIENT_DOCS_ROOTS", os.pathsep.join([str(tmp_path / "a"), "", str(tmp_path / "b")]))
    assert ServerSettings.from_env().docs_roots == (tmp_path / "a", tmp_path / "b")
    monkeypatch.delenv("SENTIENT_DOCS_ROOTS")
    assert ServerSettings.from_env().docs_roots == ()


@pytest.mark.parametrize("outside", ["/", "/etc", "~", "../..", "/no/such/place"])
def test_folders_outside_every_root_are_refused_alike(
    make_app: Any, server_settings: ServerSettings, docs_folder: Path, outside: str
) -> None:
    client = client_for(make_app, server_settings, docs_roots=(docs_folder,))
    response = post(client, outside)
    assert response.status_code == 403, response.get_json()
    assert "not inside a docs root" in response.get_json()["error"]["message"]


def test_a_symlink_leaving_the_root_is_refused(make_app: Any, server_settings: ServerSettings, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "etc-link").symlink_to("/etc")
    client = client_for(make_app, server_settings, docs_roots=(root,))
    assert post(client, str(root / "etc-link")).status_code == 403
    assert post(client, "etc-link").status_code == 403  # relative to the root, same answer


def test_symlinked_files_pointing_out_are_not_indexed_and_sources_are_relative(
    make_app: Any, server_settings: ServerSettings, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    docs = root / "corpus"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "loop.md").write_text("# Asyncio\n\nThe event loop schedules tasks and coroutines.\n")
    secret = tmp_path / "secret.md"
    secret.write_text("# Asyncio tasks\n\nTOP-SECRET asyncio schedule tasks password.\n")
    (docs / "leak.md").symlink_to(secret)
    client = client_for(make_app, server_settings, docs_roots=(root,))
    response = post(client, "corpus")
    assert response.status_code == 201, response.get_json()
    pid = response.get_json()["project_id"]
    assert client.post(f"/api/projects/{pid}/execute").status_code == 202
    assert wait_status(client, pid, ENDED)["status"] == "completed"
    graph = client.get(f"/api/projects/{pid}/graph").get_data(as_text=True)
    report = client.get(f"/api/projects/{pid}/report").get_data(as_text=True)
    refs = {
        s["ref"] for n in client.get(f"/api/projects/{pid}/graph").get_json()["nodes"].values() for s in n["sources"]
    }
    assert refs == {"guide/loop.md"}
    for text in (graph, report):
        assert "TOP-SECRET" not in text
        assert str(tmp_path) not in text  # no absolute server path


def test_a_folder_over_the_limits_fails_the_run_with_a_clear_error(
    make_app: Any, server_settings: ServerSettings, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    (root / "many").mkdir(parents=True)
    for i in range(3):
        (root / "many" / f"doc{i}.md").write_text(f"# Doc {i}\n\nasyncio tasks {i}\n")
    client = client_for(make_app, server_settings, docs_roots=(root,), docs_max_files=2)
    pid = post(client, "many").get_json()["project_id"]
    assert client.post(f"/api/projects/{pid}/execute").status_code == 202
    project = wait_status(client, pid, ENDED)
    assert project["status"] == "failed"
    assert "more than 2 documents" in project["error"] and str(root) not in project["error"]


def test_indexing_stops_when_asked(tmp_path: Path) -> None:
    from sentient.exceptions import DocsFolderError
    from sentient.tools.docs_search import DocsIndex

    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(DocsFolderError, match="cancelled"):
        DocsIndex.from_folder(tmp_path, cancel=cancel)


def test_resuming_a_project_stopped_before_its_first_event_stores_the_root(tmp_path: Path) -> None:
    settings = Settings(results_dir=tmp_path / "results", cache_dir=tmp_path / "cache", offline=True)
    with ProjectStore.open(settings.results_dir) as store:
        agent = ProfiledSentientAgent.create_with_profile(
            "general_agent", settings=settings, model=ScriptedModel(), docs=None
        )
        store.create_project("p1", GOAL, "general_agent", agent.engine_settings.model_dump(mode="json"))
        store.set_status("p1", "cancelled")
        result = asyncio.run(agent.aresume("p1", store=store, write_files=False))
        assert result.status == "completed"
        graph = store.load_graph("p1")
        assert "root" in {n.task_id for n in graph} and len(graph) == result.stats.nodes


def test_execute_cancel_resume_in_quick_succession_keep_the_graph_whole(
    make_app: Any, server_settings: ServerSettings
) -> None:
    client = client_for(make_app, server_settings, model=ScriptedModel(latency=0.002))
    pid = client.post("/api/projects", json={"goal": GOAL, "profile": "general_agent"}).get_json()["project_id"]
    statuses: list[int] = []

    def hammer(path: str) -> None:
        for _ in range(6):
            statuses.append(client.post(f"/api/projects/{pid}/{path}").status_code)

    threads = [threading.Thread(target=hammer, args=(p,)) for p in ("execute", "cancel", "resume", "execute")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(statuses) <= {202, 409}
    wait_for(lambda: client.get("/api/health").get_json()["projects_running"] == 0, what="runs to end")
    if client.get(f"/api/projects/{pid}").get_json()["status"] != "completed":
        assert client.post(f"/api/projects/{pid}/resume").status_code == 202
        assert wait_status(client, pid, ENDED)["status"] == "completed"
    graph = client.get(f"/api/projects/{pid}/graph")
    assert graph.status_code == 200
    assert "root" in graph.get_json()["nodes"]


def test_a_project_created_before_the_docs_folder_was_kept_in_its_options_still_uses_its_folder(
    make_app: Any, server_settings: ServerSettings, tmp_path: Path
) -> None:
    corpus = tmp_path / "root" / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "loop.md").write_text("# Asyncio\n\nThe event loop schedules tasks and coroutines.\n")
    app = make_app(replace(server_settings, docs_roots=(tmp_path / "root",)))
    client = app.test_client()
    response = client.post("/api/projects", json={"goal": GOAL, "profile": "general_agent"})
    pid = response.get_json()["project_id"]
    folder = server_settings.sentient.results_dir / pid
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "server.json").write_text(f'{{"docs": "{corpus}"}}')  # as older servers kept it
    assert client.post(f"/api/projects/{pid}/execute").status_code == 202
    assert wait_status(client, pid, ENDED)["status"] == "completed"
    nodes = client.get(f"/api/projects/{pid}/graph").get_json()["nodes"].values()
    assert {s["ref"] for n in nodes for s in n["sources"]} == {"loop.md"}

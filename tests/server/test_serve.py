"""``python -m sentient_server.serve`` (gunicorn, gevent worker) with a real WebSocket client; its options; the
dashboard files."""

from __future__ import annotations

import argparse
import dataclasses
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from server_helpers import InOrderClient, Recorder, free_port, serve_env, wait_for, wait_healthy

from sentient.exceptions import ConfigError
from sentient_server import ServerSettings


def test_serve_runs_gunicorn_with_websocket_transport_and_stops_cleanly(tmp_path: Path, docs_folder: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sentient_server.serve", "--port", str(port)],
        env=serve_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        sio = InOrderClient(reconnection=False)
        received = Recorder()
        sio.on("*", received)
        sio.connect(url, transports=["websocket"])
        assert sio.transport() == "websocket"
        ack = sio.call(
            "execute_task",
            {"goal": "What is asyncio?", "profile": "general_agent", "config": {"docs": str(docs_folder)}},
            timeout=10,
        )
        project_id = ack["project"]["project_id"]
        done = wait_for(lambda: received.completed(project_id), what="project_completed")
        assert done["project"]["status"] == "completed" and received.of("node_update")
    finally:
        proc.send_signal(signal.SIGTERM)  # before the client's close, which would wait for a close frame
        output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, output
    assert "SentientGeventWorker" in output  # connections are greenlets, requests run on threads
    wait_for(lambda: not sio.connected, what="the client to see the server go")


def test_sentient_serve_refuses_a_public_bind_without_a_token(monkeypatch: Any, capsys: Any, tmp_path: Path) -> None:
    from sentient.cli.main import main

    monkeypatch.delenv("SENTIENT_API_TOKEN", raising=False)
    monkeypatch.setenv("SENTIENT_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("SENTIENT_OFFLINE", "1")
    assert main(["serve", "--host", "0.0.0.0", "--port", str(free_port())]) == 2
    assert "SENTIENT_API_TOKEN" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()  # refused before anything was opened


def test_sentient_serve_refuses_a_connection_limit_below_one(monkeypatch: Any, capsys: Any, tmp_path: Path) -> None:
    from sentient.cli.main import main

    monkeypatch.setenv("SENTIENT_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("SENTIENT_OFFLINE", "1")
    assert main(["serve", "--port", str(free_port()), "--max-partial-per-client", "0"]) == 2
    assert "max_partial_requests_per_client is 0" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_the_serve_options_name_the_server_defaults() -> None:
    from sentient.cli.serve import add_connection_limits, connection_limits

    parser = argparse.ArgumentParser()
    add_connection_limits(parser)
    helps = {action.dest: str(action.help) for action in parser._actions}
    unset = connection_limits(parser.parse_args([]))
    assert set(unset.values()) == {None}  # not given: the settings' own defaults apply
    defaults = ServerSettings()
    options = ("threads", "max_connections", "max_partial_per_client", "max_pending_sockets_per_client")
    for field, option in zip(unset, options, strict=True):
        assert f"(default {getattr(defaults, field)})" in helps[option], option


def test_the_server_refuses_to_start_when_the_redis_for_provider_limits_does_not_answer(
    server_settings: ServerSettings,
) -> None:
    from sentient_server.app import create_app

    sentient = server_settings.sentient.model_copy(update={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    with pytest.raises(ConfigError, match="SENTIENT_REDIS_URL"):
        create_app(dataclasses.replace(server_settings, sentient=sentient))
    assert not (sentient.results_dir / "sentient.db").exists()  # refused before the store was opened


def test_the_built_dashboard_is_served_with_index_html_for_unknown_pages(
    make_app: Any, server_settings: ServerSettings, tmp_path: Path
) -> None:
    from dataclasses import replace

    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text("<!doctype html><title>Sentient</title>")
    (dist / "assets" / "app.js").write_text("console.log('hi')")
    client = make_app(replace(server_settings, dashboard_dir=dist)).test_client()
    assert "<title>Sentient</title>" in client.get("/").get_data(as_text=True)
    assert client.get("/assets/app.js").get_data(as_text=True) == "console.log('hi')"
    assert "<title>Sentient</title>" in client.get("/projects/some-id").get_data(as_text=True)
    assert client.get("/api/nope").get_json()["error"]["code"] == "not_found"
    # A path leaving dist/ gets index.html whether or not it names a file: no existence oracle.
    (tmp_path / "secret.txt").write_text("server file")
    for outside in ("/assets/../../secret.txt", "/%2e%2e/secret.txt", "/assets/../../missing.txt", "/../../etc/passwd"):
        response = client.get(outside)
        assert response.status_code == 200 and "<title>Sentient</title>" in response.get_data(as_text=True), outside

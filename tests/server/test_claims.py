"""The server claims a project with the store's one conditional update: a project that a CLI
process runs at the same time is refused with 409, and left as that process keeps it."""

from __future__ import annotations

import subprocess
import sys

from flask import Flask
from flask.testing import FlaskClient

from sentient.store import Owner


def test_a_project_run_by_another_process_is_a_conflict(app: Flask, client: FlaskClient) -> None:
    created = client.post("/api/projects", json={"goal": "Explain how asyncio schedules tasks"})
    pid = created.get_json()["project_id"]
    store = app.extensions["sentient"].runs.store
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        store.claim(pid, Owner.local(other.pid))  # a `sentient resume` in another terminal
        for action in ("execute", "resume"):
            response = client.post(f"/api/projects/{pid}/{action}")
            assert response.status_code == 409, response.get_data(as_text=True)
            assert f"already being run by process {other.pid}" in response.get_json()["error"]["message"]
        record = store.get_project(pid)
        assert (record.status.value, record.owner_pid) == ("running", other.pid), "the owner keeps it"
    finally:
        other.kill()
        other.wait()

"""The domain's errors become HTTP statuses in one place (``as_api_error``), and a REST client sees them."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from sentient.exceptions import ConfigError, ExportError, InvalidGoalError, ProfileNotFoundError, SentientError
from sentient.projects import (
    DocsNotAllowedError,
    NoReportError,
    ProjectCompletedError,
    ProjectNotRunningError,
    ProjectRunningError,
    UnusablePlanError,
)
from sentient.store import (
    InvalidProjectIdError,
    NodeNotFoundError,
    Owner,
    ProjectBusyError,
    ProjectExistsError,
    ProjectNotFoundError,
    ReviewAlreadyAnsweredError,
    ReviewNotFoundError,
)
from sentient_server.errors import as_api_error


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (ConfigError("bad"), 400, "invalid_config"),
        (InvalidGoalError("empty"), 400, "invalid_config"),
        (ProfileNotFoundError("x", ["general_agent"]), 400, "invalid_config"),
        (DocsNotAllowedError("outside every root"), 403, "forbidden"),
        (UnusablePlanError("r", ["subtask 0 depends on itself"]), 400, "invalid_plan"),
        (ProjectNotFoundError("p"), 404, "not_found"),
        (InvalidProjectIdError("../p"), 404, "not_found"),
        (NodeNotFoundError("p", "root.9"), 404, "not_found"),
        (ReviewNotFoundError("r"), 404, "not_found"),
        (NoReportError("p"), 404, "no_report"),
        (ProjectExistsError("p"), 409, "conflict"),
        (ProjectBusyError("p", 1), 409, "conflict"),
        (ProjectRunningError("p"), 409, "conflict"),
        (ProjectNotRunningError("p"), 409, "conflict"),
        (ProjectCompletedError("p"), 409, "conflict"),
        (ReviewAlreadyAnsweredError("r"), 409, "conflict"),
        (ExportError("pdf", "no Pango", fix="install Pango"), 503, "unavailable"),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, SentientError) else str(v),
)
def test_each_domain_error_has_one_status(error: SentientError, status: int, code: str) -> None:
    mapped = as_api_error(error)
    assert mapped is not None
    assert (mapped.status, mapped.code) == (status, code)
    assert mapped.message.rstrip(".") == str(error).rstrip(".")


def test_an_unexpected_exception_is_not_mapped() -> None:
    assert as_api_error(RuntimeError("bug")) is None


def test_a_project_another_process_runs_is_409_and_is_not_reset(client: FlaskClient) -> None:
    pid = client.post("/api/projects", json={"goal": "What is asyncio?"}).get_json()["project_id"]
    services = client.application.extensions["sentient"]
    services.store.claim(pid, Owner.local(1))  # init: alive, and not the server

    for action in ("execute", "resume", "cancel"):
        response = client.post(f"/api/projects/{pid}/{action}")
        assert response.status_code == 409, action
        assert "process 1" in response.get_json()["error"]["message"]
    response = client.delete(f"/api/projects/{pid}")
    assert response.status_code == 409
    assert client.get(f"/api/projects/{pid}").get_json()["status"] == "running"

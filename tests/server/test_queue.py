"""A server given a job queue (SENTIENT_QUEUE_URL) queues its projects for workers and runs none itself."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from fakes.redis_server import RedisServer
from flask import Flask

from sentient.agents.models.fake import ScriptedModel
from sentient.exceptions import ConfigError
from sentient_server import ServerSettings, create_app
from sentient_server.jobqueue import QUEUE_NAME, QUEUED
from sentient_server.runs import ShuttingDownError


def with_urls(settings: ServerSettings, **urls: str | None) -> ServerSettings:
    return replace(settings, sentient=settings.sentient.model_copy(update=urls))


def test_executing_queues_one_job_and_runs_nothing_here_and_a_lost_queue_answers_503(
    redis_server: RedisServer, server_settings: ServerSettings, make_app: Callable[..., Flask], tmp_path: Path
) -> None:
    folder = tmp_path / "queue"
    folder.mkdir()
    queue = RedisServer(folder)
    try:
        app = make_app(with_urls(server_settings, redis_url=redis_server.url, queue_url=queue.url))
        client = app.test_client()
        created = client.post("/api/projects", json={"goal": "Explain how asyncio schedules tasks"})
        project_id = created.get_json()["project_id"]
        assert client.post(f"/api/projects/{project_id}/execute").status_code == 202
        assert queue.client().zcard(QUEUE_NAME) == 1
        (job,) = queue.client().keys("arq:job:*")
        assert queue.client().pttl(job) > 29 * 24 * 3600 * 1000  # it waits weeks for a worker, not a day
        time.sleep(0.3)
        assert client.get(f"/api/projects/{project_id}").get_json()["status"] == "created"  # no engine took it here
        queue.stop()
        lost = client.post(f"/api/projects/{project_id}/execute")
        assert lost.status_code == 503
        assert lost.get_json()["error"]["code"] == "unavailable"
    finally:
        queue.stop()


def test_a_queue_without_the_redis_of_live_updates_is_refused_naming_it(server_settings: ServerSettings) -> None:
    with pytest.raises(ConfigError, match="SENTIENT_REDIS_URL"):
        create_app(with_urls(server_settings, queue_url="redis://127.0.0.1:1/0"))


def test_a_manager_that_began_to_shut_down_takes_no_queued_project(app: Flask) -> None:
    runs = app.extensions["sentient"].runs
    project_id = runs.create("Explain how asyncio schedules tasks", None, {}).project_id
    runs.shutdown()
    with pytest.raises(ShuttingDownError):
        runs.take(project_id)  # the worker's job queues the project again, for another worker
    assert runs.record(project_id).status.value == "created"


def test_a_run_cancelled_as_its_process_shuts_down_ends_cancelled_and_is_not_handed_back(
    make_app: Callable[..., Flask], server_settings: ServerSettings
) -> None:
    app = make_app(replace(server_settings, model=ScriptedModel(latency=0.5)))
    runs = app.extensions["sentient"].runs
    project_id = runs.create("Explain how asyncio schedules tasks", None, {}).project_id
    runs.execute(project_id)
    assert runs.is_running(project_id)

    runs.cancel(project_id)  # accepted, and the run stops on the engine loop...
    runs.shutdown()  # ...while the process begins to stop (a worker would hand shut-down runs back)

    assert runs.record(project_id).status.value == "cancelled"


def test_a_queued_project_cancelled_before_any_worker_took_it_ends_cancelled_and_its_job_finds_no_mark(
    redis_server: RedisServer, server_settings: ServerSettings, make_app: Callable[..., Flask]
) -> None:
    app = make_app(with_urls(server_settings, redis_url=redis_server.url, queue_url=redis_server.url))
    client = app.test_client()
    kept, cancelled = (
        client.post("/api/projects", json={"goal": f"Explain how asyncio schedules tasks ({n})"}).get_json()[
            "project_id"
        ]
        for n in range(2)
    )
    for project_id in (kept, cancelled):
        assert client.post(f"/api/projects/{project_id}/execute").status_code == 202
    redis = redis_server.client()
    assert sorted(redis.hkeys(QUEUED)) == sorted(p.encode() for p in (kept, cancelled))

    answer = client.post(f"/api/projects/{cancelled}/cancel")

    assert answer.status_code == 202, answer.get_json()
    assert answer.get_json()["status"] == "cancelled"
    assert redis.hkeys(QUEUED) == [kept.encode()]  # a worker taking its job drops it
    assert client.get(f"/api/projects/{kept}").get_json()["status"] == "created"
    again = client.post(f"/api/projects/{cancelled}/cancel")
    assert again.status_code == 409  # no longer queued, and not running


def test_a_queued_project_deleted_before_any_worker_took_it_is_gone_with_its_mark(
    redis_server: RedisServer, server_settings: ServerSettings, make_app: Callable[..., Flask]
) -> None:
    app = make_app(with_urls(server_settings, redis_url=redis_server.url, queue_url=redis_server.url))
    client = app.test_client()
    project_id = client.post("/api/projects", json={"goal": "Explain how asyncio schedules tasks"}).get_json()[
        "project_id"
    ]
    assert client.post(f"/api/projects/{project_id}/execute").status_code == 202
    redis = redis_server.client()
    assert redis.hkeys(QUEUED) == [project_id.encode()]

    assert client.delete(f"/api/projects/{project_id}").status_code == 200

    assert redis.hkeys(QUEUED) == []  # the worker that takes its job drops it
    assert client.get(f"/api/projects/{project_id}").status_code == 404

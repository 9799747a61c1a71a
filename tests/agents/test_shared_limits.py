"""Provider limits shared through a real redis-server by separate OS processes (tests/agents/limits_worker.py)."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fakes.redis_server import RedisServer
from limits_worker import API_KEY, BASE_URL, PROVIDER

from sentient.agents.models.gates import ProviderGates
from sentient.agents.models.resilience import call_with_retries, is_transient
from sentient.agents.registry import AgentRegistry
from sentient.exceptions import ConfigError, ProviderLimitsError
from sentient.projects import ProjectService
from sentient.settings import Settings
from sentient.store import ProjectStore

WORKER = Path(__file__).with_name("limits_worker.py")


@contextmanager
def workers(url: str, mode: str, options: dict[str, Any], count: int = 2) -> Iterator[list[subprocess.Popen[str]]]:
    """``count`` worker processes, each connected and waiting for the word to start."""
    processes = [
        subprocess.Popen(
            [sys.executable, str(WORKER), url, mode, json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == ("held" if mode == "hold" else "ready")
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()


def start_and_collect(processes: list[subprocess.Popen[str]], timeout_s: float = 60) -> list[list[Any]]:
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    results = []
    for process in processes:
        out, _ = process.communicate(timeout=timeout_s)
        assert process.returncode == 0
        results.append(json.loads(out))
    return results


def test_two_processes_keep_to_one_rate_limit_together(redis_server: RedisServer) -> None:
    rpm, burst, duration_s = 300, 2, 2.5  # 5 requests a second, 2 saved
    per_s = rpm / 60
    with workers(redis_server.url, "rate", {"rpm": rpm, "burst": burst, "duration_s": duration_s}) as processes:
        first, second = start_and_collect(processes)

    stamps = sorted(first + second)
    assert len(first) >= 3 and len(second) >= 3  # both got requests through
    # Alone, each process would take burst + per_s * duration_s (about 14): together, about that many.
    assert len(stamps) <= burst + per_s * (stamps[-1] - stamps[0]) + 2
    assert len(stamps) >= 0.6 * per_s * duration_s
    # In every window: at most the saved tokens plus what refills in it (slack: 2 tokens of timing jitter).
    for i, j in itertools.combinations(range(len(stamps)), 2):
        assert j - i + 1 <= burst + per_s * (stamps[j] - stamps[i]) + 2, (i, j, stamps)


def test_two_processes_never_exceed_the_shared_concurrency_cap(redis_server: RedisServer) -> None:
    options = {"cap": 2, "tasks": 3, "hold_s": 0.05, "duration_s": 1.5}
    with workers(redis_server.url, "slots", options) as processes:
        first, second = start_and_collect(processes)

    assert first and second
    edges = sorted([(enter, 1) for enter, _ in first + second] + [(exit, -1) for _, exit in first + second])
    in_flight = peak = 0
    for _, step in edges:  # an exit at the same instant as an enter sorts first
        in_flight += step
        peak = max(peak, in_flight)
    assert peak == 2  # 6 eager callers: the cap is reached, and never passed


async def test_a_killed_holders_slot_frees_itself_after_its_lease(redis_server: RedisServer) -> None:
    lease_s = 1.0
    gates = ProviderGates(redis_server.url, lease_s=lease_s)
    gate = gates.gate(PROVIDER, BASE_URL, API_KEY, requests_per_minute=None, max_concurrency=1)
    with workers(redis_server.url, "hold", {"cap": 1, "lease_s": lease_s}, count=1) as (holder,):
        await asyncio.sleep(2 * lease_s)  # the holder renews its lease while it lives
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5), gate.hold():
                pass

        holder.send_signal(signal.SIGKILL)
        holder.wait()
        killed = time.monotonic()
        async with asyncio.timeout(lease_s + 3), gate.hold():
            waited = time.monotonic() - killed
    assert waited <= lease_s + 0.5
    await gates.aclose()


async def test_a_timeout_around_a_waiter_always_fires(redis_server: RedisServer) -> None:
    # Timeouts of under half a millisecond land while the waiter's first command is written,
    # where Python 3.11's wait_for (inside redis-py) loses about one cancellation in five.
    holder, waiter = ProviderGates(redis_server.url), ProviderGates(redis_server.url)  # as two processes would
    gates = [g.gate(PROVIDER, BASE_URL, API_KEY, requests_per_minute=None, max_concurrency=1) for g in (holder, waiter)]
    timeouts = random.Random(7)

    async def wait_for_a_slot(timeout_s: float) -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(timeout_s), gates[1].hold():
                pass

    async with gates[0].hold():  # the only slot
        for attempt in range(100):
            task = asyncio.create_task(wait_for_a_slot(timeouts.uniform(0, 0.0005)))
            done, _ = await asyncio.wait([task], timeout=2)
            if not done:
                task.cancel()
                pytest.fail(f"try {attempt}: the waiter's timeout never fired")
            task.result()
    await holder.aclose()
    await waiter.aclose()


async def test_redis_key_names_reveal_neither_the_api_key_nor_the_endpoint(redis_server: RedisServer) -> None:
    gates = ProviderGates(redis_server.url)
    gate = gates.gate(PROVIDER, BASE_URL, API_KEY, requests_per_minute=60, max_concurrency=2)
    async with gate.hold():
        names = [name.decode() for name in redis_server.client().keys("*")]
    await gates.aclose()
    assert len(names) == 2
    assert all(name.startswith(f"sentient:limits:{PROVIDER}:") for name in names)
    assert not any(API_KEY in name or "127.0.0.1" in name for name in names)


def test_unreachable_redis_at_start_names_the_setting(tmp_path: Path, redis_server: RedisServer) -> None:
    redis_server.stop()  # a port where nothing answers any more
    url = f"redis://:hunter2@127.0.0.1:{redis_server.port}/0"
    settings = Settings(results_dir=tmp_path, cache_dir=tmp_path / "cache", redis_url=url)
    with ProjectStore.open(tmp_path) as store:
        service = ProjectService(store, settings, AgentRegistry.load(settings.config_dir))
        engine_settings = service.settings_for("general_agent", {})
        with pytest.raises(ConfigError, match="SENTIENT_REDIS_URL") as raised:
            service.researcher(
                "general_agent", engine_settings=engine_settings, model=f"openai-compatible:{BASE_URL}:m"
            )
    assert "hunter2" not in str(raised.value)
    assert f"127.0.0.1:{redis_server.port}" in str(raised.value)


async def test_redis_lost_mid_run_is_a_transient_error_that_is_retried(redis_server: RedisServer) -> None:
    gates = ProviderGates(redis_server.url)
    gate = gates.gate(PROVIDER, BASE_URL, API_KEY, requests_per_minute=600, max_concurrency=2)
    async with gate.hold():
        pass
    redis_server.stop()
    calls = 0

    async def call() -> str:
        nonlocal calls
        calls += 1
        return "sent"

    async with asyncio.timeout(30):  # never a hang
        with pytest.raises(ProviderLimitsError, match=f"127.0.0.1:{redis_server.port}") as raised:
            await call_with_retries(call, gate, max_attempts=3, base_delay_s=0, max_delay_s=0, attempt_timeout_s=5)
    assert calls == 0
    assert is_transient(raised.value)
    assert gate.concurrency.in_use == 0
    await gates.aclose()

"""One provider gate per provider key per process: every run of a project service shares it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from sentient.agents.models.gates import ProviderGates, limit_key
from sentient.agents.models.resilience import ProviderGate, call_with_retries
from sentient.projects import ProjectService, Researcher
from sentient.settings import Settings
from sentient.store import ProjectStore

MODEL = "openai-compatible:http://127.0.0.1:9/v1:some-model"


@pytest.fixture
def service(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProjectService]:
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    with ProjectStore.open(settings.results_dir) as store:
        yield ProjectService(store, settings)


def researcher(service: ProjectService) -> Researcher:
    return service.researcher("general_agent", engine_settings=service.settings_for("general_agent", {}), model=MODEL)


def gate_of(researcher: Researcher) -> ProviderGate:
    handle = researcher.models.for_agent(next(iter(researcher.profile.agents())))
    assert handle.gate is not None
    return handle.gate


def test_runs_of_one_service_share_the_gate_of_a_provider_key(service: ProjectService) -> None:
    first, second = researcher(service), researcher(service)
    assert gate_of(first) is gate_of(second)


def test_another_api_key_gets_another_gate(service: ProjectService, monkeypatch: pytest.MonkeyPatch) -> None:
    without_key = gate_of(researcher(service))
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-other")
    with_key = gate_of(researcher(service))
    assert with_key is not without_key
    assert with_key is gate_of(researcher(service))


def test_limit_keys_name_the_provider_and_hide_the_key() -> None:
    key = limit_key("openai", None, "sk-secret-123")
    assert key.startswith("openai:") and "sk-secret" not in key
    assert key != limit_key("openai", None, "sk-secret-124")
    assert key != limit_key("openai", "https://proxy.example/v1", "sk-secret-123")


async def test_calls_of_two_runs_keep_to_one_concurrency_cap() -> None:
    gates = ProviderGates()
    runs = [gates.gate("openai", None, "sk", requests_per_minute=None, max_concurrency=2) for _ in range(2)]
    in_flight = peak = 0

    async def call() -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1

    await asyncio.gather(
        *(
            call_with_retries(call, gate, max_attempts=1, base_delay_s=0, max_delay_s=0, attempt_timeout_s=5)
            for gate in runs
            for _ in range(5)
        )
    )
    assert peak == 2


def test_a_later_request_with_other_limits_keeps_the_first_gate() -> None:
    gates = ProviderGates()
    first = gates.gate("openai", None, "sk", requests_per_minute=60, max_concurrency=2)
    assert gates.gate("openai", None, "sk", requests_per_minute=120, max_concurrency=8) is first
    assert first.concurrency.limit == 2

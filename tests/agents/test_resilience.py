"""Rate limiting, adaptive concurrency, error classification and retries, with a fake clock."""

from __future__ import annotations

import asyncio
import json
import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import ollama
import pytest
from agno.exceptions import (
    ContextWindowExceededError,
    ModelAuthenticationError,
    ModelProviderError,
    ModelRateLimitError,
)

from sentient.agents.models.resilience import (
    AdaptiveConcurrency,
    ProviderGate,
    RateLimiter,
    call_with_retries,
    is_rate_limit,
    is_transient,
    retry_after_s,
)

REQUEST = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")


class FakeClock:
    """``clock`` and ``sleep`` for code under test: sleeping moves the clock, instantly."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)  # let other tasks run, as a real sleep would


def status_error(status: int, headers: dict[str, str] | None = None) -> httpx.HTTPStatusError:
    response = httpx.Response(status, headers=headers or {}, request=REQUEST)
    return httpx.HTTPStatusError(f"HTTP {status}", request=REQUEST, response=response)


def wrapped(cause: BaseException, status: int = 502) -> ModelProviderError:
    """A ModelProviderError raised ``from`` ``cause``, as agno's provider classes do."""
    try:
        raise ModelProviderError("provider failed", status_code=status) from cause
    except ModelProviderError as exc:
        return exc


# -- rate limiter ----------------------------------------------------------------------------


async def test_a_full_bucket_serves_its_budget_then_waits() -> None:
    clock = FakeClock()
    limiter = RateLimiter(60, clock=clock, sleep=clock.sleep)
    for _ in range(60):
        await limiter.acquire()
    assert clock.sleeps == []
    await limiter.acquire()
    assert clock.sleeps == [pytest.approx(1.0)]  # 60 a minute: one token a second
    assert limiter.waits == 1


async def test_tokens_come_back_with_time() -> None:
    clock = FakeClock()
    limiter = RateLimiter(60, clock=clock, sleep=clock.sleep)
    for _ in range(60):
        await limiter.acquire()
    clock.now += 30
    for _ in range(30):
        await limiter.acquire()
    assert limiter.waits == 0
    await limiter.acquire()
    assert limiter.waits == 1


async def test_concurrent_callers_share_one_bucket_in_order() -> None:
    clock = FakeClock()
    limiter = RateLimiter(6, burst=2, clock=clock, sleep=clock.sleep)  # a token every 10 s, 2 saved
    served: list[tuple[int, float]] = []

    async def caller(index: int) -> None:
        await limiter.acquire()
        served.append((index, clock.now))

    await asyncio.gather(*(caller(i) for i in range(5)))
    assert [index for index, _ in served] == [0, 1, 2, 3, 4]
    assert [at - 1000.0 for _, at in served] == pytest.approx([0, 0, 10, 20, 30])
    assert limiter.waits == 3


def test_rate_limiter_needs_a_positive_rate() -> None:
    with pytest.raises(ValueError):
        RateLimiter(0)


# -- adaptive concurrency --------------------------------------------------------------------


def test_rate_limits_halve_concurrency_down_to_one() -> None:
    gate = AdaptiveConcurrency(8)
    seen = []
    for _ in range(5):
        gate.on_rate_limited()
        seen.append(gate.current)
    assert seen == [4, 2, 1, 1, 1]


def test_successes_grow_concurrency_back_by_one_per_run_up_to_the_limit() -> None:
    gate = AdaptiveConcurrency(4, grow_after=5)
    gate.on_rate_limited()
    gate.on_rate_limited()
    assert gate.current == 1
    for _ in range(4):
        gate.on_success()
    assert gate.current == 1
    gate.on_success()
    assert gate.current == 2
    for _ in range(100):
        gate.on_success()
    assert gate.current == 4


def test_a_rate_limit_resets_the_run_of_successes() -> None:
    gate = AdaptiveConcurrency(4, grow_after=3)
    gate.on_rate_limited()
    gate.on_success()
    gate.on_success()
    gate.on_rate_limited()
    gate.on_success()
    gate.on_success()
    assert gate.current == 1


async def test_gate_admits_only_current_callers_and_wakes_waiters_as_it_grows() -> None:
    gate = AdaptiveConcurrency(4, grow_after=1)
    gate.on_rate_limited()  # 4 -> 2
    release = asyncio.Event()
    peak = 0

    async def worker() -> None:
        nonlocal peak
        async with gate:
            peak = max(peak, gate.in_use)
            await release.wait()

    tasks = [asyncio.create_task(worker()) for _ in range(6)]
    await asyncio.sleep(0)
    assert gate.in_use == 2
    gate.on_success()  # 2 -> 3: one more waiter gets a slot
    await asyncio.sleep(0)
    assert gate.in_use == 3
    release.set()
    await asyncio.gather(*tasks)
    assert peak == 3
    assert gate.in_use == 0


async def test_a_cancelled_waiter_does_not_leak_a_slot() -> None:
    gate = AdaptiveConcurrency(1)
    release = asyncio.Event()

    async def holder() -> None:
        async with gate:
            await release.wait()

    first = asyncio.create_task(holder())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(holder())
    await asyncio.sleep(0)
    waiter.cancel()
    release.set()
    await first
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert gate.in_use == 0
    async with gate:
        assert gate.in_use == 1


async def test_provider_gate_applies_its_rate_limit() -> None:
    clock = FakeClock()
    gate = ProviderGate(120, 4, clock=clock, sleep=clock.sleep)
    assert gate.limiter is not None
    for _ in range(121):
        async with gate.hold():
            pass
    assert gate.limiter.waits == 1
    assert clock.sleeps == [pytest.approx(0.5)]
    assert gate.concurrency.in_use == 0


# -- classification --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (TimeoutError(), True),
        (httpx.ConnectError("refused", request=REQUEST), True),
        (httpx.ReadTimeout("slow", request=REQUEST), True),
        (ConnectionError("ollama is not running"), True),
        (status_error(429), True),
        (status_error(503), True),
        (status_error(408), True),
        (status_error(400), False),
        (status_error(401), False),
        (ollama.ResponseError("busy", 503), True),
        (ollama.ResponseError("model not found", 404), False),
        (ModelRateLimitError("slow down"), True),
        (ModelProviderError("server said no", status_code=500), True),
        (ModelProviderError("bad request", status_code=400), False),
        (ContextWindowExceededError("prompt too long"), False),
        (ModelAuthenticationError("no key"), False),
        (wrapped(status_error(503)), True),
        (wrapped(status_error(404)), False),
        (wrapped(json.JSONDecodeError("Expecting value", "{", 1)), True),
        (wrapped(TypeError("a bug in the client")), False),
        (ValueError("not a provider error"), False),
    ],
)
def test_is_transient(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient


@pytest.mark.parametrize(
    ("error", "rate_limit"),
    [
        (ModelRateLimitError("slow down"), True),
        (ModelProviderError("overloaded", status_code=529), True),
        (wrapped(status_error(429)), True),
        (wrapped(status_error(500)), False),
        (ModelProviderError("x", status_code=500), False),
        (TimeoutError(), False),
    ],
)
def test_is_rate_limit(error: BaseException, rate_limit: bool) -> None:
    assert is_rate_limit(error) is rate_limit


def test_retry_after_reads_seconds_milliseconds_and_dates() -> None:
    assert retry_after_s(wrapped(status_error(429, {"Retry-After": "12"}))) == 12
    assert retry_after_s(status_error(429, {"retry-after-ms": "1500", "Retry-After": "2"})) == 1.5
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    assert 100 < (retry_after_s(status_error(503, {"Retry-After": later})) or 0) <= 120
    assert retry_after_s(status_error(429)) is None
    assert retry_after_s(status_error(429, {"Retry-After": "soon"})) is None
    assert retry_after_s(TimeoutError()) is None


# -- call_with_retries -----------------------------------------------------------------------


class Script:
    """A call that fails with the given errors in turn, then returns ``result``; counts its calls."""

    def __init__(self, *errors: BaseException, result: str = "done") -> None:
        self.errors = list(errors)
        self.result = result
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.result


async def run(script: Script, gate: ProviderGate | None = None, **options: object) -> tuple[str, list[float]]:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    settings: dict[str, object] = {
        "max_attempts": 4,
        "base_delay_s": 1.0,
        "max_delay_s": 8.0,
        "attempt_timeout_s": 5.0,
        "rng": random.Random(7),
    }
    settings.update(options)
    result = await call_with_retries(script, gate or ProviderGate(None, 4), sleep=sleep, **settings)  # type: ignore[arg-type]
    return result, sleeps


async def test_non_transient_error_propagates_at_once() -> None:
    script = Script(ModelProviderError("bad request", status_code=400))
    with pytest.raises(ModelProviderError, match="bad request"):
        await run(script)
    assert script.calls == 1


async def test_transient_errors_back_off_exponentially_with_jitter() -> None:
    script = Script(status_error(500), status_error(502), status_error(503))
    result, sleeps = await run(script)
    assert result == "done"
    assert script.calls == 4
    for attempt, delay in enumerate(sleeps, start=1):
        ceiling = 2.0 ** (attempt - 1)
        assert ceiling / 2 <= delay <= ceiling


async def test_backoff_is_capped() -> None:
    script = Script(*[status_error(500)] * 5)
    _, sleeps = await run(script, max_attempts=6, max_delay_s=3.0)
    assert len(sleeps) == 5
    assert max(sleeps) <= 3.0
    assert sleeps[-1] >= 1.5


async def test_retry_after_wins_over_a_shorter_backoff_but_not_the_cap() -> None:
    script = Script(
        wrapped(status_error(429, {"Retry-After": "5"}), 429), wrapped(status_error(429, {"Retry-After": "60"}), 429)
    )
    _, sleeps = await run(script)
    assert sleeps == [5, 8]


async def test_the_last_error_propagates_after_the_last_attempt() -> None:
    errors = [status_error(503) for _ in range(3)]
    script = Script(*errors)
    retries: list[int] = []
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await run(script, max_attempts=3, on_retry=lambda n, exc, delay: retries.append(n))
    assert caught.value is errors[-1]
    assert script.calls == 3
    assert retries == [1, 2]


async def test_an_attempt_that_times_out_is_retried() -> None:
    never = asyncio.Event()
    calls = 0

    async def slow_then_fast() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            await never.wait()
        return "fast"

    result = await call_with_retries(
        slow_then_fast,
        ProviderGate(None, 1),
        max_attempts=2,
        base_delay_s=0,
        max_delay_s=0,
        attempt_timeout_s=0.01,
    )
    assert (result, calls) == ("fast", 2)


async def test_timeouts_on_every_attempt_raise_timeout_error() -> None:
    never = asyncio.Event()
    calls = 0

    async def hangs() -> None:
        nonlocal calls
        calls += 1
        await never.wait()

    gate = ProviderGate(None, 2)
    with pytest.raises(TimeoutError):
        await call_with_retries(hangs, gate, max_attempts=3, base_delay_s=0, max_delay_s=0, attempt_timeout_s=0.01)
    assert calls == 3
    assert gate.concurrency.in_use == 0


async def test_sustained_rate_limits_drop_concurrency_and_successes_recover_it() -> None:
    gate = ProviderGate(None, 8)
    script = Script(*[ModelRateLimitError("slow down") for _ in range(4)])
    with pytest.raises(ModelRateLimitError):
        await run(script, gate)
    assert gate.rate_limited == 4
    assert gate.concurrency.current == 1

    for _ in range(5 * 7):  # grow_after=5 successes per step, 7 steps from 1 back to 8
        await run(Script(), gate)
    assert gate.concurrency.current == 8
    await run(Script(), gate)
    assert gate.concurrency.current == 8


async def test_concurrent_calls_never_exceed_the_gate() -> None:
    gate = ProviderGate(None, 3)
    in_flight = peak = 0

    async def call() -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)
        in_flight -= 1
        return "ok"

    results = await asyncio.gather(
        *(
            call_with_retries(call, gate, max_attempts=1, base_delay_s=0, max_delay_s=0, attempt_timeout_s=5)
            for _ in range(20)
        )
    )
    assert results == ["ok"] * 20
    assert peak == 3


def test_a_limiter_serves_one_event_loop_after_another() -> None:
    """A process that runs twice (``ProfiledSentientAgent.run`` twice: one event loop each)
    keeps its provider's limiter, and callers queue on it in both loops."""
    clock = FakeClock()
    limiter = RateLimiter(60, burst=1, clock=clock, sleep=clock.sleep)  # a token a second

    async def three_callers() -> None:
        await asyncio.gather(limiter.acquire(), limiter.acquire(), limiter.acquire())

    asyncio.run(three_callers())
    asyncio.run(three_callers())  # raised "bound to a different event loop" when the queue was the first loop's
    assert limiter.waits == 5  # all but the very first caller: no time passes between the loops
    assert clock.sleeps == pytest.approx([1.0] * 5)

"""Calling a hosted model without tripping its limits: rate limiting, adaptive concurrency, retries.

One :class:`ProviderGate` per provider key is shared by every run of a process
(:mod:`sentient.agents.models.gates`), and, with Redis, its limits by every process. Each attempt of
:func:`call_with_retries` takes a concurrency slot and a rate token, runs under a timeout, and
tells the gate how it went: a 429 halves the provider's concurrency, successes grow it back.
Transient failures (429, 5xx, connection errors, timeouts, malformed answers) are retried with
exponential backoff and jitter, honouring ``Retry-After``; anything else propagates at once. A
total deadline bounds all the attempts of one call, backoff included.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Any, Protocol, TypeVar

import httpx
from agno.exceptions import (
    ContextWindowExceededError,
    ModelAuthenticationError,
    ModelProviderError,
    ModelRateLimitError,
)
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from sentient.exceptions import MalformedResponseError, ProviderLimitsError

T = TypeVar("T")

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

RATE_LIMIT_STATUSES = frozenset({429, 529})  # 529: Anthropic "overloaded"
TRANSIENT_STATUSES = RATE_LIMIT_STATUSES | {408}  # and every 5xx

# Errors that mean "the request did not get through or no answer came back in time".
_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    TimeoutError,
    ConnectionError,  # includes what the ollama client raises when it cannot connect
    httpx.TransportError,
)
# The SDKs' own: APIConnectionError (openai's includes APITimeoutError). The SDKs load only with a
# hosted model (sentient.agents.models.hosted), and an SDK that is not loaded raised nothing.
_SDKS_WITH_CONNECTION_ERRORS = ("openai", "anthropic")


def _connection_errors() -> tuple[type[BaseException], ...]:
    loaded = (sys.modules.get(name) for name in _SDKS_WITH_CONNECTION_ERRORS)
    return (*_CONNECTION_ERRORS, *(sdk.APIConnectionError for sdk in loaded if sdk is not None))


class RateLimiter:
    """An async token bucket: ``requests_per_minute`` tokens a minute, up to ``burst`` saved.

    Callers wait in arrival order. ``waits`` counts the acquisitions that had to wait. The
    limiter outlives event loops (a process's provider gate serves every run, and
    ``ProfiledSentientAgent.run`` starts a loop per call), so its queue belongs to the loop in
    which callers wait; one loop at a time may use it.
    """

    def __init__(
        self,
        requests_per_minute: float,
        *,
        burst: float | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be positive")
        self._per_second = requests_per_minute / 60.0
        self._capacity = max(1.0, burst if burst is not None else requests_per_minute)
        self._tokens = self._capacity
        self._clock = clock
        self._sleep = sleep
        self._updated = clock()
        self._lock = asyncio.Lock()
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self.waits = 0

    async def acquire(self) -> None:
        """Take one token, waiting until one is available."""
        loop = asyncio.get_running_loop()
        if loop is not self._lock_loop:  # an asyncio.Lock binds to the first loop that waits on it
            self._lock, self._lock_loop = asyncio.Lock(), loop
        async with self._lock:  # one waiter sleeps at a time, so tokens go out in arrival order
            self._refill()
            if self._tokens < 1:
                self.waits += 1
            while self._tokens < 1:
                await self._sleep((1 - self._tokens) / self._per_second)
                self._refill()
            self._tokens -= 1

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self._capacity, self._tokens + (now - self._updated) * self._per_second)
        self._updated = now


class AdaptiveConcurrency:
    """An AIMD gate, used as ``async with gate:``.

    A rate limit halves ``current`` (not below 1); every ``grow_after`` successes in a row
    add 1 back, up to ``limit``. Calls already in flight finish; new ones wait for a slot.
    """

    def __init__(self, limit: int, *, grow_after: int = 5) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._current = limit
        self._grow_after = grow_after
        self._streak = 0
        self._in_use = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def current(self) -> int:
        """How many calls may be in flight now."""
        return self._current

    @property
    def in_use(self) -> int:
        return self._in_use

    def on_rate_limited(self) -> None:
        self._current = max(1, self._current // 2)
        self._streak = 0

    def on_success(self) -> None:
        self._streak += 1
        if self._streak >= self._grow_after and self._current < self.limit:
            self._current += 1
            self._streak = 0
            self._wake()

    async def __aenter__(self) -> AdaptiveConcurrency:
        if self._in_use < self._current and not self._waiters:
            self._in_use += 1
            return self
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # a slot was handed over just as we were cancelled
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._release()

    def _release(self) -> None:
        self._in_use -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self._in_use < self._current:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._in_use += 1  # the slot is taken on the waiter's behalf
                waiter.set_result(None)


class Limiter(Protocol):
    """A requests-per-minute limit: :class:`RateLimiter`, or one shared through Redis."""

    async def acquire(self) -> None:
        """Take one request's worth of the limit, waiting until it is available."""
        ...


class SharedSlots(Protocol):
    """A cap on calls in flight shared with other processes (a Redis semaphore with leases)."""

    def hold(self) -> AbstractAsyncContextManager[None]:
        """Hold one slot for the duration of the ``async with`` block."""
        ...


class ProviderGate:
    """Everything between the calls and one provider key: its concurrency gate and its rate limit.

    The adaptive concurrency is always this process's own. The rate limit is a local token bucket
    (``requests_per_minute``), or ``limiter`` when given (one shared through Redis); ``slots``,
    when given, caps the calls in flight of every process together. A call holds the gate with
    ``async with gate.hold():``.
    """

    def __init__(
        self,
        requests_per_minute: float | None,
        max_concurrency: int,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        limiter: Limiter | None = None,
        slots: SharedSlots | None = None,
    ) -> None:
        self.concurrency = AdaptiveConcurrency(max_concurrency)
        if limiter is None and requests_per_minute:
            limiter = RateLimiter(requests_per_minute, clock=clock, sleep=sleep)
        self.limiter = limiter
        self.slots = slots
        self.rate_limited = 0  # how many 429s this provider has answered

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """A slot of the local gate, then of the shared cap (if any), then a rate token."""
        async with self.concurrency, contextlib.AsyncExitStack() as stack:
            if self.slots is not None:
                await stack.enter_async_context(self.slots.hold())
            if self.limiter is not None:
                await self.limiter.acquire()
            yield

    def on_rate_limited(self) -> None:
        self.rate_limited += 1
        self.concurrency.on_rate_limited()

    def on_success(self) -> None:
        self.concurrency.on_success()


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the errors under it (``raise … from`` first, then the implicit context)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)


def _http_status(exc: BaseException) -> int | None:
    """The HTTP status an SDK error carries (openai, anthropic, httpx, ollama), if any."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int):
        return status
    if type(exc).__module__.startswith("ollama"):  # ollama.ResponseError: -1 when there was no response
        status = getattr(exc, "status_code", None)
        return status if isinstance(status, int) and status > 0 else None
    return None


def _verdict(exc: BaseException) -> bool | None:
    """Whether one link of the chain says transient (True), permanent (False), or nothing (None)."""
    if isinstance(exc, (*_connection_errors(), ModelRateLimitError, MalformedResponseError, ProviderLimitsError)):
        return True
    if isinstance(exc, ContextWindowExceededError | ModelAuthenticationError):
        return False
    status = _http_status(exc)
    if status is not None:
        return status in TRANSIENT_STATUSES or status >= 500
    if isinstance(exc, json.JSONDecodeError):
        return True  # a truncated or garbled body from the server or a proxy: like a 502
    if isinstance(exc, ModelProviderError) and exc.__cause__ is None:
        return (
            exc.status_code in TRANSIENT_STATUSES or exc.status_code >= 500
        )  # the provider's own error report, no SDK error below
    return None


def describe(exc: BaseException) -> str:
    """``Type: message`` for logs and node errors (some SDK errors have an empty message)."""
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


class DeadlineExceeded(TimeoutError):
    """All the attempts of one call together ran past its deadline."""

    def __init__(self, deadline_s: float, attempts: int) -> None:
        self.deadline_s = deadline_s
        self.attempts = attempts
        super().__init__(f"no answer within the call's {deadline_s:g}s deadline ({attempts} attempt(s))")


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying: 429/529, 5xx, 408, connection errors, timeouts, garbled bodies,
    and the shared provider limits (Redis) failing.

    agno wraps SDK errors in ``ModelProviderError`` (status 502 when it has none), so the chain
    is read from the top down and the first link that says something decides. A wrapped bug
    (a TypeError inside agno, say) says nothing and is not retried.
    """
    for link in _chain(exc):
        verdict = _verdict(link)
        if verdict is not None:
            return verdict
    return False


def is_rate_limit(exc: BaseException) -> bool:
    """True when the provider said "slow down" (HTTP 429, or Anthropic's 529 overloaded)."""
    for link in _chain(exc):
        if isinstance(link, ModelRateLimitError):
            return True
        status = _http_status(link)
        if status is None and isinstance(link, ModelProviderError) and link.__cause__ is None:
            status = link.status_code
        if status is not None:
            return status in RATE_LIMIT_STATUSES
    return False


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait (``retry-after-ms`` or ``Retry-After``), if it said."""
    for link in _chain(exc):
        headers: Any = getattr(getattr(link, "response", None), "headers", None)
        if headers is None:
            continue
        millis = _number(headers.get("retry-after-ms"))
        if millis is not None:
            return millis / 1000
        value = headers.get("retry-after")
        seconds = _number(value)
        if seconds is None and value:
            with contextlib.suppress(TypeError, ValueError):
                seconds = parsedate_to_datetime(value).timestamp() - time.time()
        if seconds is not None:
            return max(0.0, seconds)
    return None


def _number(value: object) -> float | None:
    try:
        return float(value) if isinstance(value, str | int | float) else None
    except ValueError:
        return None


class _Backoff:
    """Tenacity wait: exponential backoff with equal jitter, or the provider's Retry-After if longer."""

    def __init__(self, base_s: float, max_s: float, rng: random.Random) -> None:
        self._base_s = base_s
        self._max_s = max_s
        self._rng = rng

    def __call__(self, state: RetryCallState) -> float:
        ceiling = min(self._max_s, self._base_s * 2 ** (state.attempt_number - 1))
        delay = ceiling / 2 + self._rng.uniform(0, ceiling / 2)
        error = state.outcome.exception() if state.outcome is not None else None
        hinted = retry_after_s(error) if error is not None else None
        if hinted is not None:
            delay = max(delay, hinted)
        return min(delay, self._max_s)


RetryHook = Callable[[int, BaseException, float], None]


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    gate: ProviderGate,
    *,
    max_attempts: int,
    base_delay_s: float,
    max_delay_s: float,
    attempt_timeout_s: float,
    deadline_s: float | None = None,
    sleep: Sleep = asyncio.sleep,
    rng: random.Random | None = None,
    on_retry: RetryHook | None = None,
) -> T:
    """Run ``call()`` through ``gate`` until it succeeds, retrying transient failures.

    Each attempt gets a fresh ``call()`` (so build the request inside it) and runs under
    ``attempt_timeout_s``; a timeout raises ``TimeoutError`` and is retried like any transient
    error. The delay before attempt n+1 is ``base_delay_s * 2**(n-1)`` with jitter, at least the
    provider's ``Retry-After``, at most ``max_delay_s``. ``on_retry(attempt, error, delay_s)``
    is called before each wait. The last error propagates unchanged, except that running past
    ``deadline_s`` (all attempts and waits together) raises :class:`DeadlineExceeded`.
    """
    backoff = _Backoff(base_delay_s, max_delay_s, rng or random.Random())

    async def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        if on_retry is not None and error is not None and state.next_action is not None:
            on_retry(state.attempt_number, error, state.next_action.sleep)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(max_attempts),
        retry=retry_if_exception(is_transient),
        wait=backoff,
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    attempts = 0
    try:
        async with asyncio.timeout(deadline_s) as scope:
            async for attempt in retrying:
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    return await _attempt(call, gate, attempt_timeout_s)
    except TimeoutError as exc:
        if deadline_s is not None and scope.expired():
            raise DeadlineExceeded(deadline_s, attempts) from exc
        raise
    raise AssertionError("unreachable: tenacity either returns or re-raises")


async def _attempt(call: Callable[[], Awaitable[T]], gate: ProviderGate, timeout_s: float) -> T:
    async with gate.hold():
        try:
            async with asyncio.timeout(timeout_s):
                result = await call()
        except Exception as exc:
            if is_rate_limit(exc):
                gate.on_rate_limited()
            raise
    gate.on_success()
    return result

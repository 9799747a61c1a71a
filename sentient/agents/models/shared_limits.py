"""Provider limits shared by every process through Redis: a token bucket and a leased semaphore.

Both are Lua scripts, so each step is atomic, and both read the clock with Redis ``TIME``, so
processes on machines with different clocks agree.

- Rate: a token bucket per provider key (``requests_per_minute`` a minute, as many saved), like
  the local :class:`~sentient.agents.models.resilience.RateLimiter`. Each request reserves a
  token in one round trip, going into debt when there is none, and sleeps until its turn: the
  waiters of all processes are served in the order they asked. The hash expires once the bucket
  would be full again.
- Calls in flight: a sorted set of holders, each scored with the end of its lease. A holder
  renews its lease every third of it while the call runs and removes itself when done; a
  process that dies stops renewing, and its slots free themselves when their leases end. A
  caller that finds the set full asks again after a short, growing, jittered pause (10 ms up to
  200 ms): Redis has no cheap way to wake it exactly when a slot frees.

Every command has a timeout; a Redis failure while a call waits raises
:class:`~sentient.exceptions.ProviderLimitsError`, which the call's retries treat as transient.
Releasing a slot that cannot reach Redis only logs: the lease frees it.

On Python 3.11 a cancellation can be lost inside a Redis command: redis-py writes with
``asyncio.wait_for``, which returns instead of raising when the write finishes just as the task
is cancelled (CPython gh-86296, fixed in 3.12). A lost cancellation leaves a waiter polling for
a slot forever, past the timeout that cancelled it. So every command a waiter sends is followed
by :func:`_raise_if_cancelled`.

Connections belong to an event loop, so each loop that uses the limits gets its own client.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import threading
import uuid
import weakref
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.asyncio
from loguru import logger
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.commands.core import AsyncScript
from redis.retry import Retry

from sentient.exceptions import ConfigError, ProviderLimitsError

SETTING = "SENTIENT_REDIS_URL"
KEY_PREFIX = "sentient:limits:"
COMMAND_TIMEOUT_S = 5.0  # connecting, and each command: a Redis that stops answering is an error, not a hang
_POLL_S = (0.01, 0.2)  # first and longest pause between two tries for a slot

# KEYS[1]: the bucket, a hash {tokens, at}. ARGV: tokens per ms, capacity.
# Returns how many ms the caller waits before sending its request (0: at once).
_RESERVE_TOKEN = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = capacity, now
if state[1] and state[2] then
  tokens, at = tonumber(state[1]), tonumber(state[2])
end
tokens = math.min(capacity, tokens + math.max(0, now - at) * rate) - 1
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / rate) + 1000)
if tokens >= 0 then
  return 0
end
return math.ceil(-tokens / rate)
"""

# KEYS[1]: the holders, a sorted set holder -> lease end (ms). ARGV: holder, limit, lease (ms).
# Returns 1 when the holder holds a slot (its lease starts now), 0 when all are taken.
_TAKE_SLOT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
if redis.call('PTTL', KEYS[1]) < lease then
  redis.call('PEXPIRE', KEYS[1], lease)
end
return 1
"""

# Same keys; ARGV: holder, lease (ms). Returns 1 when the lease was renewed, 0 when it had ended.
_RENEW_SLOT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', now + lease, ARGV[1])
if redis.call('PTTL', KEYS[1]) < lease then
  redis.call('PEXPIRE', KEYS[1], lease)
end
return 1
"""


def redacted(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + host))


@dataclass(frozen=True)
class _Connection:
    """One event loop's client and its scripts."""

    client: redis.asyncio.Redis
    reserve_token: AsyncScript
    take_slot: AsyncScript
    renew_slot: AsyncScript


class RedisLimits:
    """The Redis that holds the shared limits: makes the rate limiters and slot caps of the keys.

    Args:
        url: ``redis://…`` (or ``rediss://``, ``unix://``), as for ``redis.Redis.from_url``.
        lease_s: how long a slot stays taken without its holder renewing it.
    """

    def __init__(self, url: str, *, lease_s: float) -> None:
        if lease_s <= 0:
            raise ValueError("lease_s must be positive")
        self.url = url
        self.where = redacted(url)
        self.lease_s = lease_s
        self._connections: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Connection] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def check(self) -> None:
        """Ping Redis (blocking); raise ConfigError naming the setting when it does not answer."""
        fix = f"start Redis there, or unset {SETTING} to keep provider limits within each process."
        try:
            client = redis.Redis.from_url(
                self.url,
                socket_timeout=COMMAND_TIMEOUT_S,
                socket_connect_timeout=COMMAND_TIMEOUT_S,
                retry=Retry(NoBackoff(), 0),
            )
        except ValueError as exc:
            raise ConfigError(f"{self.where} is not a Redis URL: {exc}", field=SETTING, fix=fix) from None
        try:
            client.ping()
        except redis.RedisError as exc:
            raise ConfigError(
                f"Redis at {self.where} does not answer ({type(exc).__name__}: {exc}).", field=SETTING, fix=fix
            ) from None
        finally:
            client.close()

    def rate_limiter(self, key: str, requests_per_minute: float, *, burst: float | None = None) -> RedisRateLimiter:
        return RedisRateLimiter(self, key, requests_per_minute, burst=burst)

    def slots(self, key: str, limit: int) -> RedisSlots:
        return RedisSlots(self, key, limit, lease_s=self.lease_s)

    def connection(self) -> _Connection:
        """The running event loop's client (made on first use)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            connection = self._connections.get(loop)
            if connection is None:
                client = redis.asyncio.Redis.from_url(
                    self.url,
                    socket_timeout=COMMAND_TIMEOUT_S,
                    socket_connect_timeout=COMMAND_TIMEOUT_S,
                    retry=AsyncRetry(ExponentialBackoff(cap=0.1, base=0.01), 1),  # one quick retry, then our error
                )
                connection = self._connections[loop] = _Connection(
                    client,
                    client.register_script(_RESERVE_TOKEN),
                    client.register_script(_TAKE_SLOT),
                    client.register_script(_RENEW_SLOT),
                )
        return connection

    @contextlib.contextmanager
    def errors(self, doing: str) -> Iterator[None]:
        """Turn a Redis failure inside the block into a (transient) ProviderLimitsError."""
        try:
            yield
        except redis.RedisError as exc:
            raise ProviderLimitsError(
                f"shared provider limits: Redis at {self.where} failed while {doing} ({type(exc).__name__}: {exc})",
                where=self.where,
            ) from exc

    async def aclose(self) -> None:
        """Close the running loop's client."""
        with self._lock:
            connection = self._connections.pop(asyncio.get_running_loop(), None)
        if connection is not None:
            await connection.client.aclose()


def _raise_if_cancelled() -> None:
    """Raise the cancellation a Redis command swallowed: the task still counts it as pending."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class RedisRateLimiter:
    """A token bucket kept in Redis: ``requests_per_minute`` tokens a minute, up to ``burst``
    (default: a minute's worth) saved, shared by every process on the key.
    ``waits`` counts this process's acquisitions that had to wait."""

    def __init__(
        self, limits: RedisLimits, key: str, requests_per_minute: float, *, burst: float | None = None
    ) -> None:
        if requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be positive")
        self._limits = limits
        self.key = f"{KEY_PREFIX}{key}:rate"
        self._per_ms = requests_per_minute / 60_000
        self._capacity = max(1.0, burst if burst is not None else requests_per_minute)
        self.waits = 0

    async def acquire(self) -> None:
        """Reserve one token; sleep until it is due."""
        connection = self._limits.connection()
        with self._limits.errors("taking a rate token"):
            wait_ms = await connection.reserve_token(keys=[self.key], args=[repr(self._per_ms), repr(self._capacity)])
        _raise_if_cancelled()
        if wait_ms:
            self.waits += 1
            await asyncio.sleep(int(wait_ms) / 1000)


class RedisSlots:
    """At most ``limit`` calls in flight among every process on the key; each slot is leased."""

    def __init__(self, limits: RedisLimits, key: str, limit: int, *, lease_s: float) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self._limits = limits
        self.key = f"{KEY_PREFIX}{key}:slots"
        self.limit = limit
        self._lease_ms = max(1, round(lease_s * 1000))
        self._owner = f"{socket.gethostname()}:{os.getpid()}"

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """Hold a slot while the block runs, renewing its lease; free it on the way out."""
        holder = f"{self._owner}:{uuid.uuid4().hex[:12]}"
        await self._take(holder)
        renewing = asyncio.create_task(self._renew(holder), name=f"lease {holder}")
        try:
            yield
        finally:
            renewing.cancel()
            await asyncio.wait([renewing])
            await self._release(holder)

    async def _take(self, holder: str) -> None:
        connection = self._limits.connection()
        pause = _POLL_S[0]
        try:
            while True:
                with self._limits.errors("taking a concurrency slot"):
                    taken = await connection.take_slot(keys=[self.key], args=[holder, self.limit, self._lease_ms])
                _raise_if_cancelled()
                if taken:
                    return
                await asyncio.sleep(random.uniform(pause / 2, pause))
                pause = min(_POLL_S[1], pause * 2)
        except asyncio.CancelledError:
            await self._release(holder)  # the script may have run before the cancellation landed
            raise

    async def _renew(self, holder: str) -> None:
        connection = self._limits.connection()
        while True:
            _raise_if_cancelled()
            await asyncio.sleep(self._lease_ms / 3000)
            try:
                renewed = await connection.renew_slot(keys=[self.key], args=[holder, self._lease_ms])
            except redis.RedisError as exc:
                logger.warning("could not renew the lease of {} ({}); will try again", self.key, exc)
                continue
            if not renewed:
                # The process stalled past its lease; the call goes on, and the cap may be
                # exceeded by one until it ends. A lease longer than the longest stall avoids it.
                logger.warning("the lease of a slot of {} ended before its call did", self.key)
                return

    async def _release(self, holder: str) -> None:
        try:
            await self._limits.connection().client.zrem(self.key, holder)
        except redis.RedisError as exc:
            logger.warning("could not free a slot of {} ({}); its lease will", self.key, exc)

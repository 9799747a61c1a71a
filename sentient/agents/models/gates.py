"""The provider gates of a process: one per provider key, shared by every run and project.

A provider key is the provider, its endpoint and the API key in use; it is named by a digest
(:func:`limit_key`), so the raw API key never reaches a log line or a Redis key name. Without
Redis, each gate's limits hold for this process. With ``SENTIENT_REDIS_URL`` set, the
requests-per-minute bucket and the cap on calls in flight are kept in Redis and hold for every
process on the key together (:mod:`sentient.agents.models.shared_limits`); only the adaptive
concurrency (halved on a 429, regrown on success) stays per process, under the shared cap.

The first gate made for a key fixes its limits for the process; a later request with other
limits gets the same gate (and a warning).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loguru import logger

from sentient.agents.models.resilience import ProviderGate
from sentient.settings import Settings

if TYPE_CHECKING:
    from sentient.agents.models.shared_limits import RedisLimits

DEFAULT_LEASE_S = 30.0


def limit_key(provider: str, base_url: str | None, api_key: str | None) -> str:
    """``provider:digest``: names one provider key without revealing the endpoint or the key."""
    digest = hashlib.sha256(f"{provider}\n{base_url or ''}\n{api_key or ''}".encode()).hexdigest()
    return f"{provider}:{digest[:16]}"


@dataclass(frozen=True)
class _Limits:
    requests_per_minute: float | None
    max_concurrency: int


class ProviderGates:
    """One :class:`ProviderGate` per provider key. Thread-safe; owned by whatever lives as long as
    the process's runs (the project service, an eval), and passed to each run's model factory.

    Args:
        redis_url: where the limits are shared (``redis://…``); None keeps them in this process.
        lease_s: with Redis, how long a slot of a process that died stays taken.
    """

    def __init__(self, redis_url: str | None = None, *, lease_s: float = DEFAULT_LEASE_S) -> None:
        self._redis: RedisLimits | None = None
        if redis_url:
            from sentient.agents.models.shared_limits import RedisLimits  # the redis client loads only when used

            self._redis = RedisLimits(redis_url, lease_s=lease_s)
            logger.info("provider limits are shared through Redis at {}", self._redis.where)
        self._gates: dict[str, tuple[_Limits, ProviderGate]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> ProviderGates:
        return cls(settings.redis_url)

    def check(self) -> None:
        """Raise ConfigError, naming ``SENTIENT_REDIS_URL``, when the limits are shared and Redis
        cannot be reached. Blocking (a few seconds at most): call it before a run starts."""
        if self._redis is not None:
            self._redis.check()

    def gate(
        self,
        provider: str,
        base_url: str | None,
        api_key: str | None,
        *,
        requests_per_minute: float | None,
        max_concurrency: int,
    ) -> ProviderGate:
        """The gate of one provider key, made on first use with these limits."""
        key = limit_key(provider, base_url, api_key)
        limits = _Limits(requests_per_minute, max_concurrency)
        with self._lock:
            found = self._gates.get(key)
            if found is None:
                found = self._gates[key] = (limits, self._make(key, limits))
        if found[0] != limits:
            logger.warning(
                "provider key {} already has a gate with {}; keeping it (asked for {})", key, found[0], limits
            )
        return found[1]

    def _make(self, key: str, limits: _Limits) -> ProviderGate:
        rpm, cap = limits.requests_per_minute, limits.max_concurrency
        if self._redis is None:
            return ProviderGate(rpm, cap)
        limiter = self._redis.rate_limiter(key, rpm) if rpm else None
        return ProviderGate(rpm, cap, limiter=limiter, slots=self._redis.slots(key, cap))

    async def aclose(self) -> None:
        """Close the Redis connections of the running event loop (nothing to do without Redis)."""
        if self._redis is not None:
            await self._redis.aclose()

"""The provider gates of a process: one per provider key, shared by every run and project.

A provider key is the provider, its endpoint and the API key in use; it is named by a digest
(:func:`limit_key`), so the raw API key never reaches a log line. Each gate's limits hold for
every run of this process together.

The first gate made for a key fixes its limits for the process; a later request with other
limits gets the same gate (and a warning).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

from loguru import logger

from sentient.agents.models.resilience import ProviderGate
from sentient.settings import Settings


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
    the process's runs (the project service, an eval), and passed to each run's model factory."""

    def __init__(self) -> None:
        self._gates: dict[str, tuple[_Limits, ProviderGate]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> ProviderGates:
        return cls()

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
        return ProviderGate(limits.requests_per_minute, limits.max_concurrency)

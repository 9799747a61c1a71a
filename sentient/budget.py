"""Budget: the cost, call and time limits of one project (``--max-cost``, ``--max-llm-calls``, ``--max-time``).

Limits are cumulative over a project's runs: a resumed run starts from what the earlier runs
spent (:class:`Spent`, stored with the project), so resuming never grants a fresh budget.
Every request to a model counts, retries included. Each model call reserves its estimated cost
before it is sent and settles the real cost after; a call waits while the spent plus reserved
cost is at the limit and others are in flight, and none starts once the spent cost reaches it.
A cost limit is so overshot by at most one call's estimate (as long as a call costs no more
than estimated).

Two layers use a budget: the agent runner counts every request and its cost against it, the
engine stops scheduling when it runs out. It belongs to neither, so it sits at the top of the
package beside the settings it reads, where both import it without an arrow between them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from sentient.settings import EngineSettings


@dataclass(frozen=True)
class Spent:
    """What a project's earlier runs used: dollars, model requests and seconds of running."""

    cost_usd: float = 0.0
    requests: int = 0
    elapsed_s: float = 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Spent:
        return cls(
            cost_usd=float(data.get("cost_usd", 0.0)),
            requests=int(data.get("requests", 0)),
            elapsed_s=float(data.get("elapsed_s", 0.0)),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Budget:
    """Counts what a project spends and says when a limit is reached.

    ``on_exhausted`` is called once, with the reason, the first time a limit is passed; the
    engine then stops scheduling work and cancels what is in flight.
    """

    def __init__(
        self, settings: EngineSettings, clock: Callable[[], float] = time.monotonic, spent: Spent | None = None
    ) -> None:
        before = spent or Spent()
        self.max_cost_usd = settings.max_cost_usd
        self.max_llm_calls = settings.max_llm_calls
        self.max_time_s = settings.max_time_s
        self._clock = clock
        self._started = clock()
        self._elapsed_before = before.elapsed_s
        self.cost_usd = before.cost_usd
        self.llm_calls = before.requests  # requests sent to a model, retries included; cache hits are free
        self.reserved_usd = 0.0  # estimates of the calls in flight
        self._in_flight = 0
        self._settled = asyncio.Event()  # pulsed when a call settles (waiting reservations look again)
        self.on_exhausted: Callable[[str], None] | None = None
        self.exhausted: str | None = None

    async def reserve(self, estimate_usd: float) -> bool:
        """Reserve a model call: count its first request and its estimated cost.

        False (and the run stops) once a limit is spent. While the calls in flight could take the
        spending past a limit, wait for them to settle first: near a limit, calls go one at a
        time, and a call that was let through is never cancelled because another was refused.
        """
        while True:
            if self.check() is not None:
                return False
            calls_full = self.max_llm_calls is not None and self.llm_calls >= self.max_llm_calls
            cost_full = self.max_cost_usd is not None and self.cost_usd + self.reserved_usd >= self.max_cost_usd
            if not calls_full and not cost_full:
                self.llm_calls += 1
                self.reserved_usd += estimate_usd
                self._in_flight += 1
                return True
            if not self._in_flight:
                return self._exhaust(self._calls_reason() if calls_full else self._cost_reason())
            self._settled.clear()
            await self._settled.wait()

    def has_room(self, requests: int, cost_usd: float, duration_s: float) -> bool:
        """Whether ``requests`` more requests, costing ``cost_usd`` and lasting ``duration_s``, stay
        within every limit. Nothing is reserved: optional work asks first, so that it is never
        what exhausts the budget and stops the run."""
        if self.check() is not None:
            return False
        if self.max_llm_calls is not None and self.llm_calls + requests > self.max_llm_calls:
            return False
        if self.max_cost_usd is not None and self.cost_usd + self.reserved_usd + cost_usd > self.max_cost_usd:
            return False
        left = self.time_left_s()
        return left is None or left >= duration_s

    def count_retry(self) -> bool:
        """Count one more request of a reserved call (a retry); False (and the run stops) past the call limit."""
        if self.check() is not None:
            return False
        if self.max_llm_calls is not None and self.llm_calls >= self.max_llm_calls:
            return self._exhaust(self._calls_reason())
        self.llm_calls += 1
        return True

    def settle(self, estimate_usd: float, cost_usd: float) -> None:
        """Replace a reserved estimate by what the call cost (0 for requests that failed)."""
        self.reserved_usd = max(0.0, self.reserved_usd - estimate_usd)
        self._in_flight = max(0, self._in_flight - 1)
        self.cost_usd += cost_usd
        self._settled.set()
        self.check()

    def charge(self, cost_usd: float, model_calls: int) -> None:
        """Count requests made outside :meth:`reserve` (nothing reserved for them)."""
        self.cost_usd += cost_usd
        self.llm_calls += model_calls
        self.check()

    def spent(self) -> Spent:
        """Everything spent so far, earlier runs included (to store with the project)."""
        return Spent(self.cost_usd, self.llm_calls, self.elapsed_s)

    @property
    def elapsed_s(self) -> float:
        return self._elapsed_before + self._clock() - self._started

    def time_left_s(self) -> float | None:
        """Seconds until the time limit (0 when already past), or None without one."""
        if self.max_time_s is None:
            return None
        return max(0.0, self.max_time_s - self.elapsed_s)

    def check(self) -> str | None:
        """The reason the run must stop, or None; notifies ``on_exhausted`` the first time."""
        if self.exhausted is None:
            reason = self._reason()
            if reason is not None:
                self._exhaust(reason)
        return self.exhausted

    def _exhaust(self, reason: str) -> bool:
        if self.exhausted is None:
            self.exhausted = reason
            if self.on_exhausted is not None:
                self.on_exhausted(reason)
        return False

    def _calls_reason(self) -> str:
        return f"call budget reached ({self.llm_calls} of {self.max_llm_calls} model requests)"

    def _cost_reason(self) -> str:
        return f"cost budget reached (${self.cost_usd:.4f} of ${self.max_cost_usd:.4f})"

    def _reason(self) -> str | None:
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return self._cost_reason()
        if self.max_time_s is not None and self.elapsed_s >= self.max_time_s:
            return f"time budget reached ({self.max_time_s:g} s)"
        return None

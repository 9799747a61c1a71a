"""Budget: the cost, call and time limits of one run (``--max-cost``, ``--max-llm-calls``, ``--max-time``)."""

from __future__ import annotations

import time
from collections.abc import Callable

from sentient.settings import EngineSettings


class Budget:
    """Counts what a run spends and says when a limit is reached.

    ``on_exhausted`` is called once, with the reason, the first time a limit is passed; the
    engine then stops scheduling work and cancels what is in flight.
    """

    def __init__(self, settings: EngineSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_cost_usd = settings.max_cost_usd
        self.max_llm_calls = settings.max_llm_calls
        self.max_time_s = settings.max_time_s
        self._clock = clock
        self._started = clock()
        self.cost_usd = 0.0
        self.llm_calls = 0  # calls that reached a model; cache hits are free
        self.on_exhausted: Callable[[str], None] | None = None
        self.exhausted: str | None = None

    def charge(self, cost_usd: float, model_calls: int) -> None:
        self.cost_usd += cost_usd
        self.llm_calls += model_calls
        self.check()

    def check(self) -> str | None:
        """The reason the run must stop, or None; notifies ``on_exhausted`` the first time."""
        if self.exhausted is None:
            reason = self._reason()
            if reason is not None:
                self.exhausted = reason
                if self.on_exhausted is not None:
                    self.on_exhausted(reason)
        return self.exhausted

    def _reason(self) -> str | None:
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return f"cost budget reached (${self.cost_usd:.4f} of ${self.max_cost_usd:.4f})"
        if self.max_llm_calls is not None and self.llm_calls >= self.max_llm_calls:
            return f"call budget reached ({self.llm_calls} of {self.max_llm_calls} model calls)"
        if self.max_time_s is not None and self._clock() - self._started >= self.max_time_s:
            return f"time budget reached ({self.max_time_s:g} s)"
        return None

"""Waiting in a test for something another task does, with a deadline so a regression fails
instead of hanging the suite."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(condition: Callable[[], object], what: str, timeout_s: float = 30.0) -> None:
    """Return once ``condition()`` is true; fail the test naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout_s:.0f} s for {what}")
        await asyncio.sleep(0.005)

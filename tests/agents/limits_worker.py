"""A separate OS process using the provider limits shared through Redis (driven by test_shared_limits.py).

    python limits_worker.py REDIS_URL MODE '{"option": value, ...}'

It prints ``ready`` once connected, waits for a line on stdin, then:
- ``rate``: takes rate tokens for ``duration_s`` and prints the wall-clock time of each (one JSON list);
- ``slots``: ``tasks`` coroutines hold a slot for ``hold_s`` again and again for ``duration_s``,
  and print every [enter, exit] wall-clock pair (one JSON list);
- ``hold``: holds one slot, prints ``held``, and sleeps until it is killed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from sentient.agents.models.gates import ProviderGates, limit_key
from sentient.agents.models.resilience import ProviderGate
from sentient.agents.models.shared_limits import RedisLimits

PROVIDER, BASE_URL, API_KEY = "openai-compatible", "http://127.0.0.1:9/v1", "sk-test-key-0123456789"


def say(line: str) -> None:
    print(line, flush=True)


async def go() -> None:
    say("ready")
    await asyncio.to_thread(sys.stdin.readline)


async def rate(url: str, options: dict[str, Any]) -> None:
    limits = RedisLimits(url, lease_s=30)
    key = limit_key(PROVIDER, BASE_URL, API_KEY)
    gate = ProviderGate(None, 64, limiter=limits.rate_limiter(key, options["rpm"], burst=options["burst"]))
    await go()
    stamps: list[float] = []
    deadline = time.monotonic() + options["duration_s"]
    while time.monotonic() < deadline:
        async with gate.hold():
            stamps.append(time.time())
    say(json.dumps(stamps))
    await limits.aclose()


async def slots(url: str, options: dict[str, Any]) -> None:
    gates = ProviderGates(url, lease_s=options.get("lease_s", 30))
    gate = gates.gate(PROVIDER, BASE_URL, API_KEY, requests_per_minute=None, max_concurrency=options["cap"])
    await go()
    spans: list[tuple[float, float]] = []
    deadline = time.monotonic() + options["duration_s"]

    async def worker() -> None:
        while time.monotonic() < deadline:
            async with gate.hold():
                entered = time.time()
                await asyncio.sleep(options["hold_s"])
                spans.append((entered, time.time()))

    await asyncio.gather(*(worker() for _ in range(options["tasks"])))
    say(json.dumps(spans))
    await gates.aclose()


async def hold(url: str, options: dict[str, Any]) -> None:
    gates = ProviderGates(url, lease_s=options["lease_s"])
    gate = gates.gate(PROVIDER, BASE_URL, API_KEY, requests_per_minute=None, max_concurrency=options["cap"])
    async with gate.hold():
        say("held")
        await asyncio.Event().wait()


if __name__ == "__main__":
    url, mode, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    asyncio.run({"rate": rate, "slots": slots, "hold": hold}[mode](url, options))

"""JoinRelay on a real redis-server: a join reaches the process named, and only that one."""

from __future__ import annotations

import threading

import pytest
from fakes.redis_server import RedisServer
from server_helpers import free_port, wait_for

from sentient.exceptions import ConfigError
from sentient_server.relay import JoinRelay, channel_of


def test_a_forwarded_join_reaches_the_named_process_and_a_join_for_nobody_says_so(redis_server: RedisServer) -> None:
    served: list[tuple[str, str]] = []
    lock = threading.Lock()

    def record(sid: str, project_id: str) -> None:
        with lock:
            served.append((sid, project_id))

    owner, other, joiner = (JoinRelay(redis_server.url, token) for token in ("owner", "other", "joiner"))
    try:
        owner.start(record)
        other.start(lambda sid, project_id: record("wrong process", project_id))
        assert joiner.forward("owner", "sid-1", "p1") is True
        assert joiner.forward("gone", "sid-2", "p1") is False  # nobody listens: the joiner serves it itself
        client = redis_server.client()
        client.publish(channel_of("owner"), b"not json")
        client.publish(channel_of("owner"), b'{"sid": 3, "project_id": "p2"}')
        client.close()
        assert joiner.forward("owner", "sid-4", "p3") is True
        wait_for(lambda: len(served) == 2, what="two joins served")
        assert served == [("sid-1", "p1"), ("sid-4", "p3")]  # in order; the malformed ones dropped
    finally:
        for relay in (owner, other, joiner):
            relay.close()


def test_a_relay_without_redis_fails_to_start_naming_the_variable() -> None:
    relay = JoinRelay(f"redis://127.0.0.1:{free_port()}/0", "owner")
    with pytest.raises(ConfigError, match="SENTIENT_REDIS_URL"):
        relay.start(lambda sid, project_id: None)
    relay.close()

"""OwnerRelay on a real redis-server: a command reaches the process named, and only that one."""

from __future__ import annotations

import threading

import pytest
from fakes.redis_server import RedisServer
from server_helpers import free_port, wait_for

from sentient.exceptions import ConfigError
from sentient_server.relay import Cancel, Join, OwnerRelay, ReviewAnswered, channel_of


def test_forwarded_commands_reach_the_named_process_in_order_and_one_for_nobody_says_so(
    redis_server: RedisServer,
) -> None:
    served: list[object] = []
    lock = threading.Lock()

    def record(command: object) -> None:
        with lock:
            served.append(command)

    owner, other, sender = (OwnerRelay(redis_server.url, token) for token in ("owner", "other", "sender"))
    try:
        owner.start(record)
        other.start(lambda command: record(("wrong process", command)))
        join = Join(project_id="p1", sid="sid-1")
        assert sender.forward("owner", join) is True
        assert sender.forward("gone", Cancel(project_id="p1")) is False  # nobody listens: the sender answers itself
        client = redis_server.client()
        client.publish(channel_of("owner"), b"not json")
        client.publish(channel_of("owner"), b'{"command": "join", "sid": 3, "project_id": "p2"}')
        client.publish(channel_of("owner"), b'{"command": "explode", "project_id": "p2"}')
        client.close()
        cancel, answered = Cancel(project_id="p3"), ReviewAnswered(project_id="p3", review_id="r1")
        assert sender.forward("owner", cancel) is True
        assert sender.forward("owner", answered) is True
        wait_for(lambda: len(served) == 3, what="three commands served")
        assert served == [join, cancel, answered]  # in order; the malformed ones dropped
    finally:
        for relay in (owner, other, sender):
            relay.close()


def test_a_relay_without_redis_fails_to_start_naming_the_variable() -> None:
    relay = OwnerRelay(f"redis://127.0.0.1:{free_port()}/0", "owner")
    with pytest.raises(ConfigError, match="SENTIENT_REDIS_URL"):
        relay.start(lambda command: None)
    relay.close()

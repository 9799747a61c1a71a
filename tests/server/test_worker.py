"""The production worker's per-address share of waiting connections, on socket pairs."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from sentient_server.worker import PartialRequests


@pytest.fixture
def pairs() -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    made = [socket.socketpair() for _ in range(5)]
    for _, client in made:
        client.setblocking(False)
    yield made
    for pair in made:
        for end in pair:
            end.close()


def dropped(client: socket.socket) -> bool:
    try:
        return client.recv(1) == b""
    except BlockingIOError:
        return False


def test_an_address_keeps_its_newest_share_and_none_is_dropped_in_its_grace(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    partial = PartialRequests(per_client=2, grace_s=1.0)
    for i, (server_end, _) in enumerate(pairs[:4]):
        partial.waiting(server_end, "10.0.0.1", now=i * 0.1)  # opened at 0.0, 0.1, 0.2, 0.3
    partial.waiting(pairs[4][0], "10.0.0.2", now=0.0)
    clients = [client for _, client in pairs]
    assert not any(map(dropped, clients))  # over the share, but all in their grace

    partial.sweep(now=1.05)  # only the oldest is past its grace
    assert [dropped(c) for c in clients] == [True, False, False, False, False]
    partial.sweep(now=1.35)  # the address keeps its newest two; the other address is not touched
    assert [dropped(c) for c in clients[1:]] == [True, False, False, False]


def test_a_connection_whose_request_arrived_is_not_counted(pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    partial = PartialRequests(per_client=1, grace_s=0.0)
    (first, first_client), (second, second_client) = pairs[:2]
    partial.waiting(first, "10.0.0.1", now=0.0)
    partial.done(first)  # its request is in: it is being served
    partial.waiting(second, "10.0.0.1", now=1.0)
    assert not dropped(first_client) and not dropped(second_client)
    partial.waiting(first, "10.0.0.1", now=2.0)  # kept alive, waiting for its next request: the newest
    assert dropped(second_client) and not dropped(first_client)

"""The engine.io handshake guard and the idle-session reaper, with raw sockets against a live server."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx
import pytest
import socketio
import websocket
from server_helpers import InOrderClient, wait_for

from sentient_server import ServerSettings
from sentient_server.auth import token_ok

TOKEN = "t0ken-" + "x" * 20


def ws_url(server: Any, query: str = "") -> str:
    return server.url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket" + query


def open_session(server: Any, headers: list[str] | None = None, query: str = "") -> websocket.WebSocket:
    """A raw engine.io WebSocket session: the server's open packet is read, nothing is sent."""
    ws = websocket.create_connection(ws_url(server, query), header=headers or [], timeout=2)
    assert ws.recv().startswith("0{")  # engine.io OPEN
    return ws


def refused_status(server: Any, headers: list[str] | None = None, query: str = "") -> int:
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection(ws_url(server, query), header=headers or [], timeout=10)
    return int(refused.value.status_code)


def closed_by_server(ws: websocket.WebSocket) -> bool:
    try:
        while True:
            frame = ws.recv()  # pings may come first
            if frame in ("", None):
                return True
    except websocket.WebSocketTimeoutException:
        return False
    except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError):
        return True


def test_a_new_session_without_the_token_is_refused_at_the_handshake(
    live: Callable[..., Any], server_settings: ServerSettings
) -> None:
    server = live(replace(server_settings, api_token=TOKEN))
    sio = server.app.extensions["sentient"].socketio.server
    assert refused_status(server) == 401
    assert refused_status(server, query="&token=wrong-token-xxxxxxxxxxxx") == 401
    assert refused_status(server, headers=["Authorization: Bearer nope"]) == 401
    polling = httpx.get(server.url + "/socket.io/?EIO=4&transport=polling", timeout=10)
    assert polling.status_code == 401 and polling.json()["error"]["code"] == "unauthorized"
    assert not sio.eio.sockets  # no session was kept for any of them
    for proof in ({"headers": [f"Authorization: Bearer {TOKEN}"]}, {"query": f"&token={TOKEN}"}):
        ws = open_session(server, **proof)  # type: ignore[arg-type]
        ws.close()


def test_foreign_host_and_origin_are_refused_at_the_handshake(
    live: Callable[..., Any], server_settings: ServerSettings
) -> None:
    server = live(server_settings)
    assert refused_status(server, headers=["Host: evil.example"]) == 403
    assert refused_status(server, headers=["Origin: http://evil.example"]) == 403
    port = server.url.rsplit(":", 1)[1]
    rebinding = ["Host: attacker.example:" + port, "Origin: http://attacker.example:" + port]
    assert refused_status(server, headers=rebinding) == 403  # a DNS-rebinding page
    assert not server.app.extensions["sentient"].socketio.server.eio.sockets


def test_sessions_that_never_connect_the_namespace_are_closed(
    live: Callable[..., Any], server_settings: ServerSettings, connect: Any
) -> None:
    server = live(replace(server_settings, connect_timeout_s=0.5))
    idle = [open_session(server) for _ in range(5)]
    authorised = connect(server.url)
    for ws in idle:
        assert wait_for(lambda ws=ws: closed_by_server(ws), what="the idle session to be closed")
    eio = server.app.extensions["sentient"].socketio.server.eio
    wait_for(lambda: len(eio.sockets) == 1, what="only the connected client's session to remain")
    assert authorised.sio.connected
    assert authorised.sio.call("join_project", {"project_id": "nope"}, timeout=10)["error"]["code"] == "not_found"


def test_live_connections_are_capped_in_all(
    live: Callable[..., Any], server_settings: ServerSettings, connect: Any
) -> None:
    server = live(replace(server_settings, max_sockets=3, connect_timeout_s=30))
    held = [open_session(server) for _ in range(3)]
    assert refused_status(server) == 503
    with pytest.raises(socketio.exceptions.ConnectionError):
        connect(server.url)
    assert httpx.get(server.url + "/api/health", timeout=10).status_code == 200  # REST is not a socket
    held.pop().close()
    guard = server.app.extensions["sentient"].guard
    wait_for(lambda: guard.in_progress == 2, what="the closed socket to be counted out")
    assert connect(server.url).sio.connected


def test_unconnected_sessions_beyond_an_address_share_are_closed_oldest_first(
    live: Callable[..., Any], server_settings: ServerSettings, connect: Any
) -> None:
    settings = replace(server_settings, max_pending_sockets_per_client=3, cap_grace_s=0.5, connect_timeout_s=60)
    server = live(settings)
    idle = [open_session(server) for _ in range(6)]
    for ws in idle[:3]:
        assert wait_for(lambda ws=ws: closed_by_server(ws), what="an old idle session to be closed")
    assert not any(closed_by_server(ws) for ws in idle[3:])  # the newest three are the address's share
    # A client that connects at once gets in from the same address, and stays.
    authorised = connect(server.url)
    time.sleep(1.0)  # past its grace: connected sessions are not counted
    assert authorised.sio.connected
    assert authorised.sio.call("join_project", {"project_id": "nope"}, timeout=10)["error"]["code"] == "not_found"


@pytest.mark.parametrize("token", [None, 12345, ["a"], {"t": 1}, "\ud800\udfff-lone-surrogates", "ü" * 30, ""])
def test_odd_tokens_are_refused_without_raising(server_settings: ServerSettings, token: Any) -> None:
    assert token_ok(replace(server_settings, api_token=TOKEN), token) is False


def test_a_socket_auth_payload_of_odd_types_is_refused_cleanly(
    live: Callable[..., Any], server_settings: ServerSettings
) -> None:
    server = live(replace(server_settings, api_token=TOKEN))
    for auth in ({"token": 12345}, {"token": "\ud800"}, {"token": ["x"]}, ["not", "a", "dict"]):
        sio = InOrderClient(reconnection=False)
        with pytest.raises(socketio.exceptions.ConnectionError):
            sio.connect(server.url, headers={"Authorization": f"Bearer {TOKEN}"}, auth=auth, transports=["polling"])
    assert httpx.get(server.url + "/api/health", timeout=10).status_code == 200

"""Connection exhaustion against the production server (gunicorn, gevent worker), with raw sockets:
slowloris requests, unauthenticated and never-connecting WebSockets do not starve authorised clients,
and one address's share of them is capped."""

from __future__ import annotations

import json
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import socketio
import websocket
from server_helpers import InOrderClient, Recorder, free_port, serve_env, wait_for, wait_healthy

TOKEN = "exhaustion-test-token-0123456789"
THREADS = 24  # request threads; connections hold none
PENDING_SHARE = 32  # ServerSettings.max_pending_sockets_per_client
PARTIAL_SHARE = 128  # ServerSettings.max_partial_requests_per_client
GRACE_S = 3.0  # ServerSettings.cap_grace_s


def partial_request(port: int) -> socket.socket:
    """A slowloris client: half a request, then silence."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    return sock


def unauthenticated_upgrade(port: int) -> tuple[socket.socket, bytes]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(
        b"GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    return sock, sock.recv(200)


def closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.2)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except TimeoutError:
        return False
    except OSError:
        return True


def start_server(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sentient_server.serve", "--port", str(port), *args],
        env=serve_env(tmp_path, **env),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc, port


def stop_server(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, output
    return output


def dropped(sock: socket.socket) -> bool:
    """Whether the server has ended this connection (without answering), at once."""
    sock.setblocking(False)  # with a timeout, recv would first wait for the socket to be readable
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def sent_something(sessions: list[websocket.WebSocket]) -> list[bool]:
    """For each idle engine.io WebSocket whose OPEN packet was read: has the server sent more (a
    close, or the end of the connection)? Its first ping would come only after 25 s."""
    readable, _, _ = select.select([ws.sock for ws in sessions], [], [], 0)
    return [ws.sock in readable for ws in sessions]


def test_idle_slow_and_unauthenticated_connections_do_not_starve_authorised_clients(
    tmp_path: Path, docs_folder: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sentient_server.serve", "--port", str(port), "--threads", str(THREADS)],
        env=serve_env(tmp_path, SENTIENT_API_TOKEN=TOKEN),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    auth = {"Authorization": f"Bearer {TOKEN}"}
    attackers: list[socket.socket] = []
    idle_sessions: list[websocket.WebSocket] = []
    sio = InOrderClient(reconnection=False)
    try:
        wait_healthy(url, proc)

        # More half-sent requests than the server has threads.
        slow = [partial_request(port) for _ in range(THREADS + 6)]
        attackers += slow
        # WebSockets without the token: refused at the handshake, no session kept.
        for _ in range(40):
            sock, answer = unauthenticated_upgrade(port)
            attackers.append(sock)
            assert answer.startswith(b"HTTP/1.1 401"), answer
        # Sessions with the token that never connect to the namespace: an address's share.
        ws_url = f"ws://127.0.0.1:{port}/socket.io/?EIO=4&transport=websocket&token={TOKEN}"
        for _ in range(PENDING_SHARE):
            ws = websocket.create_connection(ws_url, timeout=30)
            assert ws.recv().startswith("0{")
            idle_sessions.append(ws)

        # The server drops the slow requests and the idle sessions, and serves everyone else.
        wait_for(lambda: all(closed_by_server(s) for s in slow), timeout=60, what="slowloris sockets dropped")
        wait_healthy(url, proc)  # /api/health still answers under attack
        assert httpx.get(url + "/api/projects", headers=auth, timeout=10).status_code == 200
        received = Recorder()
        sio.on("*", received)

        def connected() -> bool:
            try:
                sio.connect(url, headers=auth, auth={"token": TOKEN}, transports=["websocket"], wait_timeout=5)
            except socketio.exceptions.ConnectionError:
                return False  # all live-connection slots still held by idle sessions: retry
            return True

        wait_for(connected, timeout=30, what="an authorised Socket.IO connection")
        ack = sio.call(
            "execute_task",
            {"goal": "What is asyncio?", "profile": "general_agent", "config": {"docs": str(docs_folder)}},
            timeout=10,
        )
        assert ack["ok"], ack
        done = wait_for(lambda: received.completed(ack["project"]["project_id"]), what="project_completed")
        assert done["project"]["status"] == "completed"
    finally:
        for sock in attackers:
            sock.close()
        for ws in idle_sessions:
            ws.shutdown()
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, output
    assert "did not arrive in time" in output  # the worker's deadline dropped them
    assert "no Socket.IO connect within" in output  # the reaper closed the idle sessions


def test_partial_requests_from_one_address_hold_no_thread_and_beyond_its_share_are_dropped(tmp_path: Path) -> None:
    """More half-sent requests than the old server had threads (128), from the authorised client's own address."""
    proc, port = start_server(tmp_path, SENTIENT_API_TOKEN=TOKEN)
    url = f"http://127.0.0.1:{port}"
    slow: list[socket.socket] = []
    try:
        wait_healthy(url, proc)
        slow = [partial_request(port) for _ in range(200)]
        # Answered at once, not when the header deadline frees threads (10 s): the bound is functional.
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(url + "/api/projects", headers=auth, timeout=5).status_code == 200
        assert httpx.get(url + "/api/health", timeout=5).status_code == 200
        # Past their grace, the oldest beyond the address's share are dropped, well before their
        # header deadline (10 s); the newest are the share that is kept.
        excess = len(slow) - PARTIAL_SHARE
        wait_for(
            lambda: [dropped(s) for s in slow] == [True] * excess + [False] * PARTIAL_SHARE,
            timeout=GRACE_S + 4,
            what="exactly the oldest partial requests beyond the address's share to be dropped",
        )
    finally:
        for sock in slow:
            sock.close()
        output = stop_server(proc)
    assert f"over {PARTIAL_SHARE} waiting requests from one address" in output


def test_idle_websockets_from_one_address_do_not_keep_the_dashboard_out(tmp_path: Path) -> None:
    """A loopback server without a token: one local process holds more WebSockets than the old per-address cap (64)."""
    proc, port = start_server(tmp_path)
    url = f"http://127.0.0.1:{port}"
    idle: list[websocket.WebSocket] = []
    dashboard = InOrderClient(reconnection=False)
    try:
        wait_healthy(url, proc)
        ws_url = f"ws://127.0.0.1:{port}/socket.io/?EIO=4&transport=websocket"
        for _ in range(80):
            ws = websocket.create_connection(ws_url, timeout=30)  # 503 raises: none is refused
            assert ws.recv().startswith("0{")
            idle.append(ws)
        dashboard.connect(url, wait_timeout=10)  # polling, then the upgrade: as socket.io-client does
        assert dashboard.call("join_project", {"project_id": "nope"}, timeout=10)["error"]["code"] == "not_found"
        assert httpx.get(url + "/api/health", timeout=5).status_code == 200
        # Past their grace the oldest unconnected sessions beyond the address's share are closed;
        # the newest, its share, stay until their connect timeout (5 s); the connected dashboard
        # is not counted.
        excess = len(idle) - PENDING_SHARE
        wait_for(
            lambda: sent_something(idle) == [True] * excess + [False] * PENDING_SHARE,
            timeout=GRACE_S + 4,
            what="exactly the oldest sessions beyond the address's share to be closed",
        )
        assert dashboard.connected
    finally:
        dashboard.disconnect()
        for ws in idle:
            ws.shutdown()
        output = stop_server(proc)
    assert f"over {PENDING_SHARE} not connected from one address" in output


def test_request_bodies_sent_slowly_hold_no_thread(tmp_path: Path) -> None:
    """Bodies are read on the hub before the app runs: more slow ones than request threads starve
    nobody, and whole, chunked and oversized bodies are served as before."""
    proc, port = start_server(tmp_path, "--threads", "4")
    url = f"http://127.0.0.1:{port}"
    slow: list[socket.socket] = []
    try:
        wait_healthy(url, proc)
        for _ in range(20):
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(
                b"POST /api/projects HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b'Content-Length: 100\r\n\r\n{"goal": '
            )
            slow.append(sock)
        assert httpx.get(url + "/api/health", timeout=5).status_code == 200
        body = json.dumps({"goal": "What is asyncio?", "profile": "general_agent"}).encode()
        json_type = {"Content-Type": "application/json"}
        created = httpx.post(url + "/api/projects", content=body, headers=json_type, timeout=5)
        assert created.status_code == 201, created.text
        chunked = httpx.post(url + "/api/projects", content=iter([body[:10], body[10:]]), headers=json_type, timeout=5)
        assert chunked.status_code == 201, chunked.text
        huge = httpx.post(url + "/api/projects", content=b"x" * (2 << 20), headers=json_type, timeout=30)
        assert huge.status_code == 413 and huge.json()["error"]["code"]
    finally:
        for sock in slow:
            sock.close()
        stop_server(proc)

"""Connection exhaustion against the production server (gunicorn, few threads), with raw sockets:
slowloris requests, unauthenticated and never-connecting WebSockets do not starve authorised clients."""

from __future__ import annotations

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
THREADS = 24  # 16 reserved for requests, 8 for live connections


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
        # Sessions with the token that never connect to the namespace: as many as fit.
        ws_url = f"ws://127.0.0.1:{port}/socket.io/?EIO=4&transport=websocket&token={TOKEN}"
        for _ in range(THREADS - 16):
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

"""A real ``redis-server`` on a free loopback port, in a temp dir, saving nothing; stopped after the test."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis

REDIS_SERVER = "redis-server"


class RedisServer:
    """``redis-server --port N --bind 127.0.0.1 --dir DIR --save ''``, ready when it answers PING."""

    def __init__(self, folder: Path) -> None:
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        executable = shutil.which(REDIS_SERVER)
        assert executable is not None, "check available() first"
        self._process = subprocess.Popen(
            [executable, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", ""],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    @staticmethod
    def available() -> bool:
        return shutil.which(REDIS_SERVER) is not None

    def _wait_ready(self, timeout_s: float = 10.0) -> None:
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5, socket_timeout=0.5)
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                if self._process.poll() is not None:
                    raise RuntimeError(f"redis-server exited with {self._process.returncode} (port {self.port} taken?)")
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        finally:
            client.close()

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=5)

    @property
    def pid(self) -> int:
        return self._process.pid

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])

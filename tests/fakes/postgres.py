"""A real PostgreSQL server for the tests of the shared project store (see ``postgres`` in conftest.py)."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg


class PostgresServer:
    """A throwaway PostgreSQL server on a free loopback port, its files in a temp folder.

    Root may not run PostgreSQL: as root the server runs as the ``postgres`` user that the
    Debian package creates, its folder (outside pytest's root-only temp dirs) handed to it.
    """

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.folder = Path(tempfile.mkdtemp(prefix="sentient-pg-"))
        self.user = "postgres" if os.geteuid() == 0 else None
        if self.user:
            shutil.chown(self.folder, self.user)
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._names = itertools.count()
        self._admin: psycopg.Connection[Any] | None = None

    def url(self, database: str) -> str:
        return f"postgresql://sentient@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        data, log = self.folder / "data", self.folder / "server.log"
        initdb = [str(self.bindir / "initdb"), "-D", str(data), "-U", "sentient", "-A", "trust", "--no-sync"]
        subprocess.run([*initdb, "-E", "UTF8", "--locale=C"], check=True, capture_output=True, user=self.user)
        with socket.socket() as probe:  # a free port; the server takes it a moment later
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.folder),
            "fsync": "off",  # a test database need not survive a power loss
            "synchronous_commit": "off",
            "full_page_writes": "off",
        }
        options = [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [str(self.bindir / "postgres"), "-D", str(data), *options],
                stdout=out,
                stderr=subprocess.STDOUT,
                user=self.user,
            )
        deadline = time.monotonic() + 60
        while True:
            try:
                self._admin = psycopg.connect(self.url("postgres"), autocommit=True, connect_timeout=2)
                return
            except psycopg.OperationalError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"PostgreSQL did not start:\n{log.read_text()}") from None
                time.sleep(0.1)

    def new_database(self) -> str:
        """The URL of a new, empty database."""
        assert self._admin is not None
        name = f"test_{next(self._names)}"
        self._admin.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
        return self.url(name)

    def stop(self) -> None:
        if self._admin is not None:
            self._admin.close()
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown: clients still connected are dropped
            self.process.wait(30)
        shutil.rmtree(self.folder, ignore_errors=True)


def postgres_bindir() -> Path | None:
    """Where ``initdb`` and ``postgres`` are: on PATH, or in Debian's /usr/lib/postgresql/VERSION/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    found_versions = [p for p in Path("/usr/lib/postgresql").glob("*/bin/initdb") if p.parents[1].name.isdigit()]
    versions = sorted(found_versions, key=lambda p: int(p.parents[1].name))
    return versions[-1].parent if versions else None

"""Who holds a running project: an :class:`Owner` under a lease that it renews (:class:`Heartbeat`).

A claim writes the owner (host name, pid, a random token) and ``lease_expires_at``; the holder
renews the lease every third of its length. Another claimer may take the project when the
lease has expired, or at once when the owner ran in the same pid namespace of the same machine
and its process is gone (a kill -9 on one machine resumes without waiting for the lease).

Clocks: every lease time is the database's. PostgreSQL computes it with ``clock_timestamp()``
on the server, so the workers' clocks may disagree; SQLite is one file on one machine and uses
that machine's clock. What a lease assumes is only that the holder's heartbeat thread keeps
running: a holder frozen longer than its lease (stopped, swapped out, a suspended VM) loses the
project to another worker, finds out at its next renewal and stops, and its writes are fenced
off meanwhile (the store writer writes only while the token is still the project's owner).
"""

from __future__ import annotations

import functools
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from loguru import logger

from sentient.store.errors import LeaseLostError, StoreError

if TYPE_CHECKING:
    from sentient.store.project_store import ProjectStore
    from sentient.store.records import ProjectRecord

DEFAULT_LEASE_S = 30.0


@dataclass(frozen=True)
class Owner:
    """A worker that claims projects: a process, or one store of it (each claim names its owner).

    Attributes:
        host: the machine's name (shown to users; also half of the same-machine test).
        pid: the process id.
        token: random, unique to this owner; the lease belongs to whoever holds it.
        start: the process's start time (Linux): a reused pid is not mistaken for it.
        space: the machine's boot and pid namespace (Linux): pids are comparable only within it.
    """

    host: str
    pid: int
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    start: str | None = None
    space: str | None = None

    @classmethod
    def local(cls, pid: int | None = None) -> Owner:
        """An owner on this machine: this process, or the process ``pid`` (a new token either way)."""
        pid = os.getpid() if pid is None else pid
        return cls(socket.gethostname(), pid, start=_process_start(pid), space=pid_space())

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}"


def owner_alive(record: ProjectRecord) -> bool:
    """Whether the project's owner still holds it: its lease is live and, when it ran here, its process too.

    A record written before leases (no lease) is judged by its process alone, as then.
    """
    if record.owner_pid is None and record.owner_token is None:
        return False
    if record.lease_expires_at is None:
        return record.owner_pid is not None and _process_alive(record.owner_pid, record.owner_start)
    if record.lease_expires_at <= record.read_at:
        return False
    if record.owner_pid is not None and is_local(record.owner_host, record.owner_space):
        return _process_alive(record.owner_pid, record.owner_start)  # a dead process needs no lease to end
    return True


def is_local(host: str | None, space: str | None) -> bool:
    """Whether an owner of ``host`` and ``space`` ran where this process's pids are comparable to its own."""
    return host == socket.gethostname() and space == pid_space()


@functools.cache
def pid_space() -> str | None:
    """This machine's boot and this process's pid namespace (Linux), or None where unknown.

    Two containers may share a host name (``--network host``) yet not their pids; two machines
    may share a host name yet not a boot id.
    """
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    return f"{boot}/{namespace}"


def _process_alive(pid: int, start: str | None) -> bool:
    if pid <= 0:
        return False
    if os.name == "nt":
        return True  # os.kill(pid, 0) would send CTRL_C_EVENT there; never call a project stale
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by another user
    except OSError:
        return False
    # The same pid may now be another process (pid reuse; a container's server is always pid 1).
    if start is not None:
        return _process_start(pid) in (None, start)
    return True


def _process_start(pid: int) -> str | None:
    """The process's start time since boot (Linux ``/proc``), or None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None  # field 22 of stat(5), counted after "(comm)"


class Heartbeat:
    """Renews a claimed project's lease from a daemon thread every third of the lease, until stopped.

    The engine's loop does no database work for it. When the lease is lost (another worker
    took the project) or cannot be renewed before it would expire (the database is unreachable),
    ``on_lost`` is called once, from the heartbeat's thread, with the :class:`LeaseLostError`.
    """

    def __init__(
        self,
        store: ProjectStore,
        project_id: str,
        owner: Owner,
        on_lost: Callable[[LeaseLostError], object],
    ) -> None:
        self._store = store
        self._project_id = project_id
        self._owner = owner
        self._on_lost = on_lost
        self._lease_s = store.lease_s
        self._interval_s = store.lease_s / 3
        self._stop = threading.Event()
        self.lost: LeaseLostError | None = None
        self._thread = threading.Thread(target=self._main, name=f"lease-{project_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing (the run ended; the release that follows clears the lease).

        Returns at once, so that the event loop never waits on the database: a renewal still under
        way finishes on its own, and one that fails after the release reports nothing.
        """
        self._stop.set()

    def _main(self) -> None:
        # When the last renewal began: the lease it set cannot end before then + lease_s.
        renewed = time.monotonic()
        while not self._stop.wait(self._interval_s):
            began = time.monotonic()
            try:
                self._store.renew(self._project_id, self._owner)
                renewed = began
            except LeaseLostError as exc:
                self._lose(exc)
                return
            except StoreError as exc:
                # Give up while the lease surely still holds, rather than run on past it.
                if time.monotonic() + self._interval_s >= renewed + self._lease_s:
                    self._lose(LeaseLostError(self._project_id, f"its lease could not be renewed: {exc}"))
                    return
                logger.warning("project {}: lease not renewed, will retry: {}", self._project_id, exc)

    def _lose(self, exc: LeaseLostError) -> None:
        if self._stop.is_set():
            return  # the run ended meanwhile: nothing to stop
        self.lost = exc
        logger.error("project {}: {}", self._project_id, exc)
        self._on_lost(exc)

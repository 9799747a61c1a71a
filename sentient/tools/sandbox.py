"""Run a Python snippet in a child process with time, memory and output limits.

The snippet runs as ``python -I -u snippet.py`` (isolated mode: no user site-packages, no
``PYTHON*`` variables) in a fresh temporary directory that is deleted afterwards, in its own
process group, with ``RLIMIT_AS`` (memory), ``RLIMIT_CPU``, ``RLIMIT_FSIZE`` and no core dumps,
and an environment of only ``PATH``, ``LANG``, ``HOME`` and ``TMPDIR`` (so no ``SENTIENT_*``
settings and no API keys; the relative results directory resolves inside the temp dir, away
from the project database).

Where Linux lets this process create user namespaces (it does here as root and as a normal
user; :func:`isolation_available` probes it once), the snippet also runs under
``unshare --user --map-root-user --pid --fork --mount --mount-proc --kill-child`` and, inside
that, ``unshare --user --mount``:

- **No process outlives the run.** The snippet is PID 1 of its own PID namespace; when it ends,
  or when it is killed at the timeout, the kernel kills every process in that namespace, so
  ``setsid``, double forks and daemons do not escape.
- **The parent's secrets stay unreadable.** Its ``/proc`` shows only the namespace's processes,
  and its user namespace holds no capability over this process; with :func:`hide_process_memory`
  called at start-up (``sentient serve`` and the CLI do), ``/proc/<pid>/environ`` and ``mem``
  of this process are closed to same-user processes even by their host path.
- **That ``/proc`` cannot be taken away.** The outer namespace mounts it over the host's; were the
  snippet root there, ``umount2("/proc", MNT_DETACH)`` would uncover the host's ``/proc`` and
  every host process's command line. The inner user namespace has no uid mapped, so the snippet
  runs as ``nobody`` (65534) with no capability, and its mount namespace, owned by that less
  privileged user namespace, received every mount locked: unmounting fails with EPERM, and
  would fail with EINVAL even with capabilities.

Without namespaces (other systems, or user namespaces disabled) only the process-group kill
and :func:`hide_process_memory` apply: a snippet that calls ``setsid`` can outlive the run,
and a snippet running as root can still read this process's environment.

Either way this is process isolation for well-meaning code a model wrote, NOT a security
boundary: the child can read any file this user can (no mount isolation beyond ``/proc``), can
use the network, and can import what the interpreter can. Do not run it on hostile code; use a
container or a VM for that. POSIX only.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import ctypes
import functools
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field

from sentient.exceptions import ToolError
from sentient.tools.base import SignatureTool, ToolOutput, ToolSettings

_FILE_SIZE_LIMIT = 64 * 1024 * 1024  # largest file the snippet may write
_DRAIN_S = 2.0  # after the process ends, how long to wait for the rest of its output
_MEMORY_ERROR = re.compile(r"^MemoryError\b", re.MULTILINE)
_UNSHARE_OPTIONS = ("--user", "--map-root-user", "--pid", "--fork", "--mount", "--mount-proc", "--kill-child")
# Run inside the namespaces above: a user namespace without a mapping (no capabilities) whose mount
# namespace locks the inherited mounts, the fresh /proc among them.
_LOCK_OPTIONS = ("--user", "--mount")
_PR_SET_DUMPABLE = 4


def hide_process_memory() -> bool:
    """Make this process non-dumpable (Linux ``prctl(PR_SET_DUMPABLE, 0)``).

    Other processes of the same user (a sandboxed snippet) can then no longer read its
    ``/proc/<pid>/environ`` or ``/proc/<pid>/mem`` nor ptrace it; it also writes no core dumps.
    Returns whether it took effect (False on other systems).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


@functools.cache
def isolation_available() -> bool:
    """Whether snippets run in their own user, PID and mount namespaces (probed once)."""
    return bool(_isolation_prefix())


@functools.cache
def _isolation_prefix() -> tuple[str, ...]:
    unshare = shutil.which("unshare")
    if not sys.platform.startswith("linux") or unshare is None:
        return ()
    prefix = (unshare, *_UNSHARE_OPTIONS, unshare, *_LOCK_OPTIONS)
    try:
        probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, env={"PATH": os.defpath})
    except (OSError, subprocess.SubprocessError):
        return ()
    return prefix if probe.returncode == 0 else ()


@dataclass(frozen=True)
class SandboxResult:
    """What a snippet did.

    Attributes:
        output: stdout and stderr interleaved, cut at the output limit with a note.
        exit_code: the process's exit status; negative for a signal (-9 when killed).
        timed_out: the wall-clock limit was reached and the process group was killed.
        out_of_memory: the snippet hit the memory limit.
    """

    output: str
    exit_code: int
    timed_out: bool
    out_of_memory: bool

    def summary(self, timeout_s: float, memory_mb: int) -> str:
        """One line saying how the run ended."""
        if self.timed_out:
            return f"Timed out after {timeout_s:g}s: the process was killed."
        if self.out_of_memory:
            return f"Ran out of memory (limit {memory_mb} MB); exit code {self.exit_code}."
        if self.exit_code == -signal.SIGXCPU:
            return "Stopped: CPU time limit exceeded."
        if self.exit_code < 0:
            with contextlib.suppress(ValueError):
                return f"Killed by signal {signal.Signals(-self.exit_code).name}."
            return f"Killed by signal {-self.exit_code}."
        return f"Exit code {self.exit_code}."


class _Output:
    """Keeps the first `limit` characters of a byte stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parts: list[str] = []
        self._kept = 0
        self.dropped = 0
        self.tail = ""  # the last characters, kept even when dropped, to recognise a MemoryError

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        room = self._limit - self._kept
        self._parts.append(text[:room])
        self._kept += min(room, len(text))
        self.dropped += max(0, len(text) - room)
        self.tail = (self.tail + text)[-500:]

    def text(self) -> str:
        kept = "".join(self._parts)
        if self.dropped:
            kept += f"\n[output truncated: {self.dropped} more characters]"
        return kept


async def run_python(code: str, *, timeout_s: float, memory_mb: int, output_chars: int) -> SandboxResult:
    """Run `code` in a fresh interpreter and return what happened.

    Timeouts and memory errors are results, not exceptions.

    Raises:
        ToolError: the platform has no process limits (Windows) or the interpreter cannot start.
    """
    if os.name != "posix":
        raise ToolError("run_python needs a POSIX system (Linux or macOS)")
    with tempfile.TemporaryDirectory(prefix="sentient-sandbox-") as workdir:
        Path(workdir, "snippet.py").write_text(code, encoding="utf-8")
        env = {"PATH": os.defpath, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": workdir, "TMPDIR": workdir}
        limits = (memory_mb * 1024 * 1024, math.ceil(timeout_s) + 1)
        prefix = await asyncio.to_thread(_isolation_prefix)
        try:
            process = await asyncio.create_subprocess_exec(
                *prefix,
                sys.executable,
                "-I",
                "-u",  # unbuffered: stdout and stderr arrive in the order they were written
                "snippet.py",
                cwd=workdir,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,  # its own process group, so a kill reaches its children too
                preexec_fn=lambda: _limit_resources(*limits),
            )
        except (OSError, subprocess.SubprocessError) as exc:  # SubprocessError: setting the limits failed
            raise ToolError(f"could not start the Python sandbox: {exc}") from exc
        output = _Output(output_chars)
        assert process.stdout is not None  # stdout=PIPE
        reader = asyncio.create_task(_drain(process.stdout, output))
        timed_out = False
        try:
            try:
                async with asyncio.timeout(timeout_s):  # not wait_for: on 3.11 it can lose a cancellation
                    await process.wait()
            except TimeoutError:
                timed_out = True
            _kill_group(process.pid)  # also ends children the snippet left behind
            exit_code = await process.wait()
            # A grandchild that left the group could keep the pipe open: do not wait for it forever.
            await asyncio.wait({reader}, timeout=_DRAIN_S)
        finally:
            _kill_group(process.pid)
            reader.cancel()
            await asyncio.wait([reader])  # a cancellation of this task still propagates
            # A pipe a grandchild still holds open keeps the transport open; closed here, not by
            # its finaliser after the event loop has closed (asyncio's Process has no public close).
            process._transport.close()  # type: ignore[attr-defined]
            if not reader.cancelled():
                reader.result()
    output.feed(b"", final=True)
    out_of_memory = not timed_out and bool(_MEMORY_ERROR.search(output.tail))
    return SandboxResult(output.text(), exit_code, timed_out, out_of_memory)


async def _drain(stream: asyncio.StreamReader, output: _Output) -> None:
    while chunk := await stream.read(65_536):
        output.feed(chunk)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _limit_resources(memory_bytes: int, cpu_s: int) -> None:
    """Runs in the child between fork and exec."""
    import resource  # POSIX only, and needed only here

    for kind, value in (
        (resource.RLIMIT_AS, memory_bytes),
        (resource.RLIMIT_CPU, cpu_s),
        (resource.RLIMIT_FSIZE, _FILE_SIZE_LIMIT),
        (resource.RLIMIT_CORE, 0),
    ):
        _soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)  # an unprivileged process cannot raise its hard limit
        resource.setrlimit(kind, (value, value))


class PythonSandbox(SignatureTool):
    """The ``run_python`` tool."""

    name = "run_python"
    description = (
        "Run a Python 3 program and return its printed output and exit code. Each call starts "
        "a fresh interpreter in an empty temporary directory, with time and memory limits; "
        "print what you want to see."
    )

    def __init__(self, settings: ToolSettings) -> None:
        self._settings = settings

    async def run(self, *, code: Annotated[str, Field(description="A complete Python program.")]) -> ToolOutput:
        s = self._settings
        result = await run_python(
            code, timeout_s=s.sandbox_timeout_s, memory_mb=s.sandbox_memory_mb, output_chars=s.sandbox_output_chars
        )
        summary = result.summary(s.sandbox_timeout_s, s.sandbox_memory_mb)
        return ToolOutput(text=f"{summary}\nOutput:\n{result.output or '(no output)'}")

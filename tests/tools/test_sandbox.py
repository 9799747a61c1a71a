"""The Python sandbox: real child interpreters with real limits."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from sentient.tools.base import ToolSettings
from sentient.tools.sandbox import PythonSandbox, SandboxResult, isolation_available, run_python

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the sandbox needs POSIX process limits")


async def run(code: str, *, timeout_s: float = 5, memory_mb: int = 256, output_chars: int = 2_000) -> SandboxResult:
    return await run_python(code, timeout_s=timeout_s, memory_mb=memory_mb, output_chars=output_chars)


async def test_printed_output_and_exit_code_come_back() -> None:
    result = await run("import sys\nprint('hello', 6 * 7)\nprint('oops', file=sys.stderr)")

    assert result.output == "hello 42\noops\n"
    assert result.exit_code == 0
    assert not result.timed_out and not result.out_of_memory


async def test_an_exception_gives_its_traceback_and_a_nonzero_exit_code() -> None:
    result = await run("raise ValueError('bad input')")

    assert result.exit_code == 1
    assert "ValueError: bad input" in result.output


async def test_infinite_loop_is_killed_at_the_timeout_and_says_so() -> None:
    output = await PythonSandbox(ToolSettings(sandbox_timeout_s=0.5)).run(
        code="print('started', flush=True)\nwhile True: pass"
    )

    assert output.text.startswith("Timed out after 0.5s: the process was killed.")
    assert "started" in output.text  # output produced before the kill is kept


async def test_timeout_kills_the_whole_process_group() -> None:
    marker = f"sentient-test-{uuid.uuid4().hex}"
    code = f"import subprocess\np = subprocess.Popen(['sleep', '60', '{marker}'])\nprint('spawned', flush=True)\nwhile True: pass"

    result = await run(code, timeout_s=1)

    assert result.timed_out and "spawned" in result.output
    assert _all_gone(marker)


async def test_a_cancelled_run_kills_its_process_group_and_stays_cancelled() -> None:
    marker = f"sentient-test-{uuid.uuid4().hex}"
    code = f"import subprocess\np = subprocess.Popen(['sh', '-c', 'sleep 60', '{marker}'])\np.wait()"
    running = asyncio.create_task(run(code, timeout_s=60))
    await asyncio.sleep(1)
    assert not running.done()

    running.cancel()
    done, _ = await asyncio.wait([running], timeout=5)

    assert done and running.cancelled()
    assert _all_gone(marker)


@pytest.mark.skipif(not isolation_available(), reason="no user namespaces on this system")
@pytest.mark.parametrize("snippet_ends", ["at once", "at the timeout"])
async def test_a_process_that_leaves_the_group_with_setsid_is_killed_too(snippet_ends: str) -> None:
    marker = f"sentient-test-{uuid.uuid4().hex}"
    code = f"""
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # a daemon: new session, reparented, stdio closed
        for fd in (0, 1, 2):
            os.close(fd)
        os.execv("/bin/sleep", ["sleep", "60", "{marker}"])
    os._exit(0)
time.sleep(0.3)
print("daemon started", flush=True)
{"" if snippet_ends == "at once" else "time.sleep(60)"}
"""
    result = await run(code, timeout_s=2)

    assert "daemon started" in result.output
    assert result.timed_out is (snippet_ends == "at the timeout")
    assert _all_gone(marker)


@pytest.mark.skipif(
    not isolation_available() and os.geteuid() == 0,
    reason="without namespaces a snippet running as root can read any process's environment",
)
async def test_the_snippet_cannot_read_the_parents_secrets(tmp_path: Path) -> None:
    """A parent started with a secret in its environment runs a snippet that looks for it
    everywhere in /proc, including under the parent's own pid. The snippet knows only the
    variable's name (written in two halves, so no command line holds it whole)."""
    secret = f"sk-{uuid.uuid4().hex}"
    snippet = """
import os
wanted = b"SANDBOX_PROBE" + b"_SECRET=sk-"
found, tried = [], 0
for pid in [p for p in os.listdir("/proc") if p.isdigit()] + [str(os.getppid()), "{parent}"]:
    for name in ("environ", "cmdline", "mem"):
        tried += 1
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                data = f.read(1 << 20)
        except OSError:
            continue
        if wanted in data:
            found.append((pid, name))
print("tried", tried, "found", found)
"""
    parent = f"""
import asyncio, os
from sentient.tools.sandbox import hide_process_memory, run_python
assert hide_process_memory()
code = {snippet!r}.replace("{{parent}}", str(os.getpid()))
result = asyncio.run(run_python(code, timeout_s=20, memory_mb=256, output_chars=5000))
print(result.output)
"""
    env = {**os.environ, "SANDBOX_PROBE_SECRET": secret, "OPENAI_API_KEY": secret, "SENTIENT_API_TOKEN": secret}
    proc = subprocess.run([sys.executable, "-c", parent], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "tried" in proc.stdout and "found []" in proc.stdout, proc.stdout
    assert secret not in proc.stdout


@pytest.mark.skipif(not isolation_available(), reason="no user namespaces on this system")
async def test_the_snippet_cannot_unmount_its_proc_to_see_the_hosts_processes() -> None:
    """Under the namespace's own /proc lies the host's: a snippet that could detach the first would
    read every host process's command line."""
    marker = f"sentient-host-{uuid.uuid4().hex}"
    host = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    code = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
status = libc.umount2(b"/proc", 2)  # MNT_DETACH
print("umount2", status, os.strerror(ctypes.get_errno()))
with open("/proc/1/cmdline", "rb") as f:
    print("pid 1", f.read().split(b"\\0"))
seen = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{{pid}}/cmdline", "rb") as f:
            if {marker.encode()!r} in f.read():
                seen.append(pid)
    except OSError:
        pass
print("host processes seen", seen)
"""
    try:
        result = await run(code)
    finally:
        host.kill()
        host.wait()

    assert result.exit_code == 0, result.output
    assert "umount2 -1 " in result.output  # refused
    [pid_1] = [line for line in result.output.splitlines() if line.startswith("pid 1 ")]
    assert "b'snippet.py'" in pid_1  # the snippet itself, not the host's init
    assert "host processes seen []" in result.output


def test_hide_process_memory_makes_the_process_non_dumpable() -> None:
    """The flag itself, read back with prctl(PR_GET_DUMPABLE)."""
    dumpable = subprocess.run(
        [sys.executable, "-c", "import ctypes; print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert dumpable.stdout.strip() == "1"  # an ordinary process is dumpable...
    flagged = subprocess.run(
        [
            sys.executable,
            "-c",
            "import ctypes; from sentient.tools.sandbox import hide_process_memory;"
            " hide_process_memory(); print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert flagged.stdout.strip() == "0"  # ...one that called hide_process_memory is not


async def test_memory_bomb_is_stopped_by_the_memory_limit() -> None:
    result = await run("block = bytearray(1024 * 1024 * 1024)\nprint('allocated')", memory_mb=200)

    assert result.out_of_memory
    assert "allocated" not in result.output
    assert result.summary(10, 200).startswith("Ran out of memory (limit 200 MB)")


async def test_working_directory_is_a_fresh_temp_dir_that_is_deleted() -> None:
    code = "import os\nopen('scratch.txt', 'w').write('x')\nprint(os.getcwd())\nprint(os.listdir('.'))"

    result = await run(code)

    workdir, listing = result.output.splitlines()
    assert Path(workdir).name.startswith("sentient-sandbox-")
    assert sorted(ast.literal_eval(listing)) == ["scratch.txt", "snippet.py"]
    assert not Path(workdir).exists()


async def test_environment_carries_no_sentient_settings_or_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SENTIENT_RESULTS_DIR", "/somewhere/secret")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-secret")

    result = await run("import json, os\nprint(json.dumps(dict(os.environ)))")

    env = json.loads(result.output)
    assert sorted(env) == ["HOME", "LANG", "LC_ALL", "PATH", "TMPDIR"]
    assert "secret" not in result.output


async def test_long_output_is_truncated_with_a_note() -> None:
    result = await run("print('x' * 5000)", output_chars=1_000)

    assert result.output == "x" * 1_000 + "\n[output truncated: 4001 more characters]"


async def test_tool_output_reports_exit_code_and_output() -> None:
    output = await PythonSandbox(ToolSettings()).run(code="print(sum(range(10)))")

    assert output.text == "Exit code 0.\nOutput:\n45\n"
    assert output.sources == []


def _all_gone(marker: str) -> bool:
    """Whether every process whose command line holds `marker` ends within a few seconds."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        alive = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if (
                    marker.encode() in (entry / "cmdline").read_bytes()
                    and "State:\tZ" not in (entry / "status").read_text()
                ):
                    alive.append(entry.name)
            except OSError:
                continue
        if not alive:
            return True
        time.sleep(0.05)
    return False


def _is_gone(pid: int) -> bool:
    """Whether `pid` stops running within a few seconds (gone, or a zombie awaiting its reaper)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        status = Path(f"/proc/{pid}/status")
        if status.exists() and "State:\tZ" in status.read_text():
            return True
        time.sleep(0.02)
    return False

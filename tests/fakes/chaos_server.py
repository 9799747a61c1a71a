"""A chaos provider: a loopback OpenAI-compatible server that answers valid JSON and injects faults.

Every ``POST /v1/chat/completions`` is answered with a JSON instance of the request's
``response_format`` schema (so any agent of any profile gets a usable answer), unless a fault
is injected. Faults come first from rules (:meth:`ChaosServer.fail_when`: every request that
matches gets the fault), then from a scripted queue (:meth:`ChaosServer.script`), then at
random with probability ``fault_rate`` from ``faults``, drawn from a seeded generator in
arrival order: the same seed gives the same sequence of faults::

    with chaos_server(fault_rate=0.2, seed=7) as server:
        model = f"openai-compatible:{server.base_url}:chaos"
        ...
        assert server.injected.count(Fault.HANG) == ...

The fault kinds are the ways a provider (or a proxy in front of it) is seen to misbehave:
HTTP 500/429/503, a request that never gets an answer, a connection dropped without an
answer, a body that is not JSON, a body cut short, an answer that does not match the schema,
HTTP 200 with an empty ``choices`` list, and a choice without its ``message``.
"""

from __future__ import annotations

import hashlib
import json
import random
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PATH = "/v1/chat/completions"


class Fault(StrEnum):
    HTTP_500 = "http_500"  # internal server error
    HTTP_429 = "http_429"  # rate limited (no Retry-After)
    HTTP_503 = "http_503"  # service unavailable
    HANG = "hang"  # the request is read and never answered
    DROP = "drop"  # the connection is closed without an answer
    MALFORMED = "malformed"  # HTTP 200 whose body is not JSON
    TRUNCATED = "truncated"  # HTTP 200 whose body stops before its Content-Length
    SCHEMA = "schema_violation"  # a well-formed completion whose content does not match the schema
    EMPTY_CHOICES = "empty_choices"  # HTTP 200 with "choices": []
    NO_MESSAGE = "no_message"  # a choice without its "message"


ALL_FAULTS: tuple[Fault, ...] = tuple(Fault)
FAST_FAULTS: tuple[Fault, ...] = tuple(f for f in Fault if f is not Fault.HANG)


class ChaosServer:
    """The server. ``requests`` holds each request body, ``injected`` the fault (or None) of each,
    ``spans`` when each answered request was here: ``(arrived, answered, model)`` in
    ``time.monotonic()`` seconds, appended as its answer is sent.

    Args:
        fault_rate: probability that a request gets a random fault (0 to 1).
        faults: the kinds drawn from.
        seed: seeds the fault draws and the answers' choices.
        hang_s: how long a hung request waits before its connection is closed (closing the
            server ends it early).
        width: how many items an answer's arrays get (within the schema's bounds): the
            number of subtasks in a plan.
        atomic: the value of every boolean (the atomizer's ``is_atomic``) but the root's: the
            root is always planned.
        latency_s: how long each valid answer takes (a provider's think time).
    """

    def __init__(
        self,
        *,
        fault_rate: float = 0.0,
        faults: tuple[Fault, ...] = ALL_FAULTS,
        seed: int = 0,
        hang_s: float = 3600.0,
        width: int = 2,
        atomic: bool = True,
        latency_s: float = 0.0,
    ) -> None:
        if not 0 <= fault_rate <= 1:
            raise ValueError("fault_rate must be between 0 and 1")
        self.fault_rate = fault_rate
        self.faults = faults
        self.hang_s = hang_s
        self.width = width
        self.atomic = atomic
        self.latency_s = latency_s
        self.requests: list[dict[str, Any]] = []
        self.spans: list[tuple[float, float, str]] = []
        self.injected: list[Fault | None] = []
        self._rng = random.Random(seed)
        self._queue: deque[Fault | None] = deque()
        self.rules: list[tuple[Callable[[dict[str, Any]], bool], Fault]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._answering = threading.Event()  # cleared while paused
        self._answering.set()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True  # a hung handler must not keep the process alive
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="chaos-openai", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def model(self, name: str = "chaos") -> str:
        """The model string that points Sentient at this server."""
        return f"openai-compatible:{self.base_url}:{name}"

    @property
    def counts(self) -> Counter[str]:
        """How many requests got each fault (``"ok"`` for the valid answers)."""
        with self._lock:
            return Counter(f.value if f is not None else "ok" for f in self.injected)

    def script(self, *faults: Fault | None) -> None:
        """Queue the next requests' faults, in order (None: a valid answer), before random draws."""
        with self._lock:
            self._queue.extend(faults)

    def fail_when(self, predicate: Callable[[dict[str, Any]], bool], fault: Fault) -> None:
        """Give ``fault`` to every request whose body matches ``predicate`` (clear ``rules`` to stop)."""
        with self._lock:
            self.rules.append((predicate, fault))

    def pause(self) -> None:
        """Hold the valid answers (requests are still recorded as they arrive) until :meth:`resume`."""
        self._answering.clear()

    def resume(self) -> None:
        self._answering.set()

    def start(self) -> ChaosServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wakes hung handlers
        self._answering.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _draw(self, body: dict[str, Any]) -> tuple[Fault | None, random.Random]:
        with self._lock:
            self.requests.append(body)
            ruled = [fault for match, fault in self.rules if match(body)]
            if ruled:
                fault = ruled[0]
            elif self._queue:
                fault = self._queue.popleft()
            elif self.fault_rate and self._rng.random() < self.fault_rate:
                fault = self._rng.choice(self.faults)
            else:
                fault = None
            self.injected.append(fault)
            answer_rng = random.Random(self._rng.random())
        return fault, answer_rng

    def answer(self, body: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        """A valid instance of the request's JSON schema (a plain sentence without one)."""
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema")
        if not schema:
            return {"text": "ok"}
        # The root's own atomizer call (it has no plan yet) always answers "plan it", so runs build a
        # tree; the subtasks' atomizer calls answer ``atomic``.
        prompt = str(body.get("messages", [{}])[-1].get("content", ""))
        atomic = self.atomic and "## The plan this subtask belongs to" in prompt
        # Texts name the prompt they answer: a subtask's plan must not list the subtask's own goal
        # (the engine would execute it instead of planning it, and every tree would be one level).
        tag = hashlib.sha256(prompt.encode()).hexdigest()[:6]
        return _Instance(schema, rng, self.width, atomic, tag).of(schema)


class _Instance:
    """Builds a JSON value that validates against a (pydantic-generated) JSON schema."""

    def __init__(self, root: dict[str, Any], rng: random.Random, width: int, atomic: bool, tag: str) -> None:
        self._defs = root.get("$defs", {})
        self._tag = tag
        self._rng = rng
        self._width = width
        self._atomic = atomic
        self._strings = 0

    def of(self, schema: dict[str, Any], name: str = "value") -> Any:
        if "$ref" in schema:
            return self.of(self._defs[schema["$ref"].rsplit("/", 1)[-1]], name)
        if "enum" in schema:
            return self._rng.choice(schema["enum"])
        for key in ("anyOf", "oneOf", "allOf"):
            if key in schema:
                options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
                return self.of(options[0], name)
        kind = schema.get("type", "object")
        if kind == "object":
            props = schema.get("properties", {})
            return {k: self.of(props[k], k) for k in schema.get("required", [])}
        if kind == "array":
            low, high = schema.get("minItems", 1), schema.get("maxItems", max(self._width, 1))
            count = min(max(self._width, low), high)
            return [self.of(schema.get("items", {}), name) for _ in range(count)]
        if kind == "string":
            self._strings += 1
            text = f"Synthetic {name} {self._strings} ({self._tag}): a short, self-contained statement about the topic."
            return text.ljust(schema.get("minLength", 0), ".")
        if kind == "integer":
            return int(schema.get("minimum", 0))
        if kind == "number":
            return float(schema.get("minimum", 0))
        if kind == "boolean":
            return self._atomic
        return None


def _completion(content: str | None, *, choices: bool = True, message: bool = True) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "logprobs": None}
    if message:
        choice["message"] = {"role": "assistant", "content": content}
    return {
        "id": "chatcmpl-chaos",
        "object": "chat.completion",
        "created": 0,
        "model": "chaos",
        "choices": [choice] if choices else [],
        "usage": {"prompt_tokens": 40, "completion_tokens": 20, "total_tokens": 60},
    }


def _handler_for(server: ChaosServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            self.arrived, self.model = time.monotonic(), ""  # this request's, for its span
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != PATH:
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            body = json.loads(raw or b"{}")
            self.model = str(body.get("model"))
            fault, rng = server._draw(body)
            if fault is Fault.HANG:
                server._closing.wait(server.hang_s)
                self._drop()
            elif fault is Fault.DROP:
                self._drop()
            elif fault in (Fault.HTTP_500, Fault.HTTP_503, Fault.HTTP_429):
                status = int(fault.value.rsplit("_", 1)[1])
                self._send(status, {"error": {"message": f"chaos: HTTP {status}", "type": "server_error"}})
            elif fault is Fault.MALFORMED:
                self._send(200, '{"id": "chatcmpl-chaos", "choices": [{"index": 0, "message": <html>')
            elif fault is Fault.TRUNCATED:
                data = json.dumps(_completion(json.dumps(server.answer(body, rng)))).encode()
                self._send(200, data, length=len(data), cut=len(data) // 2)
            elif fault is Fault.SCHEMA:
                self._send(200, _completion(json.dumps({"unexpected": "field"})))
            elif fault is Fault.EMPTY_CHOICES:
                self._send(200, _completion(None, choices=False))
            elif fault is Fault.NO_MESSAGE:
                self._send(200, _completion(None, message=False))
            else:
                server._answering.wait()
                server._closing.wait(server.latency_s)
                self._send(200, _completion(json.dumps(server.answer(body, rng))))

        def _send(self, status: int, body: dict[str, Any] | str | bytes, *, length: int = 0, cut: int = 0) -> None:
            with server._lock:  # before the answer leaves: a span ends before its client can go on
                server.spans.append((self.arrived, time.monotonic(), self.model))
            if isinstance(body, dict):
                body = json.dumps(body)
            data = body.encode() if isinstance(body, str) else body
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(length or len(data)))
                self.end_headers()
                self.wfile.write(data[:cut] if cut else data)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return  # the client gave up (timed out)
            if cut:
                self._drop()

        def _drop(self) -> None:
            self.close_connection = True
            with suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def chaos_server(**options: Any) -> Iterator[ChaosServer]:
    """A started :class:`ChaosServer` (keyword arguments as its constructor); closed on exit."""
    server = ChaosServer(**options).start()
    try:
        yield server
    finally:
        server.close()


__all__ = ["ALL_FAULTS", "FAST_FAULTS", "ChaosServer", "Fault", "chaos_server"]

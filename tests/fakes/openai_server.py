"""A loopback fake of the OpenAI chat-completions API, for provider tests without a network.

``POST /v1/chat/completions`` answers from a scripted queue of :class:`Reply` objects (then
from ``default``) and records every request body. Build replies with the helpers below::

    with fake_openai_server(rate_limited(retry_after_s=2), text("hi")) as server:
        model = build_model(parse_model_string(f"openai-compatible:{server.base_url}:fake"), ...)
        ...
        assert len(server.requests) == 2
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer: a status, a JSON body (or raw text), headers and a delay before it."""

    status: int = 200
    body: dict[str, Any] | str = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def _completion(message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def text(content: str) -> Reply:
    """An assistant message with plain content."""
    return Reply(body=_completion({"role": "assistant", "content": content}, "stop"))


def json_reply(payload: dict[str, Any]) -> Reply:
    """An assistant message whose content is ``payload`` as JSON (a structured output)."""
    return text(json.dumps(payload))


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> Reply:
    """An assistant message asking to call tool ``name`` with ``arguments``."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return Reply(body=_completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"))


def rate_limited(retry_after_s: float | None = None) -> Reply:
    """HTTP 429, with a ``Retry-After`` header when ``retry_after_s`` is given."""
    headers = {} if retry_after_s is None else {"Retry-After": f"{retry_after_s:g}"}
    error = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    return Reply(status=429, body=error, headers=headers)


def server_error(status: int = 500) -> Reply:
    """An HTTP 5xx with an OpenAI-style error body."""
    return Reply(status=status, body={"error": {"message": "The server had an error", "type": "server_error"}})


def malformed() -> Reply:
    """HTTP 200 declared as JSON whose body is not JSON."""
    return Reply(body='{"id": "chatcmpl-fake", "choices": [')


def delayed(reply: Reply, seconds: float) -> Reply:
    """``reply``, sent after ``seconds`` (to make a client time out). Closing the server cuts it short."""
    return Reply(status=reply.status, body=reply.body, headers=reply.headers, delay_s=seconds)


class FakeOpenAIServer:
    """The server: ``base_url`` to point a client at, ``script()`` to queue replies, ``requests`` recorded."""

    def __init__(self, default: Reply | Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self.default = default or text("ok")  # a Reply, or a function of the request body
        self.requests: list[dict[str, Any]] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies, answered in order before falling back to ``default``."""
        with self._lock:
            self._queue.extend(replies)

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wakes handlers sleeping in a delayed reply
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self._queue:
                return self._queue.popleft()
        return self.default(body) if callable(self.default) else self.default

    def _wait(self, seconds: float) -> None:
        self._closing.wait(seconds)


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as separate writes

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            if self.path != PATH:
                self._send(Reply(status=404, body={"error": {"message": f"no route {self.path}"}}))
                return
            body = json.loads(raw or b"{}")
            if body.get("stream"):
                self._send(Reply(status=400, body={"error": {"message": "the fake does not stream"}}))
                return
            reply = server._next(body)
            if reply.delay_s:
                server._wait(reply.delay_s)
            self._send(reply)

        def _send(self, reply: Reply) -> None:
            payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            data = payload.encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test); nothing to answer

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler


@contextmanager
def fake_openai_server(
    *replies: Reply, default: Reply | Callable[[dict[str, Any]], Reply] | None = None
) -> Iterator[FakeOpenAIServer]:
    """A started server with ``replies`` queued; closed on exit."""
    server = FakeOpenAIServer(default).start()
    server.script(*replies)
    try:
        yield server
    finally:
        server.close()


__all__ = [
    "FakeOpenAIServer",
    "Reply",
    "delayed",
    "fake_openai_server",
    "json_reply",
    "malformed",
    "rate_limited",
    "server_error",
    "text",
    "tool_call",
]

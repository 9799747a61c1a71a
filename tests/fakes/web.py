"""A loopback web for the tool tests: fake Tavily/Exa/Serper APIs and a few web pages.

``FakeWeb`` is a real HTTP server on 127.0.0.1 (a random port) in a daemon thread. The
search APIs live under ``/tavily``, ``/exa`` and ``/serper`` (use ``web.url("/tavily")`` as
the provider's base URL); each checks its auth header and request body the way the real
API expects them and answers with ``web.results`` in that provider's shape. Pages:

- ``/article``: an HTML article with navigation and footer boilerplate around it
- ``/plain``: a text/plain page
- ``/huge``: an endless-looking HTML page of ``HUGE_BYTES`` (counts what it managed to send)
- ``/slow``: sends its headers, then one byte every 50 ms for ``SLOW_SECONDS``
- ``/image.png``: a non-text content type
- ``/redirect?to=URL``: a 302 to URL; ``/loop``: a redirect to itself
- ``/missing``: a 404

``FakeDDGS`` stands in for the third-party ``ddgs.DDGS`` client, which cannot be pointed
at a local server.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

KEYS = {"tavily": "tvly-test-key", "exa": "exa-test-key", "serper": "serper-test-key"}
HUGE_BYTES = 20 * 1024 * 1024
SLOW_SECONDS = 5.0

ARTICLE_TITLE = "Quokka facts &amp; figures"
ARTICLE_HTML = f"""<!doctype html>
<html><head><title>{ARTICLE_TITLE}</title><style>body {{ color: navy }}</style></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About us</a> | Subscribe to our newsletter</nav>
<article>
<h1>Quokka facts</h1>
<p>The quokka is a small macropod about the size of a domestic cat. It lives on Rottnest Island
off the coast of Western Australia.</p>
<p>Quokkas are herbivorous and mainly nocturnal; they can survive long periods without water by
eating succulent plants.</p>
<p>Their population is listed as vulnerable, and the species is protected by law in Western
Australia.</p>
</article>
<footer>Copyright 2024 Example Wildlife Magazine. All rights reserved. Cookie policy.</footer>
<script>var trackingPixel = "should never appear";</script>
</body></html>
"""
PLAIN_TEXT = "Plain facts: the wombat's droppings are cube shaped.\n"


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None


@dataclass
class FakeWeb:
    """State shared with the handler: what to answer, and what was asked."""

    host: str = "127.0.0.1"
    port: int = 0
    # Canonical results (title, url, snippet); each provider fake reshapes them.
    results: list[dict[str, str]] = field(default_factory=list)
    # Provider name -> HTTP status to answer with instead of results (e.g. 500).
    status_override: dict[str, int] = field(default_factory=dict)
    # Provider name -> seconds to wait before answering.
    delay: dict[str, float] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    huge_bytes_sent: int = 0
    huge_done: threading.Event = field(default_factory=threading.Event)
    stopping: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a slow handler must not keep the test run alive
    web: FakeWeb

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hang up on purpose (size and time limits); that is not an error here


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def web(self) -> FakeWeb:
        return self.server.web

    def _record(self, body: Any = None) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.web.requests.append(RecordedRequest(self.command, self.path, headers, body))

    def _send(self, status: int, content_type: str, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, "application/json", json.dumps(payload).encode())

    # -- search APIs ---------------------------------------------------------------

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            body = None
        self._record(body)
        provider = self.path.strip("/").split("/", 1)[0]
        if self.path != f"/{provider}/search" or provider not in KEYS:
            self._json(404, {"error": "not found"})
            return
        time.sleep(self.web.delay.get(provider, 0.0))
        if provider in self.web.status_override:
            self._json(self.web.status_override[provider], {"error": "provider trouble"})
            return
        error = _check_request(provider, {k.lower(): v for k, v in self.headers.items()}, body)
        if error:
            self._json(401 if "key" in error else 400, {"error": error})
            return
        count = body.get("max_results") or body.get("numResults") or body.get("num") or 10
        self._json(200, _provider_payload(provider, self.web.results[: int(count)]))

    # -- pages -----------------------------------------------------------------------

    def do_GET(self) -> None:
        self._record()
        route = urlsplit(self.path)
        if route.path == "/article":
            self._send(200, "text/html; charset=utf-8", ARTICLE_HTML.encode())
        elif route.path == "/plain":
            self._send(200, "text/plain; charset=utf-8", PLAIN_TEXT.encode())
        elif route.path == "/image.png":
            self._send(200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
        elif route.path == "/redirect":
            target = parse_qs(route.query)["to"][0]
            self._send(302, "text/plain", b"moved", {"Location": target})
        elif route.path == "/loop":
            self._send(302, "text/plain", b"again", {"Location": "/loop"})
        elif route.path == "/huge":
            self._huge()
        elif route.path == "/slow":
            self._slow()
        else:
            self._send(404, "text/html", b"<html><title>Not found</title><body>Nope</body></html>")

    def _huge(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()  # no Content-Length: the body ends when the connection closes
        chunk = b"<p>" + b"lorem ipsum dolor sit amet " * 2_400 + b"</p>\n"
        try:
            self.wfile.write(b"<html><head><title>Huge</title></head><body>")
            while self.web.huge_bytes_sent < HUGE_BYTES and not self.web.stopping.is_set():
                self.wfile.write(chunk)
                self.web.huge_bytes_sent += len(chunk)
        except OSError:
            pass  # the client stopped reading
        finally:
            self.web.huge_done.set()

    def _slow(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        deadline = time.monotonic() + SLOW_SECONDS
        try:
            while time.monotonic() < deadline and not self.web.stopping.wait(0.05):
                self.wfile.write(b" ")
                self.wfile.flush()
        except OSError:
            pass


def _check_request(provider: str, headers: dict[str, str], body: Any) -> str | None:
    """Why the request would be rejected by the real API, or None."""
    if not isinstance(body, dict):
        return "body must be a JSON object"
    key = KEYS[provider]
    if provider == "tavily":
        if headers.get("authorization") != f"Bearer {key}":
            return "missing or invalid API key"
        if not isinstance(body.get("query"), str) or not isinstance(body.get("max_results"), int):
            return "expected {query, max_results}"
    elif provider == "exa":
        if headers.get("x-api-key") != key:
            return "missing or invalid API key"
        if not isinstance(body.get("query"), str) or not isinstance(body.get("numResults"), int):
            return "expected {query, numResults}"
    else:
        if headers.get("x-api-key") != key:  # Serper's X-API-KEY
            return "missing or invalid API key"
        if not isinstance(body.get("q"), str) or not isinstance(body.get("num"), int):
            return "expected {q, num}"
    if headers.get("content-type", "").split(";")[0] != "application/json":
        return "content type must be application/json"
    return None


def _provider_payload(provider: str, results: list[dict[str, str]]) -> dict[str, Any]:
    if provider == "tavily":
        rows = [{"title": r["title"], "url": r["url"], "content": r["snippet"], "score": 0.9} for r in results]
        return {"query": "q", "results": rows, "response_time": 0.1}
    if provider == "exa":
        rows = [{"id": r["url"], "title": r["title"], "url": r["url"], "highlights": [r["snippet"]]} for r in results]
        return {"requestId": "r1", "results": rows}
    rows = [
        {"title": r["title"], "link": r["url"], "snippet": r["snippet"], "position": i + 1}
        for i, r in enumerate(results)
    ]
    return {"searchParameters": {"q": "q"}, "organic": rows}


@contextmanager
def fake_web() -> Iterator[FakeWeb]:
    """Start a FakeWeb on a free loopback port; stop it on exit."""
    server = _Server(("127.0.0.1", 0), _Handler)
    web = FakeWeb(port=server.server_address[1])
    server.web = web
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield web
    finally:
        web.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@dataclass
class FakeDDGS:
    """A stand-in for ``ddgs.DDGS``: same constructor keyword, context manager and ``text()``.

    Set ``rows`` (dicts with title/href/body, as ddgs returns them) or ``error`` (raised from
    ``text()``); every client built and every query asked is recorded.
    """

    rows: list[dict[str, str]] = field(default_factory=list)
    error: Exception | None = None
    clients: list[dict[str, Any]] = field(default_factory=list)
    queries: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, **kwargs: Any) -> FakeDDGS:
        self.clients.append(kwargs)
        return self

    def __enter__(self) -> FakeDDGS:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def text(self, query: str, **kwargs: Any) -> list[dict[str, str]]:
        self.queries.append({"query": query, **kwargs})
        if self.error is not None:
            raise self.error
        return self.rows[: kwargs.get("max_results") or None]

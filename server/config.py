"""ServerSettings: where the server listens, who may call it, and how projects run."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sentient.exceptions import ConfigError
from sentient.resources import bundled_dir
from sentient.settings import Settings

TOKEN_ENV = "SENTIENT_API_TOKEN"
DOCS_ROOTS_ENV = "SENTIENT_DOCS_ROOTS"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
LIMITS = (
    "threads",
    "max_connections",
    "max_sockets",
    "max_partial_requests_per_client",
    "max_pending_sockets_per_client",
)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and every loopback address (``127.0.0.0/8``, ``::1``)."""
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServerSettings:
    """Everything :func:`sentient_server.create_app` needs. Build it with :meth:`from_env` in production.

    Attributes:
        host: address to bind; anything but loopback requires ``api_token``.
        port: TCP port (0 picks a free one in tests).
        api_token: bearer token checked on every REST call and Socket.IO connect (``SENTIENT_API_TOKEN``).
        cors_origins: extra browser origins allowed besides the server's own.
        sentient: the library settings (results dir, model, config dir).
        model: an agno model used by every project instead of the configured ones (tests, benchmarks).
        docs: the documents folder for projects that name none (default: Python's documentation).
        resume_on_start: resume projects that were running when the server stopped.
        flush_interval_s: the longest a node change waits before it is sent as a ``node_update``.
        max_request_bytes: request bodies above this size get 413.
        threads: native threads that run requests and Socket.IO handlers in the production server;
            connections themselves (idle, half-sent, WebSockets) hold none.
        async_mode: how Socket.IO serves its connections: ``threading`` (Werkzeug's threaded
            server, as the tests run it) or ``gevent`` (the production server sets it).
        dashboard_dir: the built dashboard, served at ``/`` when it exists.
        docs_roots: the folders under which a REST or Socket.IO client may name a ``docs`` folder
            (``SENTIENT_DOCS_ROOTS``, separated by ``os.pathsep``); none by default, so clients
            cannot make the server read its files.
        docs_max_files: most documents one docs folder may hold.
        docs_max_bytes: most bytes of documents one docs folder may hold.
        connect_timeout_s: an engine.io session that has not connected to the Socket.IO
            namespace after this long is closed.
        header_timeout_s: the production server drops a connection whose request head has not
            all arrived this long after the connection opened, or after its previous response.
        body_timeout_s: a request body that has not all arrived this long after its head gets 408.
        max_connections: most open connections of the production server, of every kind; more
            wait in the listen backlog.
        max_sockets: most live connections (WebSockets, long polls) at once; beyond, 503.
        max_partial_requests_per_client: most connections from one client address whose request
            has not all arrived (head and body) or that idle between two requests; beyond, the
            address's oldest are dropped once past ``cap_grace_s``.
        max_pending_sockets_per_client: most engine.io sessions from one client address that have
            not connected to the Socket.IO namespace (no token proven, or not yet); beyond, the
            address's oldest are closed once past ``cap_grace_s``. Connected sockets count only
            towards ``max_sockets``.
        cap_grace_s: no connection is dropped for its address's share in its first seconds: a
            client that sends its request or connects promptly gets in even from an address
            (loopback, a NAT) crowded by a slow or idle one, and a client that reconnects as soon
            as it is dropped is dropped at most this often, not as fast as it can reconnect.
    """

    host: str = "127.0.0.1"
    port: int = 5000
    api_token: str | None = None
    cors_origins: tuple[str, ...] = ()
    sentient: Settings = field(default_factory=Settings)
    model: Any = None
    docs: Path | None = None
    resume_on_start: bool = True
    flush_interval_s: float = 0.1
    max_request_bytes: int = 1 << 20
    threads: int = 32
    async_mode: Literal["threading", "gevent"] = "threading"
    dashboard_dir: Path = field(
        default_factory=lambda: bundled_dir("sentient_server", "_data/dashboard", "dashboard/dist")
    )
    docs_roots: tuple[Path, ...] = ()
    docs_max_files: int = 5_000
    docs_max_bytes: int = 200 * 1024 * 1024
    connect_timeout_s: float = 5.0
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_connections: int = 4_000
    max_sockets: int = 1_000
    max_partial_requests_per_client: int = 128
    max_pending_sockets_per_client: int = 32
    cap_grace_s: float = 3.0

    @classmethod
    def from_env(cls, **overrides: Any) -> ServerSettings:
        """Settings from ``SENTIENT_*`` variables (token, CORS origins), then ``overrides``."""
        values: dict[str, Any] = {"api_token": os.environ.get(TOKEN_ENV) or None}
        origins = os.environ.get("SENTIENT_CORS_ORIGINS", "")
        values["cors_origins"] = tuple(o.strip().rstrip("/") for o in origins.split(",") if o.strip())
        roots = os.environ.get(DOCS_ROOTS_ENV, "")
        values["docs_roots"] = tuple(Path(r).expanduser() for r in roots.split(os.pathsep) if r.strip())
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def check(self) -> None:
        """Refuse settings that would expose an unauthenticated server, or limits below 1."""
        if not is_loopback(self.host) and not self.api_token:
            raise ConfigError(
                f"binding to {self.host} exposes the server beyond this machine, but no API token is set.",
                field=TOKEN_ENV,
                fix=f"set {TOKEN_ENV} to a long random secret, or bind to 127.0.0.1.",
            )
        for name in LIMITS:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} is {getattr(self, name)}; it must be at least 1.", field=name)
        if self.api_token is not None and len(self.api_token) < 16:
            raise ConfigError("the API token is too short.", field=TOKEN_ENV, fix="use at least 16 random characters.")
        for root in self.docs_roots:
            if not Path(root).expanduser().is_dir():
                raise ConfigError(
                    f"docs root '{root}' is not a folder.",
                    field=DOCS_ROOTS_ENV,
                    fix=f"list existing folders separated by '{os.pathsep}'.",
                )
        for origin in self.cors_origins:
            if origin == "*" or "://" not in origin:
                raise ConfigError(
                    f"'{origin}' is not an origin.",
                    field="SENTIENT_CORS_ORIGINS",
                    fix="list full origins such as http://localhost:5173, comma-separated (no '*').",
                )

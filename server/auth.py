"""Who may talk to the server: bearer token, allowed hosts and browser origins.

- With an API token configured, every ``/api/`` call except ``/api/health`` must send
  ``Authorization: Bearer <token>``; every Socket.IO connect must send ``auth: {token}``.
  Tokens are compared in constant time.
- Bound to loopback, the ``Host`` header must name a loopback host: a web page that rebinds
  its DNS name to 127.0.0.1 cannot reach the API.
- Browsers may call from the server's own origin and the configured ``cors_origins`` only;
  a state-changing request from any other origin is refused (403), so a page elsewhere cannot
  drive a local server even without a token.
"""

from __future__ import annotations

import hmac
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, request

from .config import ServerSettings, is_loopback
from .errors import ApiError

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_OPEN_PATHS = frozenset({"/api/health"})


def token_ok(config: ServerSettings, presented: object) -> bool:
    """Whether ``presented`` is the configured token (always true when none is configured)."""
    if not config.api_token:
        return True
    if not isinstance(presented, str):
        return False
    try:
        candidate = presented.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: never the token, and never an exception
        return False
    return hmac.compare_digest(candidate, config.api_token.encode("utf-8"))


def bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def host_allowed(config: ServerSettings, host_header: str | None) -> bool:
    """Bound to loopback, only loopback host names are accepted (DNS-rebinding defence)."""
    if not is_loopback(config.host):
        return True
    if not host_header:
        return False
    hostname = urlsplit(f"//{host_header}").hostname or ""
    return is_loopback(hostname)


def origin_allowed(config: ServerSettings, origin: str | None, own_origin: str) -> bool:
    """No Origin (not a browser, or same-origin GET) or the server's own or a configured one."""
    if origin is None:
        return True
    origin = origin.rstrip("/")
    return origin == own_origin.rstrip("/") or origin in config.cors_origins


def socket_origin_checker(config: ServerSettings) -> Any:
    """The ``cors_allowed_origins`` callable for python-engineio: own origin or configured ones."""

    def allowed(origin: str | None, environ: dict[str, Any]) -> bool:
        own = f"{environ.get('wsgi.url_scheme', 'http')}://{environ.get('HTTP_HOST', '')}"
        return origin_allowed(config, origin, own)

    return allowed


def install(app: Flask, config: ServerSettings) -> None:
    """Check host, origin and token before every request; answer CORS for configured origins."""

    @app.before_request
    def guard() -> Response | None:
        if not host_allowed(config, request.host):
            raise ApiError(403, "forbidden", "this server only answers requests addressed to localhost.")
        origin = request.headers.get("Origin")
        own = request.host_url.rstrip("/")
        if request.method not in _SAFE_METHODS and not origin_allowed(config, origin, own):
            raise ApiError(403, "forbidden", f"requests from origin {origin} are not allowed.")
        if request.method == "OPTIONS" and origin and origin in config.cors_origins:
            return Response(status=204)
        path = request.path
        needs_token = path.startswith("/api/") and path not in _OPEN_PATHS and request.method != "OPTIONS"
        if needs_token and not token_ok(config, bearer(request.headers.get("Authorization"))):
            raise ApiError(401, "unauthorized", "send the API token as 'Authorization: Bearer <token>'.")
        return None

    @app.after_request
    def cors(response: Response) -> Response:
        origin = request.headers.get("Origin")
        if origin and origin.rstrip("/") in config.cors_origins:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Vary"] = "Origin"
            response.headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type"
            response.headers["Access-Control-Allow-Methods"] = "GET, POST, DELETE, OPTIONS"
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        return response

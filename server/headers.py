"""Security headers on every response: no framing, and a Content-Security-Policy per kind of page.

- Nothing the server answers may be framed (``X-Frame-Options: DENY`` and CSP
  ``frame-ancestors 'none'``): a page elsewhere cannot overlay the dashboard and steal clicks.
- The dashboard loads only its own scripts, styles and connections (the Socket.IO WebSocket is
  same-origin); no inline script, no plugins, no remote images.
- A served HTML report has no script at all; its inline stylesheet is the only thing allowed.
- Everything else (JSON, Markdown) needs nothing: ``default-src 'none'``.
"""

from __future__ import annotations

from flask import Flask, Response

DASHBOARD_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self'; "
    "connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
REPORT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
API_CSP = "default-src 'none'; frame-ancestors 'none'"


def install(app: Flask) -> None:
    """Add the headers after every request (a route's own CSP is kept)."""

    @app.after_request
    def secure(response: Response) -> Response:
        response.headers["X-Frame-Options"] = "DENY"
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        if "Content-Security-Policy" not in response.headers:
            html = response.mimetype == "text/html"
            response.headers["Content-Security-Policy"] = DASHBOARD_CSP if html else API_CSP
        return response

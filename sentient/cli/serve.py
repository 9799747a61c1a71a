"""``sentient serve``: the REST + Socket.IO server and the dashboard.

The server package (Flask, gunicorn) is imported only when this command runs, so the library
and the other commands never load it.
"""

from __future__ import annotations

import argparse
from typing import Any

from sentient.settings import Settings


def add_serve_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``serve`` command to the CLI's subparsers."""
    serve = subparsers.add_parser(
        "serve",
        help="start the server and dashboard (REST, Socket.IO, plan review)",
        description="Serve the REST API, live updates and the dashboard. Binding to anything but "
        "127.0.0.1 requires SENTIENT_API_TOKEN.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=5000, help="port (default: 5000)")
    serve.add_argument("--threads", type=int, default=128, help="server threads; each WebSocket holds one")
    serve.add_argument("--no-resume", action="store_true", help="do not resume interrupted projects on start")
    return serve


def run_serve(args: argparse.Namespace, settings: Settings) -> int:
    """Run the server until interrupted. Raises ConfigError for an exposed bind without a token."""
    from sentient_server.config import ServerSettings
    from sentient_server.serve import serve

    config = ServerSettings.from_env(
        host=args.host,
        port=args.port,
        threads=args.threads,
        sentient=settings,
        resume_on_start=not args.no_resume,
    )
    return serve(config)

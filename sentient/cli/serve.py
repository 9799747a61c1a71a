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
    add_connection_limits(serve)
    serve.add_argument("--no-resume", action="store_true", help="do not resume interrupted projects on start")
    return serve


def add_connection_limits(parser: argparse.ArgumentParser) -> None:
    """The server's thread and connection limits (defaults: ``sentient_server.ServerSettings``)."""
    parser.add_argument("--threads", type=int, help="threads that run requests (default 32); connections hold none")
    parser.add_argument("--max-connections", type=int, help="open connections in all (default 4000)")
    parser.add_argument(
        "--max-partial-per-client",
        type=int,
        help="connections of one address still sending their request; beyond, its oldest is dropped (default 128)",
    )
    parser.add_argument(
        "--max-pending-sockets-per-client",
        type=int,
        help="Socket.IO sessions of one address not yet connected; beyond, its oldest are closed (default 32)",
    )


def connection_limits(args: argparse.Namespace) -> dict[str, int | None]:
    """The :class:`~sentient_server.ServerSettings` fields the limit options set (None: the default)."""
    return {
        "threads": args.threads,
        "max_connections": args.max_connections,
        "max_partial_requests_per_client": args.max_partial_per_client,
        "max_pending_sockets_per_client": args.max_pending_sockets_per_client,
    }


def run_serve(args: argparse.Namespace, settings: Settings) -> int:
    """Run the server until interrupted. Raises ConfigError for an exposed bind without a token."""
    from sentient_server.config import ServerSettings
    from sentient_server.serve import serve

    config = ServerSettings.from_env(
        host=args.host,
        port=args.port,
        sentient=settings,
        resume_on_start=not args.no_resume,
        **connection_limits(args),
    )
    return serve(config)

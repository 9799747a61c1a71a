"""The built dashboard (``dashboard/dist``) at ``/``; unknown non-API paths get ``index.html``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from flask import Blueprint, abort, send_from_directory
from werkzeug.security import safe_join


def dashboard_blueprint(folder: Path) -> Blueprint:
    bp = Blueprint("dashboard", __name__)
    root = folder.resolve()

    @bp.get("/")
    @bp.get("/<path:path>")
    def page(path: str = "") -> Any:
        if path.startswith(("api/", "socket.io/")) or path in ("api", "socket.io"):
            abort(404)
        # Only a path inside dist/ is ever looked at: one that leaves it gets index.html whether
        # or not it names an existing file, so the answer says nothing about the server's files.
        target = safe_join(str(root), path) if path else None
        if target is not None and os.path.isfile(target):
            return send_from_directory(root, path)
        return send_from_directory(root, "index.html", max_age=0)

    return bp

"""The built dashboard (``dashboard/dist``) at ``/``; unknown non-API paths get ``index.html``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Blueprint, abort, send_from_directory


def dashboard_blueprint(folder: Path) -> Blueprint:
    bp = Blueprint("dashboard", __name__)
    root = folder.resolve()

    @bp.get("/")
    @bp.get("/<path:path>")
    def page(path: str = "") -> Any:
        if path.startswith(("api/", "socket.io/")) or path in ("api", "socket.io"):
            abort(404)
        if path and (root / path).is_file():
            return send_from_directory(root, path)  # refuses paths that leave the folder
        return send_from_directory(root, "index.html", max_age=0)

    return bp

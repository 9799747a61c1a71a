"""Health, profiles and the OpenAPI document."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify

from ..errors import not_found
from ..openapi import openapi_document
from ..responses import ProfileDetail, ProfileList, ProfileSummary
from ..schemas import valid_profile_name
from . import as_json, services

bp = Blueprint("meta", __name__)


@bp.get("/api/health")
def health() -> Any:
    from .. import __version__

    return jsonify(status="ok", version=__version__, projects_running=services().runs.running_count)


@bp.get("/api/profiles")
def profiles() -> Any:
    registry = services().runs.registry
    return as_json(
        ProfileList(profiles=[ProfileSummary.of(registry.profile(name)) for name in registry.profile_names()])
    )


@bp.get("/api/profiles/<name>")
def profile(name: str) -> Any:
    registry = services().runs.registry
    if not valid_profile_name(name) or name not in registry.profile_names():
        raise not_found("profile", name)
    return as_json(ProfileDetail.of(registry.profile(name)))


@bp.get("/api/openapi.json")
def openapi() -> Any:
    from .. import __version__

    return jsonify(openapi_document(__version__, services().runs.registry.profile_names()))

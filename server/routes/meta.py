"""Health, profiles and the OpenAPI document."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify

from sentient.agents.config import AgentConfig
from sentient.agents.registry import Profile

from ..errors import not_found
from ..openapi import openapi_document
from ..schemas import valid_profile_name
from . import services

bp = Blueprint("meta", __name__)


@bp.get("/api/health")
def health() -> Any:
    from .. import __version__

    return jsonify(status="ok", version=__version__, projects_running=services().runs.running_count)


@bp.get("/api/profiles")
def profiles() -> Any:
    registry = services().runs.registry
    return jsonify(profiles=[_summary(registry.profile(name)) for name in registry.profile_names()])


@bp.get("/api/profiles/<name>")
def profile(name: str) -> Any:
    registry = services().runs.registry
    if not valid_profile_name(name) or name not in registry.profile_names():
        raise not_found("profile", name)
    found = registry.profile(name)
    agents: dict[str, Any] = {
        "planner": _agent(found.planner),
        "root_planner": _agent(found.root_planner),
        "atomizer": _agent(found.atomizer),
        "executors": {task_type.value: _agent(a) for task_type, a in found.executors.items()},
        "aggregator": _agent(found.aggregator),
        "root_aggregator": _agent(found.root_aggregator),
        "plan_modifier": _agent(found.plan_modifier),
    }
    return jsonify({**_summary(found), "agents": agents})


@bp.get("/api/openapi.json")
def openapi() -> Any:
    from .. import __version__

    return jsonify(openapi_document(__version__, services().runs.registry.profile_names()))


def _summary(profile: Profile) -> dict[str, Any]:
    return {
        "name": profile.name,
        "description": profile.description,
        "settings": profile.settings.model_dump(mode="json"),
    }


def _agent(agent: AgentConfig) -> dict[str, Any]:
    return agent.model_dump(mode="json")

"""Sentient: hierarchical, recursive research agents.

A goal becomes a tree of tasks: planners decompose it, an atomizer decides what is directly
executable, executors search, think and write, independent subtasks run in parallel, and
aggregators combine the results bottom-up into a cited report.

The names below load on first use (PEP 562), so ``import sentient.graph`` and the other core
modules load no model provider, agno or Flask.

Sentient logs through loguru and is silent as a library: its messages are disabled until the
application enables them (``logger.enable("sentient")``), as the ``sentient`` CLI and the server do.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from loguru import logger

if TYPE_CHECKING:
    from sentient.agents.models.fake import FakeRequest, ScriptedModel
    from sentient.agents.schemas import AggregationOutput, AtomizerOutput, ExecutionOutput
    from sentient.api import ProfiledSentientAgent, RunResult, RunStats
    from sentient.events import EventBus
    from sentient.exceptions import ConfigError, SentientError
    from sentient.graph import NodeType, TaskGraph, TaskNode, TaskStatus, TaskType
    from sentient.graph.plan import PlanOutput, SubTask
    from sentient.hitl import Approve, AutoApprove, Modify, PlanReviewer, Reject, ReviewRequest
    from sentient.settings import EngineSettings, FailurePolicy, ReviewMode, Settings

# Public name -> the module that defines it.
_EXPORTS = {
    "AggregationOutput": "sentient.agents.schemas",
    "Approve": "sentient.hitl",
    "AtomizerOutput": "sentient.agents.schemas",
    "AutoApprove": "sentient.hitl",
    "ConfigError": "sentient.exceptions",
    "EngineSettings": "sentient.settings",
    "EventBus": "sentient.events",
    "ExecutionOutput": "sentient.agents.schemas",
    "FailurePolicy": "sentient.settings",
    "FakeRequest": "sentient.agents.models.fake",
    "Modify": "sentient.hitl",
    "NodeType": "sentient.graph",
    "PlanOutput": "sentient.graph.plan",
    "PlanReviewer": "sentient.hitl",
    "ProfiledSentientAgent": "sentient.api",
    "Reject": "sentient.hitl",
    "ReviewMode": "sentient.settings",
    "ReviewRequest": "sentient.hitl",
    "RunResult": "sentient.api",
    "RunStats": "sentient.api",
    "ScriptedModel": "sentient.agents.models.fake",
    "SentientError": "sentient.exceptions",
    "Settings": "sentient.settings",
    "SubTask": "sentient.graph.plan",
    "TaskGraph": "sentient.graph",
    "TaskNode": "sentient.graph",
    "TaskStatus": "sentient.graph",
    "TaskType": "sentient.graph",
}

__all__ = [
    "AggregationOutput",
    "Approve",
    "AtomizerOutput",
    "AutoApprove",
    "ConfigError",
    "EngineSettings",
    "EventBus",
    "ExecutionOutput",
    "FailurePolicy",
    "FakeRequest",
    "Modify",
    "NodeType",
    "PlanOutput",
    "PlanReviewer",
    "ProfiledSentientAgent",
    "Reject",
    "ReviewMode",
    "ReviewRequest",
    "RunResult",
    "RunStats",
    "ScriptedModel",
    "SentientError",
    "Settings",
    "SubTask",
    "TaskGraph",
    "TaskNode",
    "TaskStatus",
    "TaskType",
]


# A library never decides what its host application logs (loguru's rule for libraries).
logger.disable("sentient")


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sentient' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

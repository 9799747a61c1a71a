"""Sentient: hierarchical, recursive research agents.

A goal becomes a tree of tasks: planners decompose it, an atomizer decides what is directly
executable, executors search, think and write, independent subtasks run in parallel, and
aggregators combine the results bottom-up into a cited report.
"""

from sentient.agents.models.fake import FakeRequest, ScriptedModel
from sentient.agents.schemas import AggregationOutput, AtomizerOutput, ExecutionOutput
from sentient.api import ProfiledSentientAgent, RunResult, RunStats
from sentient.events import EventBus
from sentient.exceptions import ConfigError, SentientError
from sentient.graph import NodeType, TaskGraph, TaskNode, TaskStatus, TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.hitl import Approve, AutoApprove, Modify, PlanReviewer, Reject, ReviewRequest
from sentient.settings import EngineSettings, FailurePolicy, ReviewMode, Settings

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

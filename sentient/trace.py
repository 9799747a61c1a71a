"""TraceRecorder: subscribes to the engine's events and writes one trace file per node."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

from sentient.events import AgentCallFinished, Event, ReviewAnswered
from sentient.graph.task_graph import TaskGraph


class TraceRecorder:
    """Collects every agent call (prompt, context, response, tokens, latency) and review, per node."""

    def __init__(self) -> None:
        self._calls: dict[str, list[AgentCallFinished]] = {}
        self._reviews: dict[str, list[ReviewAnswered]] = {}
        self.agent_calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.model_calls = 0  # agent calls not answered from the response cache

    def __call__(self, event: Event) -> None:
        if isinstance(event, AgentCallFinished):
            self._calls.setdefault(event.task_id, []).append(event)
            self.agent_calls += 1
            self.input_tokens += event.input_tokens
            self.output_tokens += event.output_tokens
            self.cost_usd += event.cost_usd
            self.model_calls += not event.cached
        elif isinstance(event, ReviewAnswered):
            self._reviews.setdefault(event.task_id, []).append(event)

    def restore(self, calls: list[dict[str, Any]]) -> None:
        """Count the calls of an earlier session of the same project (a resumed run)."""
        names = {f.name for f in fields(AgentCallFinished)}
        for call in calls:
            values = {k: v for k, v in call.items() if k in names}
            values["tool_calls"] = tuple(values.get("tool_calls") or ())
            self(AgentCallFinished(**values))

    def calls(self, task_id: str) -> list[dict[str, Any]]:
        return [_record(e) for e in self._calls.get(task_id, ())]

    def write(self, out_dir: Path, graph: TaskGraph) -> None:
        """Write ``traces/<task_id>.json`` for every node (and the calls of removed nodes)."""
        traces = out_dir / "traces"
        traces.mkdir(parents=True, exist_ok=True)
        for node in graph:
            record = {
                "node": node.model_dump(mode="json"),
                "calls": self.calls(node.task_id),
                "reviews": [_record(e) for e in self._reviews.get(node.task_id, ())],
            }
            write_json(traces / f"{node.task_id}.json", record)
        for task_id in self._calls.keys() - {n.task_id for n in graph}:
            write_json(traces / f"{task_id}.removed.json", {"calls": self.calls(task_id)})


def _record(event: AgentCallFinished | ReviewAnswered) -> dict[str, Any]:
    # Shallow on purpose: events are immutable, and a deep copy per call is measurable in big runs.
    return {f.name: getattr(event, f.name) for f in fields(event)}


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (temp file + rename), so a reader never sees half a file."""
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=str))


def write_text(path: Path, text: str) -> None:
    """Write UTF-8 text atomically (:func:`write_bytes`)."""
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path: Path, data: bytes) -> None:
    """Write a file atomically (temp file + rename), creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

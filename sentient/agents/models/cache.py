"""ResponseCache: model responses in SQLite, keyed by everything that determines them.

The key is a SHA-256 over the model string, the messages, the output schema and the tools, so
a re-run of the same goal with the same settings is answered without a single model call. An
entry also keeps what the call's tools returned (sources, tool calls), so citations survive a
cache hit. On by default for the embedded model (deterministic, slow); opt-in for hosted ones.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    content TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    extra TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


@dataclass(frozen=True)
class CachedResponse:
    content: str
    input_tokens: int
    output_tokens: int
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. sources and tool calls


class ResponseCache:
    """A process-safe response cache (SQLite WAL). Cheap enough to call on the engine loop."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(model: str, messages: list[dict[str, Any]], schema: dict[str, Any] | None, tools: list[str]) -> str:
        payload = json.dumps(
            {"model": model, "messages": messages, "schema": schema, "tools": sorted(tools)},
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def get(self, key: str) -> CachedResponse | None:
        with self._lock:
            row = self._db.execute(
                "SELECT content, input_tokens, output_tokens, extra FROM responses WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return CachedResponse(row[0], row[1], row[2], json.loads(row[3]))

    def put(self, key: str, model: str, response: CachedResponse) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    response.content,
                    response.input_tokens,
                    response.output_tokens,
                    json.dumps(response.extra, ensure_ascii=False, default=str),
                    time.time(),
                ),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()

"""The SQLite schema of the project store, its version, and how a connection is opened.

The version lives in ``PRAGMA user_version``: 0 means a new file (the schema is created),
:data:`SCHEMA_VERSION` is current, and a file from a newer Sentient is refused rather than
misread. A future change adds an entry to :data:`MIGRATIONS` (``version -> SQL`` that brings
the file from ``version - 1``), and the same change to :mod:`sentient.store.postgres`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from pathlib import Path

SCHEMA_VERSION = 7
BUSY_TIMEOUT_MS = 5000  # another process (a CLI next to the server) holding the write lock

_SCHEMA_V1 = """
CREATE TABLE projects (
    project_id      TEXT PRIMARY KEY,
    goal            TEXT NOT NULL,
    profile         TEXT NOT NULL,
    status          TEXT NOT NULL,
    error           TEXT,
    settings        TEXT NOT NULL DEFAULT '{}',
    stats           TEXT NOT NULL DEFAULT '{}',
    report_markdown TEXT,
    owner_pid       INTEGER,
    owner_start     TEXT,  -- the owner's process start time: a reused pid is not mistaken for it
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL
);
CREATE INDEX projects_by_created ON projects (created_at);

CREATE TABLE nodes (
    project_id    TEXT NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
    task_id       TEXT NOT NULL,
    seq           INTEGER NOT NULL,  -- creation order: parents before children, siblings in plan order
    parent_id     TEXT,
    goal          TEXT NOT NULL,
    task_type     TEXT NOT NULL,
    node_type     TEXT NOT NULL,
    layer         INTEGER NOT NULL,
    depends_on    TEXT NOT NULL DEFAULT '[]',
    status        TEXT NOT NULL,
    result        TEXT,
    error         TEXT,
    sources       TEXT NOT NULL DEFAULT '[]',
    warnings      TEXT NOT NULL DEFAULT '[]',
    replans       INTEGER NOT NULL DEFAULT 0,
    agent_calls   INTEGER NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd      REAL NOT NULL DEFAULT 0,
    created_at    REAL NOT NULL,
    PRIMARY KEY (project_id, task_id)
);
CREATE UNIQUE INDEX nodes_by_seq ON nodes (project_id, seq);

CREATE TABLE status_changes (
    id         INTEGER PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
    task_id    TEXT NOT NULL,
    old        TEXT NOT NULL,
    new        TEXT NOT NULL,
    at         REAL NOT NULL,
    error      TEXT
);
CREATE INDEX status_changes_by_node ON status_changes (project_id, task_id);

-- Calls are kept when their node is removed by a replan: they are part of the run's trace.
CREATE TABLE calls (
    id            INTEGER PRIMARY KEY,
    project_id    TEXT NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
    task_id       TEXT NOT NULL,
    role          TEXT NOT NULL,
    agent         TEXT NOT NULL,
    model         TEXT NOT NULL,
    prompt        TEXT NOT NULL,
    context       TEXT NOT NULL DEFAULT '{}',
    response      TEXT,
    error         TEXT,
    attempts      INTEGER NOT NULL,
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_usd      REAL NOT NULL DEFAULT 0,
    cached        INTEGER NOT NULL DEFAULT 0,
    tool_calls    TEXT NOT NULL DEFAULT '[]',
    started_at    REAL NOT NULL,
    latency_s     REAL NOT NULL
);
CREATE INDEX calls_by_node ON calls (project_id, task_id);

-- What DONE nodes learned (sentient.context.knowledge), written with the status that made each DONE.
CREATE TABLE knowledge (
    project_id TEXT NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
    task_id    TEXT NOT NULL,
    goal       TEXT NOT NULL,
    result     TEXT NOT NULL,
    sources    TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (project_id, task_id)
);

CREATE TABLE reviews (
    review_id   TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
    task_id     TEXT NOT NULL,
    round       INTEGER NOT NULL,
    goal        TEXT NOT NULL,
    layer       INTEGER NOT NULL,
    plan        TEXT NOT NULL,
    context     TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL,
    decision    TEXT,
    created_at  REAL NOT NULL,
    answered_at REAL,
    deadline    REAL
);
CREATE INDEX reviews_by_project ON reviews (project_id, status);
CREATE INDEX reviews_by_node ON reviews (project_id, task_id, round);
"""

# v2: how the project was started (model, offline, docs; overrides given on resume) and what its
# runs spent so far (budgets are cumulative over resumes).
_SCHEMA_V2 = """
ALTER TABLE projects ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
ALTER TABLE projects ADD COLUMN spent TEXT NOT NULL DEFAULT '{}';
"""

# v3: the report as data (the JSON of sentient.report.Report) beside its Markdown, so that
# nobody has to read the Markdown back.
_SCHEMA_V3 = """
ALTER TABLE projects ADD COLUMN report_json TEXT;
"""

# v4: leases (sentient.store.lease): the owner's host, pid space and token, and when its lease
# ends (the database's clock, seconds since the epoch). NULL lease: a claim from before leases.
_SCHEMA_V4 = """
ALTER TABLE projects ADD COLUMN owner_host TEXT;
ALTER TABLE projects ADD COLUMN owner_space TEXT;
ALTER TABLE projects ADD COLUMN owner_token TEXT;
ALTER TABLE projects ADD COLUMN lease_expires_at REAL;
"""

# v5: reviews of tool calls (sentient.tools.confirm) beside plan reviews: the kind, and the call
# (JSON: tool and arguments; NULL for a plan). A tool call's review stores the plan as JSON null.
_SCHEMA_V5 = """
ALTER TABLE reviews ADD COLUMN kind TEXT NOT NULL DEFAULT 'plan';
ALTER TABLE reviews ADD COLUMN tool_call TEXT;
"""

# v6: the question a node asks again, restated with what the lookups before it found (its goal
# is then the restated question; sentient.agents.processor).
_SCHEMA_V6 = """
ALTER TABLE nodes ADD COLUMN restates TEXT;
"""

# v7: whether a question's unconfirmed direct answer is the model's own, asked without passages
# (research that ends unconfirmed does not replace it; sentient.agents.processor). A question
# still being researched in an older store keeps its direct answer over unconfirmed research,
# as the version that started it did: which kind that answer was is not known.
_SCHEMA_V7 = """
ALTER TABLE nodes ADD COLUMN answered_from_memory INTEGER NOT NULL DEFAULT 0;
UPDATE nodes SET answered_from_memory = 1 WHERE node_type = 'PLAN' AND status != 'DONE' AND result IS NOT NULL;
"""

MIGRATIONS: dict[int, str] = {
    1: _SCHEMA_V1,
    2: _SCHEMA_V2,
    3: _SCHEMA_V3,
    4: _SCHEMA_V4,
    5: _SCHEMA_V5,
    6: _SCHEMA_V6,
    7: _SCHEMA_V7,
}


class SchemaVersionError(sqlite3.DatabaseError):
    """The file was written by a newer Sentient (a higher ``user_version``)."""


class EmptyFileError(sqlite3.DatabaseError):
    """The file is empty (0 bytes): truncated or made by something else, never a store Sentient made."""


def connect(path: Path) -> sqlite3.Connection:
    """Open (and create or migrate) the database at ``path``.

    The connection is in autocommit mode (``isolation_level=None``): every write goes through
    an explicit ``BEGIN IMMEDIATE … COMMIT``, so a transaction's extent is visible in the code.
    ``check_same_thread`` is off because the store serialises access with its own lock.

    Raises:
        EmptyFileError: ``path`` is a file of 0 bytes. SQLite would take it for a new database;
            it is more likely a store that was truncated, and starting afresh would hide that.
    """
    if str(path) != ":memory:":
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            _create(path)
        elif path.is_file() and path.stat().st_size == 0:
            raise EmptyFileError(
                f"the project store {path} is an empty file (0 bytes), not a database: restore it from a backup,"
                " or delete it to start a new store"
            )
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode: a commit survives a process crash; only a power loss can drop the
        # last few commits, and the file stays consistent either way.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        _migrate(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


def _create(path: Path) -> None:
    """Put a new database file at ``path`` in one step, unless another process just did.

    SQLite creates its file empty and writes the first page a moment later: a second process
    opening it in between would see an empty file. Made beside and linked into place, the
    store is never seen empty, so an empty one is always damage (see :func:`connect`).
    """
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.new")
    try:
        conn = sqlite3.connect(str(partial))
        try:
            conn.execute("PRAGMA journal_mode = WAL")  # writes the header
        finally:
            conn.close()
        with contextlib.suppress(FileExistsError):  # the other process's file is as good
            os.link(partial, path)
    except OSError:
        pass  # no hard links on this filesystem: SQLite creates the file as it always did
    finally:
        for leftover in (partial, partial.with_name(f"{partial.name}-wal"), partial.with_name(f"{partial.name}-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute("BEGIN IMMEDIATE")  # two processes opening a new file at once: one creates it
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{path} has schema version {version}, newer than this Sentient's {SCHEMA_VERSION}: upgrade Sentient"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            for statement in _statements(MIGRATIONS[target]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {target}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """Split a migration into statements (``executescript`` would commit our transaction)."""
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]

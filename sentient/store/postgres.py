"""The project store in PostgreSQL (``SENTIENT_DATABASE_URL=postgresql://…``), through psycopg 3.

The tables are SQLite's (:mod:`sentient.store.schema`) with PostgreSQL's types: 64-bit integers,
double-precision times and costs, JSON kept as text, and an explicit ``rowid`` (insertion order)
where the store orders by SQLite's implicit one. The version lives in ``sentient_schema``; the
schema is created at :data:`BASE_VERSION`, and a later change adds an entry to
:data:`MIGRATIONS` here as well as in :mod:`sentient.store.schema`.

Transactions: reads run in ``REPEATABLE READ READ ONLY`` (one snapshot, like a SQLite read
transaction); writes in ``READ COMMITTED``. A claim stays atomic because it is one conditional
UPDATE: of two claims of the same row the second waits for the first to commit, then finds the
row changed and updates nothing (see :meth:`ProjectStore.claim`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import TransactionStatus
from psycopg.rows import RowMaker

from sentient.store.database import Cursor, Database, Dialect
from sentient.store.errors import StoreError
from sentient.store.schema import SCHEMA_VERSION, _statements

URL_VARIABLE = "SENTIENT_DATABASE_URL"
CONNECT_TIMEOUT_S = 10
_SCHEMES = ("postgresql", "postgres")
_SCHEMA_LOCK = 0x53454E54  # pg_advisory_xact_lock key: two processes creating the schema at once

POSTGRES = Dialect(
    name="postgresql",
    live_totals=(
        "json_build_array(COUNT(*), COALESCE(SUM(agent_calls), 0), COALESCE(SUM(input_tokens), 0),"
        " COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cost_usd), 0), COUNT(*) FILTER (WHERE status = 'FAILED'))::text"
    ),
    json_values="SELECT json_array_elements_text(?::json)",
    same="IS NOT DISTINCT FROM",
    now="EXTRACT(EPOCH FROM clock_timestamp())::double precision",  # the server's clock, shared by all workers
    lock_row=" FOR UPDATE",
    option="(p.options::json ->> CAST(? AS TEXT))",
)

BASE_VERSION = 3  # the schema below is SQLite's version 3
_SCHEMA = """
CREATE TABLE projects (
    rowid           BIGINT GENERATED ALWAYS AS IDENTITY,  -- insertion order, as SQLite's implicit rowid
    project_id      TEXT PRIMARY KEY,
    goal            TEXT NOT NULL,
    profile         TEXT NOT NULL,
    status          TEXT NOT NULL,
    error           TEXT,
    settings        TEXT NOT NULL DEFAULT '{}',
    stats           TEXT NOT NULL DEFAULT '{}',
    report_markdown TEXT,
    owner_pid       BIGINT,
    owner_start     TEXT,
    created_at      DOUBLE PRECISION NOT NULL,
    updated_at      DOUBLE PRECISION NOT NULL,
    options         TEXT NOT NULL DEFAULT '{}',
    spent           TEXT NOT NULL DEFAULT '{}',
    report_json     TEXT
);
CREATE INDEX projects_by_created ON projects (created_at);

CREATE TABLE nodes (
    project_id    TEXT NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
    task_id       TEXT NOT NULL,
    seq           BIGINT NOT NULL,
    parent_id     TEXT,
    goal          TEXT NOT NULL,
    task_type     TEXT NOT NULL,
    node_type     TEXT NOT NULL,
    layer         BIGINT NOT NULL,
    depends_on    TEXT NOT NULL DEFAULT '[]',
    status        TEXT NOT NULL,
    result        TEXT,
    error         TEXT,
    sources       TEXT NOT NULL DEFAULT '[]',
    warnings      TEXT NOT NULL DEFAULT '[]',
    replans       BIGINT NOT NULL DEFAULT 0,
    agent_calls   BIGINT NOT NULL DEFAULT 0,
    input_tokens  BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    cost_usd      DOUBLE PRECISION NOT NULL DEFAULT 0,
    created_at    DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (project_id, task_id)
);
CREATE UNIQUE INDEX nodes_by_seq ON nodes (project_id, seq);

CREATE TABLE status_changes (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
    task_id    TEXT NOT NULL,
    old        TEXT NOT NULL,
    new        TEXT NOT NULL,
    at         DOUBLE PRECISION NOT NULL,
    error      TEXT
);
CREATE INDEX status_changes_by_node ON status_changes (project_id, task_id);

CREATE TABLE calls (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id    TEXT NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
    task_id       TEXT NOT NULL,
    role          TEXT NOT NULL,
    agent         TEXT NOT NULL,
    model         TEXT NOT NULL,
    prompt        TEXT NOT NULL,
    context       TEXT NOT NULL DEFAULT '{}',
    response      TEXT,
    error         TEXT,
    attempts      BIGINT NOT NULL,
    input_tokens  BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_usd      DOUBLE PRECISION NOT NULL DEFAULT 0,
    cached        BIGINT NOT NULL DEFAULT 0,
    tool_calls    TEXT NOT NULL DEFAULT '[]',
    started_at    DOUBLE PRECISION NOT NULL,
    latency_s     DOUBLE PRECISION NOT NULL
);
CREATE INDEX calls_by_node ON calls (project_id, task_id);

CREATE TABLE knowledge (
    rowid      BIGINT GENERATED ALWAYS AS IDENTITY,  -- the order the entries were stored in
    project_id TEXT NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
    task_id    TEXT NOT NULL,
    goal       TEXT NOT NULL,
    result     TEXT NOT NULL,
    sources    TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (project_id, task_id)
);

CREATE TABLE reviews (
    rowid       BIGINT GENERATED ALWAYS AS IDENTITY,
    review_id   TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
    task_id     TEXT NOT NULL,
    round       BIGINT NOT NULL,
    goal        TEXT NOT NULL,
    layer       BIGINT NOT NULL,
    plan        TEXT NOT NULL,
    context     TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL,
    decision    TEXT,
    created_at  DOUBLE PRECISION NOT NULL,
    answered_at DOUBLE PRECISION,
    deadline    DOUBLE PRECISION
);
CREATE INDEX reviews_by_project ON reviews (project_id, status);
CREATE INDEX reviews_by_node ON reviews (project_id, task_id, round);

CREATE TABLE sentient_schema (version INTEGER NOT NULL);
"""

# version -> SQL that brings the database from ``version - 1`` (after BASE_VERSION).
MIGRATIONS: dict[int, str] = {
    # v4: leases (sentient.store.lease), as in SQLite.
    4: """
ALTER TABLE projects ADD COLUMN owner_host TEXT;
ALTER TABLE projects ADD COLUMN owner_space TEXT;
ALTER TABLE projects ADD COLUMN owner_token TEXT;
ALTER TABLE projects ADD COLUMN lease_expires_at DOUBLE PRECISION;
""",
    # v5: reviews of tool calls, as in SQLite.
    5: """
ALTER TABLE reviews ADD COLUMN kind TEXT NOT NULL DEFAULT 'plan';
ALTER TABLE reviews ADD COLUMN tool_call TEXT;
""",
    # v6: the question a node asks again, restated, as in SQLite.
    6: """
ALTER TABLE nodes ADD COLUMN restates TEXT;
""",
    # v7: whether a question's unconfirmed direct answer is the model's own, as in SQLite.
    7: """
ALTER TABLE nodes ADD COLUMN answered_from_memory BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE nodes SET answered_from_memory = TRUE WHERE node_type = 'PLAN' AND status != 'DONE' AND result IS NOT NULL;
""",
}


class PostgresDatabase(Database):
    """The shared store: one psycopg connection to the database of a ``postgresql://`` URL."""

    dialect = POSTGRES
    errors = (psycopg.Error,)

    def __init__(self, url: str) -> None:
        self.location = redact(url)
        self._url = check_url(url)
        self._conn = self._connect()
        try:
            self._migrate()
        except BaseException:
            self._conn.close()
            raise

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return self._conn.execute(_placeholders(sql), params)

    def begin(self, write: bool) -> None:
        if self._conn.broken:  # the server restarted or the network dropped: start again
            self._conn.close()
            self._conn = self._connect()
        self._conn.execute("BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    @property
    def in_transaction(self) -> bool:
        return self._conn.info.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR)

    def damage(self) -> str | None:
        self._conn.execute("SELECT 1")  # the server checks its own pages; here, that it answers
        return None

    def describe(self, exc: Exception) -> str:
        return f"project store {self.location}: {_one_line(exc)}"

    def close(self) -> None:
        self._conn.close()

    def _connect(self) -> psycopg.Connection[_Row]:
        try:
            conn = psycopg.connect(self._url, autocommit=True, row_factory=_rows, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to the PostgreSQL database of {URL_VARIABLE} ({self.location}): {_one_line(exc)}"
            ) from exc
        for container in (list, tuple):
            conn.adapters.register_dumper(container, _Unstorable)
        return conn

    def _migrate(self) -> None:
        conn = self._conn
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                exists = conn.execute("SELECT to_regclass('sentient_schema') IS NOT NULL").fetchone()
                if exists is not None and exists[0]:
                    row = conn.execute("SELECT version FROM sentient_schema").fetchone()
                    version = BASE_VERSION if row is None else int(row[0])
                else:
                    for statement in _statements(_SCHEMA):
                        conn.execute(statement)
                    conn.execute("INSERT INTO sentient_schema (version) VALUES (%s)", (BASE_VERSION,))
                    version = BASE_VERSION
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.location} has schema version {version}, newer than this Sentient's"
                        f" {SCHEMA_VERSION}: upgrade Sentient"
                    )
                for target in range(version + 1, SCHEMA_VERSION + 1):
                    for statement in _statements(MIGRATIONS[target]):
                        conn.execute(statement)
                    conn.execute("UPDATE sentient_schema SET version = %s", (target,))
        except psycopg.Error as exc:
            raise StoreError(f"cannot set up the project store in {self.location}: {_one_line(exc)}") from exc


def check_url(url: str) -> str:
    """Return ``url`` if psycopg can read it as a ``postgresql://`` URL; raise StoreError otherwise."""
    scheme = urlsplit(url).scheme
    if scheme not in _SCHEMES:
        raise StoreError(
            f"{URL_VARIABLE} must be a postgresql:// URL (postgresql://USER:PASSWORD@HOST:PORT/DATABASE),"
            f" not {redact(url)!r}"
        )
    try:
        psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise StoreError(f"{URL_VARIABLE} is not a valid PostgreSQL URL ({redact(url)}): {_one_line(exc)}") from exc
    return url


def redact(url: str) -> str:
    """The URL without its password (for messages and logs)."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
        query = re.sub(r"(?i)(password=)[^&]*", r"\1***", parts.query)
        return urlunsplit(parts._replace(netloc=netloc, query=query))
    except ValueError:  # an unparseable URL (a bad port): show nothing that could be a secret
        return "<unreadable URL>"


@functools.lru_cache(maxsize=512)
def _placeholders(sql: str) -> str:
    """SQLite's ``?`` placeholders as psycopg's ``%s`` (the store's SQL has no ``?`` in literals)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _one_line(exc: BaseException) -> str:
    return " ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__


class _Unstorable(Dumper):
    """Refuses a list or tuple as a parameter, as SQLite does (psycopg would store it as an array)."""

    def dump(self, obj: Any) -> bytes:
        raise psycopg.DataError(f"cannot store a {type(obj).__name__} ({obj!r:.80}): only text, numbers and None")


class _Row:
    """A result row read by position or by column name, like ``sqlite3.Row``."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: Sequence[Any]) -> None:
        self._index = index
        self._values = values

    def __getitem__(self, key: int | str) -> Any:
        return self._values[self._index[key] if isinstance(key, str) else key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._index)


def _rows(cursor: psycopg.Cursor[Any]) -> RowMaker[_Row]:
    index = {column.name: i for i, column in enumerate(cursor.description or ())}
    return functools.partial(_Row, index)

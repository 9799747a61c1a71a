"""ProjectStore: projects, their task graphs, traces and plan reviews in one SQLite file.

Or in PostgreSQL, shared by several processes (on several machines), when ``SENTIENT_DATABASE_URL``
is set: the same SQL runs on either (:mod:`sentient.store.database`, :mod:`sentient.store.postgres`).
A running project is held by one owner under a lease (:mod:`sentient.store.lease`). What it
returns (project records and statuses, nodes and reviews read back) is in :mod:`sentient.store.records`.

Threading: one connection guarded by one re-entrant lock. The engine's thread, the
:class:`~sentient.store.writer.StoreWriter` thread and Flask request threads all go through
it. SQLite serialises writers anyway and every operation here is short (the writer commits
in batches of a few ms), so a lock costs little; in exchange there is no connection per
request thread to leak and :meth:`ProjectStore.close` closes everything. Other processes (a
CLI next to the server) read concurrently thanks to WAL, and wait for the write lock up to
the busy timeout.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sentient.graph.node import StatusChange, TaskNode
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.store.database import Database, SQLiteDatabase
from sentient.store.errors import (
    LeaseLostError,
    NodeNotFoundError,
    ProjectBusyError,
    ProjectExistsError,
    ProjectNotFoundError,
    ReviewAlreadyAnsweredError,
    ReviewNotFoundError,
    StoreError,
)
from sentient.store.lease import DEFAULT_LEASE_S, Owner, owner_alive
from sentient.store.records import (
    NewReview,
    ProjectRecord,
    ProjectStatus,
    check_project_id,
    node_from_row,
    project_status,
    record_from_row,
    review_from_row,
)

DB_NAME = "sentient.db"
_IN_MEMORY = ":memory:"  # SQLite's name for a database without a file


# -- the store -----------------------------------------------------------------------------

_PROJECT_SELECT = """
SELECT p.project_id, p.goal, p.profile, p.status, p.error, p.settings, p.stats, p.owner_pid, p.owner_start,
       p.owner_host, p.owner_space, p.owner_token, p.lease_expires_at, {now} AS read_at, p.options, p.spent, p.created_at, p.updated_at, p.report_markdown IS NOT NULL AS has_report,
       (SELECT COUNT(*) FROM reviews r WHERE r.project_id = p.project_id AND r.status = 'pending') AS pending_reviews,
       (SELECT {live} FROM nodes n WHERE n.project_id = p.project_id) AS live
FROM projects p
"""
_NODE_COLUMNS = (
    "task_id, parent_id, goal, restates, task_type, node_type, layer, depends_on, status, result, error, sources,"
    " warnings, replans, answered_from_memory, agent_calls, input_tokens, output_tokens, cost_usd, created_at"
)
_CALL_COLUMNS = (
    "task_id, role, agent, model, prompt, context, response, error, attempts, input_tokens, output_tokens,"
    " cost_usd, cached, tool_calls, started_at, latency_s"
)
_REVIEW_COLUMNS = (
    "review_id, project_id, task_id, round, goal, layer, plan, context, status, decision, created_at, answered_at,"
    " deadline, kind, tool_call"
)


class ProjectStore:
    """Every project of a results folder, in ``<results_dir>/sentient.db`` or a PostgreSQL database.

    Thread-safe (one connection, one lock; see the module docstring). Use :meth:`open`, and
    :meth:`close` (or ``with``) when done.

    Attributes:
        owner: who this store claims projects as (by default this process, with a token of its own).
        lease_s: how long a claim holds without renewal (:mod:`sentient.store.lease`).
    """

    def __init__(
        self, database: Database, results_dir: Path, *, lease_s: float = DEFAULT_LEASE_S, owner: Owner | None = None
    ) -> None:
        if lease_s <= 0:
            raise StoreError(f"the lease must be longer than 0 s, not {lease_s}")
        self.results_dir = Path(results_dir)
        self.location = database.location  # the file, or the URL without its password
        self.lease_s = lease_s
        self.owner = owner or Owner.local()
        self._db: Database | None = database
        self._dialect = database.dialect
        self._project_select = _PROJECT_SELECT.format(live=database.dialect.live_totals, now=database.dialect.now)
        self._lock = threading.RLock()

    @classmethod
    def open(
        cls, results_dir: Path, database_url: str | None = None, *, lease_s: float = DEFAULT_LEASE_S
    ) -> ProjectStore:
        """The store of a results folder: ``<results_dir>/sentient.db`` (``project_results/`` by default).

        With ``database_url`` (``SENTIENT_DATABASE_URL``, a ``postgresql://`` URL) the projects live
        in that PostgreSQL database instead, shared by every process given the same URL; their files
        (reports, traces) stay under ``results_dir`` either way.

        Raises:
            StoreError: the file cannot be opened, or the URL is malformed or its server unreachable.
        """
        results_dir = Path(results_dir)
        if database_url:
            from sentient.store.postgres import PostgresDatabase  # psycopg is loaded only when asked for

            return cls(PostgresDatabase(database_url), results_dir, lease_s=lease_s)
        return cls(SQLiteDatabase(results_dir / DB_NAME), results_dir, lease_s=lease_s)

    @classmethod
    def in_memory(cls) -> ProjectStore:
        """A store that lives and dies with this object: nothing is written to disk."""
        return cls(SQLiteDatabase(Path(_IN_MEMORY)), Path(_IN_MEMORY).parent)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> ProjectStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def project_dir(self, project_id: str) -> Path:
        """The folder of a project's files (reports, traces) in the results folder."""
        return self.results_dir / check_project_id(project_id)

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """Hold the lock and one write transaction; commit on success, roll back on error."""
        with self._lock:
            db = self._database()
            try:
                db.begin(write=True)
                yield db
                db.commit()
            except BaseException as exc:
                if db.in_transaction:
                    # A damaged file can refuse the rollback too; the first error is the one to report.
                    with contextlib.suppress(*db.errors):
                        db.rollback()
                if isinstance(exc, db.errors):
                    raise StoreError(db.describe(exc)) from exc
                raise

    @contextmanager
    def _reading(self) -> Iterator[Database]:
        """A read transaction: several queries see one consistent snapshot."""
        with self._lock:
            db = self._database()
            began = not db.in_transaction  # inside a write transaction, read within it
            failed = False
            try:
                if began:
                    db.begin(write=False)
                yield db
            except BaseException as exc:
                failed = True
                if isinstance(exc, db.errors):
                    raise StoreError(db.describe(exc)) from exc
                raise
            finally:
                if began and db.in_transaction:
                    try:
                        db.commit()
                    except db.errors as exc:
                        if not failed:  # else the read's own error is the one to report
                            raise StoreError(db.describe(exc)) from exc

    def check_integrity(self) -> None:
        """Raise StoreError if the database is damaged (SQLite's ``PRAGMA quick_check``); cheap next to a run."""
        with self._reading() as db:
            damage = db.damage()
        if damage is not None:
            raise StoreError(damage)

    def _database(self) -> Database:
        if self._db is None:
            raise StoreError(f"the project store {self.location} is closed")
        return self._db

    # -- projects --------------------------------------------------------------------------

    def create_project(
        self,
        project_id: str,
        goal: str,
        profile: str,
        settings: Mapping[str, Any],
        options: Mapping[str, Any] | None = None,
    ) -> ProjectRecord:
        """Store a new project with status ``created``; ``options`` say how it is run (model, docs…)."""
        check_project_id(project_id)
        now = time.time()
        with self.transaction() as conn:
            # One statement: of two processes creating the same id at once, the second inserts nothing.
            inserted = conn.execute(
                "INSERT INTO projects (project_id, goal, profile, status, settings, options, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project_id) DO NOTHING",
                (
                    project_id,
                    goal,
                    profile,
                    ProjectStatus.CREATED.value,
                    _dumps(dict(settings)),
                    _dumps(dict(options or {})),
                    now,
                    now,
                ),
            ).rowcount
            if not inserted:
                raise ProjectExistsError(project_id)
        return self.get_project(project_id)

    def claim(self, project_id: str, owner: Owner | None = None) -> ProjectRecord:
        """Mark the project ``running`` by ``owner`` (this store's by default) under a new lease,
        unless another owner holds it.

        Another owner holds it while its lease is live and, if it ran on this machine, its
        process too (see :func:`~sentient.store.lease.owner_alive`). The check and the claim are
        one conditional UPDATE: it changes the row only if the owner and its lease are still the
        ones read (compare-and-swap), so of two workers claiming at once exactly one wins; the
        other gets :class:`ProjectBusyError`. The owner claiming again renews its lease.
        """
        owner = owner or self.owner
        record = self.get_project(project_id)
        if record.status is ProjectStatus.RUNNING and record.owner_token != owner.token and owner_alive(record):
            raise ProjectBusyError(project_id, record.owner_pid, record.owner_host)
        same = self._dialect.same  # SQLite's IS: equal, or both NULL
        with self.transaction() as conn:
            claimed = conn.execute(
                "UPDATE projects SET status = ?, error = NULL, owner_pid = ?, owner_start = ?, owner_host = ?,"
                f" owner_space = ?, owner_token = ?, lease_expires_at = {self._dialect.now} + ?, updated_at = ?"
                f" WHERE project_id = ? AND status = ? AND owner_token {same} ? AND lease_expires_at {same} ?"
                f" AND owner_pid {same} ? AND owner_start {same} ?",
                (
                    ProjectStatus.RUNNING.value,
                    owner.pid,
                    owner.start,
                    owner.host,
                    owner.space,
                    owner.token,
                    self.lease_s,
                    time.time(),
                    project_id,
                    record.status.value,
                    record.owner_token,
                    record.lease_expires_at,
                    record.owner_pid,
                    record.owner_start,
                ),
            ).rowcount
        if not claimed:
            now = self.get_project(project_id)
            raise ProjectBusyError(project_id, now.owner_pid, now.owner_host)
        return self.get_project(project_id)

    def renew(self, project_id: str, owner: Owner | None = None) -> None:
        """Extend the lease of a project ``owner`` (this store's by default) runs, by :attr:`lease_s` from now.

        Raises:
            LeaseLostError: ``owner`` no longer holds it (another worker claimed it after the
                lease expired, or the project stopped running or was deleted).
        """
        owner = owner or self.owner
        check_project_id(project_id)
        with self.transaction() as conn:
            renewed = conn.execute(
                f"UPDATE projects SET lease_expires_at = {self._dialect.now} + ?"
                " WHERE project_id = ? AND status = ? AND owner_token = ?",
                (self.lease_s, project_id, ProjectStatus.RUNNING.value, owner.token),
            ).rowcount
        if not renewed:
            raise LeaseLostError(project_id, self._why_not_held(project_id))

    def release(
        self,
        project_id: str,
        status: ProjectStatus | str,
        error: str | None = None,
        *,
        owner: Owner | None = None,
        stats: Mapping[str, Any] | None = None,
        report: tuple[str, Mapping[str, Any] | None] | None = None,
        spent: Mapping[str, Any] | None = None,
    ) -> bool:
        """End ``owner``'s hold on the project (this store's by default), leaving it ``status``.

        The end of a run in one transaction: with the status, its ``stats``, its ``report``
        (Markdown, and the report as data) and what it ``spent``, when given. The owner and its
        lease are cleared (its host and pid stay, as who ran it last). Returns False, changing
        nothing, when ``owner`` no longer holds it: the worker that took it over records its end.
        """
        owner = owner or self.owner
        sql = "UPDATE projects SET status = ?, error = ?, owner_token = NULL, lease_expires_at = NULL, updated_at = ?"
        params: list[Any] = [project_status(status).value, error, time.time()]
        if stats is not None:
            sql, params = sql + ", stats = ?", [*params, _dumps(dict(stats))]
        if report is not None:
            markdown, data = report
            sql, params = sql + ", report_markdown = ?, report_json = ?", [*params, markdown, _json_or_null(data)]
        if spent is not None:
            sql, params = sql + ", spent = ?", [*params, _dumps(dict(spent))]
        check_project_id(project_id)
        with self.transaction() as conn:
            released = conn.execute(
                sql + " WHERE project_id = ? AND owner_token = ?", (*params, project_id, owner.token)
            )
        return bool(released.rowcount)

    def holds(self, record: ProjectRecord, owner: Owner | None = None) -> bool:
        """Whether ``owner`` (this store's by default) is the one that claimed the project and runs it."""
        owner = owner or self.owner
        return record.status is ProjectStatus.RUNNING and record.owner_token == owner.token

    def _why_not_held(self, project_id: str) -> str:
        try:
            record = self.get_project(project_id)
        except ProjectNotFoundError:
            return "it was deleted"
        if record.status is not ProjectStatus.RUNNING:
            return f"it is {record.status.value} now"
        return f"process {record.owner} claimed it after this process's lease expired"

    def set_options(self, project_id: str, options: Mapping[str, Any]) -> None:
        self._update(project_id, "UPDATE projects SET options = ?", [_dumps(dict(options))])

    def set_spent(self, project_id: str, spent: Mapping[str, Any]) -> None:
        self._update(project_id, "UPDATE projects SET spent = ?", [_dumps(dict(spent))])

    def get_project(self, project_id: str) -> ProjectRecord:
        check_project_id(project_id)
        with self._reading() as conn:
            row = conn.execute(self._project_select + " WHERE p.project_id = ?", (project_id,)).fetchone()
        if row is None:
            raise ProjectNotFoundError(project_id)
        return record_from_row(row)

    def list_projects(self) -> list[ProjectRecord]:
        """Every project, newest first."""
        with self._reading() as conn:
            rows = conn.execute(self._project_select + " ORDER BY p.created_at DESC, p.rowid DESC").fetchall()
        return [record_from_row(row) for row in rows]

    def projects_with_option(self, key: str, value: str) -> list[ProjectRecord]:
        """The projects whose options hold ``key: value``, oldest first."""
        sql = f"{self._project_select} WHERE {self._dialect.option} = ? ORDER BY p.created_at, p.rowid"
        with self._reading() as conn:
            rows = conn.execute(sql, (key, value)).fetchall()
        return [record_from_row(row) for row in rows]

    def set_status(
        self, project_id: str, status: ProjectStatus | str, error: str | None = None, *, owner: Owner | None = None
    ) -> bool:
        """Set the status and the error (``None`` clears it) and clear the claim; returns whether it did.

        With ``owner``, only unless another owner holds the project (it is held by ``owner`` or by
        none): a worker recording how its run was stopped never overwrites the worker that took the
        project over. A run ends with :meth:`release`; ``running`` is set by :meth:`claim` only.
        """
        value = project_status(status).value
        if value == ProjectStatus.RUNNING.value:
            raise StoreError(f"project '{project_id}': a project is marked running by claiming it")
        sql = "UPDATE projects SET status = ?, error = ?, owner_token = NULL, lease_expires_at = NULL, updated_at = ?"
        params: list[Any] = [value, error, time.time()]
        check_project_id(project_id)
        with self.transaction() as conn:
            where, args = " WHERE project_id = ?", [project_id]
            if owner is not None:
                where, args = where + " AND (owner_token IS NULL OR owner_token = ?)", [*args, owner.token]
            if conn.execute(sql + where, (*params, *args)).rowcount:
                return True
            if not _exists(conn, project_id):
                raise ProjectNotFoundError(project_id)
        return False

    def set_stats(self, project_id: str, stats: Mapping[str, Any]) -> None:
        self._update(project_id, "UPDATE projects SET stats = ?, updated_at = ?", [_dumps(dict(stats)), time.time()])

    def set_report(self, project_id: str, markdown: str, data: Mapping[str, Any] | None = None) -> None:
        """Store the report's Markdown and, when given, the report as data (a JSON object)."""
        sql = "UPDATE projects SET report_markdown = ?, report_json = ?, updated_at = ?"
        self._update(project_id, sql, [markdown, _json_or_null(data), time.time()])

    def get_report(self, project_id: str) -> str | None:
        """The stored report Markdown, or None before the run stored one."""
        check_project_id(project_id)
        with self._reading() as conn:
            row = conn.execute("SELECT report_markdown FROM projects WHERE project_id = ?", (project_id,)).fetchone()
        if row is None:
            raise ProjectNotFoundError(project_id)
        return row[0]

    def get_report_data(self, project_id: str) -> dict[str, Any] | None:
        """The stored report as data, or None before the run stored one (or when it stored only Markdown)."""
        check_project_id(project_id)
        with self._reading() as conn:
            row = conn.execute("SELECT report_json FROM projects WHERE project_id = ?", (project_id,)).fetchone()
        if row is None:
            raise ProjectNotFoundError(project_id)
        return None if row[0] is None else dict(json.loads(row[0]))

    def delete_project(self, project_id: str) -> None:
        """Delete the project and (by cascade) its nodes, history, calls, knowledge and reviews."""
        check_project_id(project_id)
        with self.transaction() as conn:
            if conn.execute("DELETE FROM projects WHERE project_id = ?", (project_id,)).rowcount == 0:
                raise ProjectNotFoundError(project_id)

    def reset_project(self, project_id: str) -> None:
        """Forget a project's run (graph, calls, knowledge, reviews, report, stats) to run it from scratch."""
        check_project_id(project_id)
        with self.transaction() as conn:
            if not _exists(conn, project_id):
                raise ProjectNotFoundError(project_id)
            for table in ("nodes", "status_changes", "calls", "knowledge", "reviews"):
                conn.execute(f"DELETE FROM {table} WHERE project_id = ?", (project_id,))
            conn.execute(
                "UPDATE projects SET status = ?, error = NULL, stats = '{}', report_markdown = NULL,"
                " report_json = NULL, updated_at = ? WHERE project_id = ?",
                (ProjectStatus.CREATED.value, time.time(), project_id),
            )

    def stale_running(self) -> list[ProjectRecord]:
        """Projects marked running whose owner no longer holds them: its lease expired, or its process
        on this machine is gone (to take over and resume)."""
        with self._reading() as conn:
            rows = conn.execute(
                self._project_select + " WHERE p.status = ? ORDER BY p.created_at", (ProjectStatus.RUNNING.value,)
            ).fetchall()
        return [record for record in map(record_from_row, rows) if not owner_alive(record)]

    def _update(self, project_id: str, sql: str, params: list[Any]) -> None:
        check_project_id(project_id)
        with self.transaction() as conn:
            if conn.execute(sql + " WHERE project_id = ?", (*params, project_id)).rowcount == 0:
                raise ProjectNotFoundError(project_id)

    # -- graph and traces ------------------------------------------------------------------

    def load_graph(self, project_id: str) -> TaskGraph:
        """The stored task graph, each node with its status history."""
        check_project_id(project_id)
        with self._reading() as conn:
            if not _exists(conn, project_id):
                raise ProjectNotFoundError(project_id)
            rows = conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE project_id = ? ORDER BY seq", (project_id,)
            ).fetchall()
            changes = conn.execute(
                "SELECT task_id, new, at FROM status_changes WHERE project_id = ? ORDER BY id", (project_id,)
            ).fetchall()
        history: dict[str, list[StatusChange]] = {}
        for task_id, status, at in changes:
            history.setdefault(task_id, []).append(StatusChange(status=TaskStatus(status), at=at))
        return TaskGraph.from_nodes([node_from_row(row, history.get(row["task_id"], [])) for row in rows])

    def node(self, project_id: str, task_id: str) -> TaskNode:
        """One stored node, with its history and children."""
        check_project_id(project_id)
        with self._reading() as conn:
            row = conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE project_id = ? AND task_id = ?", (project_id, task_id)
            ).fetchone()
            if row is None:
                raise (
                    NodeNotFoundError(project_id, task_id)
                    if _exists(conn, project_id)
                    else ProjectNotFoundError(project_id)
                )
            changes = conn.execute(
                "SELECT new, at FROM status_changes WHERE project_id = ? AND task_id = ? ORDER BY id",
                (project_id, task_id),
            ).fetchall()
            children = conn.execute(
                "SELECT task_id FROM nodes WHERE project_id = ? AND parent_id = ? ORDER BY seq", (project_id, task_id)
            ).fetchall()
        node = node_from_row(row, [StatusChange(status=TaskStatus(s), at=at) for s, at in changes])
        node.children = [c[0] for c in children]
        return node

    def calls(self, project_id: str, task_id: str | None = None) -> list[dict[str, Any]]:
        """Agent calls (the AgentCall shape plus ``task_id``), oldest first; those of removed nodes too."""
        check_project_id(project_id)
        sql, params = f"SELECT {_CALL_COLUMNS} FROM calls WHERE project_id = ?", [project_id]
        if task_id is not None:
            sql, params = sql + " AND task_id = ?", [*params, task_id]
        with self._reading() as conn:
            rows = conn.execute(sql + " ORDER BY id", params).fetchall()
        out = []
        for row in rows:
            call = dict(row)
            call["context"] = json.loads(call["context"])
            call["tool_calls"] = json.loads(call["tool_calls"])
            call["cached"] = bool(call["cached"])
            out.append(call)
        return out

    # -- knowledge -------------------------------------------------------------------------

    def add_knowledge(self, project_id: str, task_id: str, goal: str, result: str, sources: Sequence[str]) -> None:
        """Record what a DONE task learned (``sources`` as refs), replacing an earlier entry for it."""
        check_project_id(project_id)
        with self.transaction() as conn:
            # Delete, then insert: a replaced entry moves to the end, as it finished last.
            conn.execute("DELETE FROM knowledge WHERE project_id = ? AND task_id = ?", (project_id, task_id))
            conn.execute(
                "INSERT INTO knowledge (project_id, task_id, goal, result, sources) VALUES (?, ?, ?, ?, ?)",
                (project_id, task_id, goal, result, _dumps(list(sources))),
            )

    def forget_knowledge(self, project_id: str, task_ids: Collection[str]) -> None:
        """Delete the entries of ``task_ids`` (those without one are skipped)."""
        check_project_id(project_id)
        with self.transaction() as conn:
            conn.execute(
                f"DELETE FROM knowledge WHERE project_id = ? AND task_id IN ({self._dialect.json_values})",
                (project_id, _dumps(list(task_ids))),
            )

    def forget_reviews(self, project_id: str, task_ids: Collection[str]) -> None:
        """Delete the plan reviews of ``task_ids`` (a task planned again is reviewed afresh)."""
        check_project_id(project_id)
        with self.transaction() as conn:
            conn.execute(
                f"DELETE FROM reviews WHERE project_id = ? AND task_id IN ({self._dialect.json_values})",
                (project_id, _dumps(list(task_ids))),
            )

    def knowledge(self, project_id: str, task_ids: Collection[str] | None = None) -> list[dict[str, Any]]:
        """What DONE tasks learned: ``{task_id, goal, result, sources}`` (source refs), in the order they
        finished; only the entries of ``task_ids`` when given."""
        check_project_id(project_id)
        sql, params = "SELECT task_id, goal, result, sources FROM knowledge WHERE project_id = ?", [project_id]
        if task_ids is not None:
            sql, params = sql + f" AND task_id IN ({self._dialect.json_values})", [*params, _dumps(list(task_ids))]
        with self._reading() as conn:
            rows = conn.execute(sql + " ORDER BY rowid", params).fetchall()
        return [{**dict(row), "sources": json.loads(row["sources"])} for row in rows]

    # -- reviews ---------------------------------------------------------------------------

    def add_review(self, review: Mapping[str, Any]) -> None:
        """Store a pending review (the Review shape; ``created_at`` defaults to now)."""
        try:
            new = NewReview.model_validate(dict(review))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            raise StoreError(f"invalid review: {where}: {error['msg']}") from exc
        check_project_id(new.project_id)
        with self.transaction() as conn:
            if not _exists(conn, new.project_id):
                raise ProjectNotFoundError(new.project_id)
            inserted = conn.execute(
                f"INSERT INTO reviews ({_REVIEW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL, ?, ?, ?)"
                " ON CONFLICT (review_id) DO NOTHING",
                (
                    new.review_id,
                    new.project_id,
                    new.task_id,
                    new.round,
                    new.goal,
                    new.layer,
                    _dumps(new.plan),
                    new.context,
                    new.status,
                    new.created_at if new.created_at is not None else time.time(),
                    new.deadline,
                    new.kind,
                    _dumps(new.tool_call) if new.tool_call is not None else None,
                ),
            ).rowcount
            if not inserted:
                raise StoreError(f"a review '{new.review_id}' already exists")

    def get_review(self, review_id: str) -> dict[str, Any]:
        with self._reading() as conn:
            row = conn.execute(f"SELECT {_REVIEW_COLUMNS} FROM reviews WHERE review_id = ?", (review_id,)).fetchone()
        if row is None:
            raise ReviewNotFoundError(review_id)
        return review_from_row(row)

    def find_review(self, project_id: str, task_id: str, round: int) -> dict[str, Any] | None:
        """The latest review of a node's plan round (to pick a pending one up again after a restart)."""
        with self._reading() as conn:
            row = conn.execute(
                f"SELECT {_REVIEW_COLUMNS} FROM reviews WHERE project_id = ? AND task_id = ? AND round = ?"
                " ORDER BY created_at DESC, rowid DESC LIMIT 1",
                (project_id, task_id, round),
            ).fetchone()
        return None if row is None else review_from_row(row)

    def pending_reviews(self, project_id: str | None = None) -> list[dict[str, Any]]:
        """Reviews waiting for an answer, oldest first (of one project, or of all)."""
        sql, params = f"SELECT {_REVIEW_COLUMNS} FROM reviews WHERE status = 'pending'", []
        if project_id is not None:
            sql, params = sql + " AND project_id = ?", [project_id]
        with self._reading() as conn:
            rows = conn.execute(sql + " ORDER BY created_at, rowid", params).fetchall()
        return [review_from_row(row) for row in rows]

    def reviews(self, project_id: str, task_id: str | None = None) -> list[dict[str, Any]]:
        """Every review of a project (or of one node), answered ones included, oldest first."""
        sql, params = f"SELECT {_REVIEW_COLUMNS} FROM reviews WHERE project_id = ?", [project_id]
        if task_id is not None:
            sql, params = sql + " AND task_id = ?", [*params, task_id]
        with self._reading() as conn:
            rows = conn.execute(sql + " ORDER BY created_at, rowid", params).fetchall()
        return [review_from_row(row) for row in rows]

    def answer_review(self, review_id: str, decision: Mapping[str, Any]) -> dict[str, Any]:
        """Record the decision of a pending review; returns the answered review.

        Raises:
            ReviewNotFoundError: no such review.
            ReviewAlreadyAnsweredError: it was answered before (the first answer stands).
        """
        with self.transaction() as conn:
            updated = conn.execute(
                "UPDATE reviews SET status = 'answered', decision = ?, answered_at = ?"
                " WHERE review_id = ? AND status = 'pending'",
                (_dumps(dict(decision)), time.time(), review_id),
            ).rowcount
            if not updated:
                if conn.execute("SELECT 1 FROM reviews WHERE review_id = ?", (review_id,)).fetchone():
                    raise ReviewAlreadyAnsweredError(review_id)
                raise ReviewNotFoundError(review_id)
        return self.get_review(review_id)


# -- helpers -------------------------------------------------------------------------------


def _exists(conn: Database, project_id: str) -> bool:
    return conn.execute("SELECT 1 FROM projects WHERE project_id = ?", (project_id,)).fetchone() is not None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _json_or_null(value: Mapping[str, Any] | None) -> str | None:
    return None if value is None else _dumps(dict(value))

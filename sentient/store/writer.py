"""StoreWriter: an event subscriber that persists a run to the project store as it happens.

Subscribers run on the engine's event loop, so :meth:`StoreWriter.__call__` does the least it
can: it appends the event (immutable, with the snapshot of the node it concerns) to a queue, no
JSON, no SQL. A background thread drains the queue and writes each batch in one transaction,
typically within a few milliseconds of the event. The writer reads nothing but events: a node's
row is its latest snapshot, counters included as totals, so every agent call is counted once.

What a DONE node learned (its knowledge entry, read back by
:class:`sentient.context.knowledge.KnowledgeStore`) is written in the same transaction as the
status that made it DONE, so a killed process never leaves one without the other; the run reads
its entries from memory, so none waits for the write.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any

from loguru import logger

from sentient.events import AgentCallFinished, Event, NodeCreated, NodeSnapshot, NodesRemoved, NodeStatusChanged
from sentient.graph.node import Source
from sentient.graph.status import TaskStatus
from sentient.store.database import Database
from sentient.store.errors import LeaseLostError, StoreError
from sentient.store.lease import Owner
from sentient.store.project_store import ProjectStore
from sentient.store.records import check_project_id

_CREATED, _STATUS, _REMOVED, _CALL, _FLUSH, _STOP = range(6)
_KIND_NAMES = ("NodeCreated", "NodeStatusChanged", "NodesRemoved", "AgentCallFinished", "flush", "stop")
_FLUSH_POLL_S = 0.05

_ROWS_PER_STATEMENT = 400  # well under SQLite's variable and compound-select limits
_YIELD_EVERY = 200  # events turned into rows between two releases of the GIL

# Each batch is written with a handful of set-based statements (multi-row INSERT, UPDATE … FROM
# VALUES) rather than one statement per event: SQLite does the work in one step per statement,
# and the writer thread takes the GIL back (from the engine's thread) once per step.
_NODE_INSERT = (
    "INSERT INTO nodes (project_id, task_id, seq, parent_id, goal, task_type, node_type, layer, depends_on,"
    " status, warnings, created_at)",
    12,
    # A node announced again (a resumed run) keeps its place, result and counters.
    " ON CONFLICT (project_id, task_id) DO UPDATE SET parent_id = excluded.parent_id, goal = excluded.goal,"
    " task_type = excluded.task_type, node_type = excluded.node_type, layer = excluded.layer,"
    " depends_on = excluded.depends_on, status = excluded.status, warnings = excluded.warnings",
)
_CHANGE_INSERT = ("INSERT INTO status_changes (project_id, task_id, old, new, at, error)", 6, "")
_KNOWLEDGE_INSERT = ("INSERT INTO knowledge (project_id, task_id, goal, result, sources)", 5, "")
_CALL_INSERT = (
    "INSERT INTO calls (project_id, task_id, role, agent, model, prompt, context, response, error, attempts,"
    " input_tokens, output_tokens, cost_usd, cached, tool_calls, started_at, latency_s)",
    17,
    "",
)
# A node's row takes its latest snapshot as is: counters are the node's totals (the engine counts
# each call once, on the node), never increments to add up.
_NODE_UPDATE = (
    "UPDATE nodes SET status = v.column2, node_type = v.column3, error = v.column4, result = v.column5,"
    " sources = v.column6, warnings = v.column7, replans = v.column8, agent_calls = v.column9,"
    " input_tokens = v.column10, output_tokens = v.column11, cost_usd = v.column12, goal = v.column13,"
    " restates = v.column14, answered_from_memory = v.column15"
    " FROM (VALUES {rows}) AS v WHERE nodes.project_id = ? AND nodes.task_id = v.column1",
    15,
)


class StoreWriterError(StoreError):
    """Events that could not be persisted (raised by :meth:`StoreWriter.flush` and ``close``)."""

    def __init__(self, project_id: str, errors: list[BaseException]) -> None:
        self.project_id = project_id
        self.errors = errors
        super().__init__(f"project '{project_id}': {len(errors)} event(s) could not be persisted; first: {errors[0]}")


class StoreWriter:
    """Persists every node, status change, removal and agent call of one run.

    Args:
        store: the project store (the project must exist in it).
        project_id: the project the events belong to.
        batch_size: most events written in one transaction.
        linger_s: how long the thread waits, once woken, for more events to share the
            transaction.
        commit_interval_s: the least time between two transactions. An event is committed
            within about ``max(linger_s, commit_interval_s)`` plus the write itself; an idle
            writer commits a lone event after ``linger_s``.
        owner: the owner whose claim the run holds (fencing): each transaction first checks
            that ``owner`` still holds the project, in the same transaction, and once it does
            not (another worker took the project over) nothing more is written.

    Call :meth:`close` when the run ends (it flushes); the thread is a daemon, so what is still
    queued when a process exits without closing is lost.
    """

    def __init__(
        self,
        store: ProjectStore,
        project_id: str,
        *,
        batch_size: int = 2000,
        linger_s: float = 0.002,
        commit_interval_s: float = 0.01,
        owner: Owner | None = None,
    ) -> None:
        self.project_id = check_project_id(project_id)
        self._store = store
        self._batch_size = batch_size
        self._linger_s = linger_s
        self._commit_interval_s = commit_interval_s
        self._owner = owner
        self._fenced = False
        self._hurry = threading.Event()
        self._next_seq: int | None = None  # this writer numbers the nodes it inserts
        self._queue: deque[tuple[Any, ...]] = deque()
        self._wake = threading.Event()
        self._errors: list[BaseException] = []
        self._errors_lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"store-writer-{project_id}", daemon=True)
        self._thread.start()

    # -- the loop side (cheap) -------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        item: tuple[Any, ...]
        # Events are immutable: the writer thread reads them as they are.
        if isinstance(event, NodeStatusChanged):  # the most frequent first
            item = (_STATUS, event)
        elif isinstance(event, AgentCallFinished):
            item = (_CALL, event)
        elif isinstance(event, NodeCreated):
            item = (_CREATED, event)
        elif isinstance(event, NodesRemoved):
            item = (_REMOVED, event)
        else:
            return
        if self._closed:
            raise StoreWriterError(self.project_id, [RuntimeError(f"writer closed; {type(event).__name__} dropped")])
        self._queue.append(item)
        if not self._wake.is_set():
            self._wake.set()

    # -- the caller side -------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Block until every event queued so far is committed.

        Raises:
            StoreWriterError: events failed to persist since the last flush (each is logged too).
            TimeoutError: not committed within ``timeout`` seconds.
        """
        if self._thread.is_alive():
            done = threading.Event()
            self._queue.append((_FLUSH, done))
            self._wake.set()
            self._hurry.set()
            deadline = None if timeout is None else time.monotonic() + timeout
            while not done.wait(_FLUSH_POLL_S) and self._thread.is_alive():
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"store writer of '{self.project_id}' did not flush within {timeout}s")
        self._raise_errors()
        if self._queue and not self._thread.is_alive():
            raise StoreWriterError(
                self.project_id, [RuntimeError(f"writer thread stopped with {len(self._queue)} event(s) unwritten")]
            )

    def close(self) -> None:
        """Write what is queued, stop the thread, and raise if anything failed to persist."""
        if not self._closed:
            self._closed = True
            self._queue.append((_STOP,))
            self._wake.set()
            self._hurry.set()
            self._thread.join()
        self._raise_errors()

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _raise_errors(self) -> None:
        with self._errors_lock:
            errors, self._errors = self._errors, []
        if errors:
            raise StoreWriterError(self.project_id, errors) from errors[0]

    # -- the writer thread -----------------------------------------------------------------

    def _run(self) -> None:
        stop = False
        last_commit = 0.0
        while not stop:
            self._wake.wait()
            # Wait a little so a burst of events shares one transaction, and keep commits at
            # least `commit_interval_s` apart: each statement hands the GIL back and forth with
            # the engine's thread, so fewer, larger transactions cost the engine less.
            delay = max(self._linger_s, last_commit + self._commit_interval_s - time.monotonic())
            if delay > 0:
                self._hurry.wait(delay)  # a flush or close cuts the wait short
            self._hurry.clear()
            # Clear before draining: an event appended from now on either is drained below or
            # finds the flag clear and sets it again.
            self._wake.clear()
            while self._queue:
                batch: list[tuple[Any, ...]] = []
                done: list[threading.Event] = []
                while self._queue and len(batch) < self._batch_size:
                    item = self._queue.popleft()
                    if item[0] == _FLUSH:
                        done.append(item[1])
                    elif item[0] == _STOP:
                        stop = True
                    else:
                        batch.append(item)
                try:
                    self._write(batch)
                except BaseException as exc:  # a bug here must not kill the thread silently
                    self._record(exc, None)
                for event in done:
                    event.set()
            last_commit = time.monotonic()

    def _write(self, batch: list[tuple[Any, ...]]) -> None:
        if not batch or self._fenced:  # another worker holds the project: it writes, this run does not
            return
        try:
            self._commit(batch)
        except LeaseLostError as exc:
            self._fenced = True
            self._record(exc, None)
        except Exception as exc:
            self._next_seq = None  # the rolled-back transaction may have used some
            if len(batch) == 1:
                self._record(exc, batch[0])
                return
            # One bad event must not cost the batch: write them one by one, keep what can be kept.
            for item in batch:
                if self._fenced:
                    return
                try:
                    self._commit([item])
                except LeaseLostError as lost:
                    self._fenced = True
                    self._record(lost, None)
                except Exception as item_exc:
                    self._next_seq = None
                    self._record(item_exc, item)

    def _record(self, exc: BaseException, item: tuple[Any, ...] | None) -> None:
        what = _KIND_NAMES[item[0]] if item else "a batch"
        logger.opt(exception=exc).error("store writer: project {}: could not persist {}", self.project_id, what)
        with self._errors_lock:
            self._errors.append(exc)

    def _commit(self, items: list[tuple[Any, ...]]) -> None:
        """Write ``items`` in one transaction, in event order where order matters."""
        pid = self.project_id
        with self._store.transaction() as conn:
            if self._owner is not None:
                # Locks the row (PostgreSQL; SQLite's write transaction excludes every writer): no
                # claim can come between this check and the commit.
                row = conn.execute(
                    f"SELECT owner_token FROM projects WHERE project_id = ?{conn.dialect.lock_row}", (pid,)
                ).fetchone()
                if row is None or row[0] != self._owner.token:
                    raise LeaseLostError(pid, "another worker holds it now; its events are not written")
            if self._next_seq is None:
                row = conn.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM nodes WHERE project_id = ?", (pid,))
                self._next_seq = int(row.fetchone()[0])
            rows = _Rows(pid)
            for count, item in enumerate(items, start=1):
                if count % _YIELD_EVERY == 0:
                    time.sleep(0)  # hand the GIL to the engine's thread now and then
                kind = item[0]
                if kind == _CREATED:
                    rows.add_node(item[1].node, self._next_seq)
                    self._next_seq += 1
                elif kind == _STATUS:
                    rows.add_status(item[1])
                elif kind == _CALL:
                    rows.add_call(item[1])
                else:  # a removal: apply what came before, then it
                    rows.write(conn)
                    rows = _Rows(pid)
                    _write_removal(conn, pid, item)
            rows.write(conn)
            conn.execute("UPDATE projects SET updated_at = ? WHERE project_id = ?", (time.time(), pid))


class _Rows:
    """The rows of a run of events, grouped by statement (no removal among them)."""

    def __init__(self, project_id: str) -> None:
        self.project_id = project_id
        self.nodes: list[tuple[Any, ...]] = []
        self.updates: dict[str, NodeSnapshot] = {}  # the latest snapshot of each node wins
        self.changes: list[tuple[Any, ...]] = []
        self.calls: list[tuple[Any, ...]] = []
        # Each touched task's knowledge entry, in the order they finished; None: it has none now.
        self.knowledge: dict[str, tuple[Any, ...] | None] = {}

    def add_node(self, node: NodeSnapshot, seq: int) -> None:
        self.nodes.append(
            (
                self.project_id,
                node.task_id,
                seq,
                node.parent_id,
                node.goal,
                node.task_type,
                node.node_type,
                node.layer,
                _json_list(node.depends_on),
                node.status,
                _json_list(node.warnings),
                node.created_at,
            )
        )

    def add_status(self, event: NodeStatusChanged) -> None:
        node = event.node
        self.updates[node.task_id] = node
        self.changes.append((self.project_id, node.task_id, event.old, node.status, event.at, event.error))
        if event.learned:
            self.knowledge.pop(node.task_id, None)  # a task finished again moves to the end
            sources = _dumps([s.ref for s in node.sources])
            self.knowledge[node.task_id] = (self.project_id, node.task_id, node.goal, node.result, sources)
        elif event.old is TaskStatus.DONE:  # redone by a resumed run
            self.knowledge[node.task_id] = None

    def add_call(self, event: AgentCallFinished) -> None:
        if event.node is not None:
            self.updates[event.node.task_id] = event.node
        self.calls.append(
            (
                self.project_id,
                event.task_id,
                event.role,
                event.agent,
                event.model,
                event.prompt,
                _dumps(event.context),
                event.response,
                event.error,
                event.attempts,
                event.input_tokens,
                event.output_tokens,
                event.cost_usd,
                int(event.cached),
                _dumps(list(event.tool_calls)) if event.tool_calls else "[]",
                event.started_at,
                event.latency_s,
            )
        )

    def write(self, conn: Database) -> None:
        _insert(conn, _NODE_INSERT, self.nodes)
        _update(conn, _NODE_UPDATE, [_node_update(node) for node in self.updates.values()], self.project_id)
        _insert(conn, _CHANGE_INSERT, self.changes)
        _insert(conn, _CALL_INSERT, self.calls)
        if self.knowledge:
            # Delete, then insert: a replaced entry moves to the end, as it finished last.
            _delete(conn, "knowledge", self.project_id, list(self.knowledge))
            _insert(conn, _KNOWLEDGE_INSERT, [entry for entry in self.knowledge.values() if entry is not None])


def _node_update(node: NodeSnapshot) -> tuple[Any, ...]:
    return (
        node.task_id,
        node.status,
        node.node_type,
        node.error,
        node.result,
        _json_sources(node.sources),
        _json_list(node.warnings),
        node.replans,
        node.agent_calls,
        node.input_tokens,
        node.output_tokens,
        node.cost_usd,
        node.goal,
        node.restates,
        node.answered_from_memory,
    )


def _write_removal(conn: Database, pid: str, item: tuple[Any, ...]) -> None:
    for table in ("nodes", "status_changes", "knowledge"):
        _delete(conn, table, pid, item[1].task_ids)


def _delete(conn: Database, table: str, pid: str, task_ids: Sequence[str]) -> None:
    """Delete the rows of ``task_ids`` from ``table``."""
    for start in range(0, len(task_ids), _ROWS_PER_STATEMENT):
        chunk = task_ids[start : start + _ROWS_PER_STATEMENT]
        marks = ", ".join("?" * len(chunk))
        conn.execute(f"DELETE FROM {table} WHERE project_id = ? AND task_id IN ({marks})", (pid, *chunk))


def _insert(conn: Database, statement: tuple[str, int, str], rows: list[tuple[Any, ...]]) -> None:
    head, width, tail = statement
    for chunk, marks in _chunks(rows, width):
        conn.execute(f"{head} VALUES {marks}{tail}", list(chain.from_iterable(chunk)))


def _update(conn: Database, statement: tuple[str, int], rows: list[tuple[Any, ...]], pid: str) -> None:
    sql, width = statement
    for chunk, marks in _chunks(rows, width):
        conn.execute(sql.format(rows=marks), [*chain.from_iterable(chunk), pid])


def _chunks(rows: list[tuple[Any, ...]], width: int) -> Iterator[tuple[list[tuple[Any, ...]], str]]:
    row_marks = "(" + ", ".join("?" * width) + ")"
    for start in range(0, len(rows), _ROWS_PER_STATEMENT):
        chunk = rows[start : start + _ROWS_PER_STATEMENT]
        yield chunk, ", ".join([row_marks] * len(chunk))


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)  # one instance: json.dumps(**options) builds one per call


def _dumps(value: Any) -> str:
    return _ENCODER.encode(value)


def _json_list(values: tuple[str, ...] | list[str]) -> str:
    return _dumps(list(values)) if values else "[]"


def _json_sources(sources: tuple[Source, ...]) -> str:
    if not sources:
        return "[]"
    return _dumps([{"ref": s.ref, "title": s.title, "snippet": s.snippet, "verified": s.verified} for s in sources])

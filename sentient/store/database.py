"""The database under the project store: SQLite (embedded, the default) or PostgreSQL (shared).

The store's SQL is written once, with SQLite's ``?`` placeholders, in the SQL both databases
speak. A :class:`Database` runs it on one connection and owns only what differs: how a
transaction starts, how placeholders are written, the driver's exceptions, the integrity check,
and a few fragments of SQL (:class:`Dialect`). :class:`SQLiteDatabase` is here;
:class:`sentient.store.postgres.PostgresDatabase` is imported only when a URL asks for it.
"""

from __future__ import annotations

import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sentient.store.errors import StoreError
from sentient.store.schema import EmptyFileError, SchemaVersionError, connect


@dataclass(frozen=True)
class Dialect:
    """The SQL that differs between the two databases, as fragments the store's queries embed."""

    name: str
    # The totals over a project's nodes as one JSON array (text) of [nodes, agent_calls,
    # input_tokens, output_tokens, cost_usd, failed_nodes]; a subquery on ``nodes n``.
    live_totals: str
    # ``IN (…)`` over the values of one JSON array parameter (a list of any length in one ``?``).
    json_values: str
    # Equality that holds between two NULLs (``a <same> ?``).
    same: str
    # The database's clock, in seconds since the epoch (leases are timed by it, not by the workers').
    now: str
    # Appended to a SELECT of one row: keep others from changing it until the transaction ends.
    lock_row: str
    # A project's option (a top-level key of its ``options`` JSON, the key a parameter) as text.
    option: str


SQLITE = Dialect(
    name="sqlite",
    live_totals=(
        "json_array(COUNT(*), TOTAL(agent_calls), TOTAL(input_tokens), TOTAL(output_tokens), TOTAL(cost_usd),"
        " TOTAL(status = 'FAILED'))"
    ),
    json_values="SELECT value FROM json_each(?)",
    same="IS",
    now="((julianday('now') - 2440587.5) * 86400.0)",  # the machine's clock: SQLite has one machine
    lock_row="",  # a write transaction (BEGIN IMMEDIATE) already excludes every other writer
    option="json_extract(p.options, '$.' || ?)",
)


class Row(Protocol):
    """A result row, read by position or by column name (``sqlite3.Row`` and the PostgreSQL one)."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...

    def keys(self) -> list[str]: ...


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Database(ABC):
    """One connection to the store's database (the store serialises its use with a lock).

    Attributes:
        dialect: the SQL fragments of this database.
        location: what messages name: the file, or the URL without its password.
        errors: the driver's exception classes, which the store turns into ``StoreError``.
    """

    dialect: Dialect
    location: str
    errors: tuple[type[Exception], ...]

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement written with ``?`` placeholders."""

    @abstractmethod
    def begin(self, write: bool) -> None:
        """Start a transaction: a write one, or a read one that sees one consistent snapshot."""

    def commit(self) -> None:
        self.execute("COMMIT")

    def rollback(self) -> None:
        self.execute("ROLLBACK")

    @property
    @abstractmethod
    def in_transaction(self) -> bool: ...

    @abstractmethod
    def damage(self) -> str | None:
        """What is damaged in the database and what to do about it, or None (a quick check)."""

    @abstractmethod
    def describe(self, exc: Exception) -> str:
        """One line for a driver error (one of :attr:`errors`), saying what to do where it can."""

    @abstractmethod
    def close(self) -> None: ...


class SQLiteDatabase(Database):
    """The embedded store: one SQLite file in WAL mode (:mod:`sentient.store.schema`)."""

    dialect = SQLITE
    errors = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.location = str(path)
        try:
            self._conn = connect(path)
        except (SchemaVersionError, EmptyFileError) as exc:
            raise StoreError(str(exc)) from exc
        except sqlite3.Error as exc:
            raise StoreError(self.describe(exc)) from exc
        except OSError as exc:
            raise StoreError(f"cannot open the project store {path}: {exc}") from exc
        self._conn.row_factory = sqlite3.Row

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return self._conn.execute(sql, params)

    def begin(self, write: bool) -> None:
        # IMMEDIATE takes the write lock at once: a writer never fails half-way on a busy file.
        self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    def damage(self) -> str | None:
        problems = [row[0] for row in self._conn.execute("PRAGMA quick_check(3)").fetchall()]
        if problems == ["ok"]:
            return None
        return self.describe(sqlite3.DatabaseError(f"database disk image is malformed ({problems[0]})"))

    def describe(self, exc: Exception) -> str:
        text = str(exc)
        if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text):
            return (
                f"the project store {self.location} is damaged ({text}): move it away (a new one is created) or"
                " restore it from a backup; `sqlite3 FILE .recover` can save what is readable"
            )
        return f"project store {self.location}: {text}"

    def close(self) -> None:
        self._conn.close()

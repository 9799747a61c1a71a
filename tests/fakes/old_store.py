"""SQLite project store files as an older schema version left them, for migration tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sentient.store.schema import MIGRATIONS, _statements


def sqlite_store_at(path: Path, version: int, *rows: str) -> None:
    """Write a store file at ``path`` with the schema of ``version`` and the ``rows`` (INSERT statements)."""
    conn = sqlite3.connect(path)
    for step in range(1, version + 1):
        for statement in _statements(MIGRATIONS[step]):
            conn.execute(statement)
    for row in rows:
        conn.execute(row)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()

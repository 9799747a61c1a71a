"""Fixtures of the project tests: settings, a project store and a docs folder of the test's own,
on each backend of the store (SQLite, then PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.loops import loops_docs

from sentient.settings import Settings
from sentient.store import ProjectStore


@pytest.fixture
def settings(tmp_path: Path, database_url: str | None) -> Settings:
    """On each backend of the store: SQLite, then PostgreSQL."""
    return Settings(cache_dir=tmp_path / "cache", results_dir=tmp_path / "results", database_url=database_url)


@pytest.fixture
def store(settings: Settings) -> Iterator[ProjectStore]:
    store = ProjectStore.open(settings.results_dir, settings.database_url)
    yield store
    store.close()


@pytest.fixture
def docs(settings: Settings) -> Path:
    """The docs the agents of :mod:`fakes.loops` research."""
    return loops_docs(settings)

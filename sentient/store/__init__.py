"""Persistence: projects, task graphs, traces and plan reviews in SQLite (``project_results/sentient.db``),
or in PostgreSQL when ``SENTIENT_DATABASE_URL`` is set."""

from sentient.store.project_store import (
    PROJECT_ACTIVE,
    PROJECT_FINISHED,
    PROJECT_RESUMABLE,
    InvalidProjectIdError,
    NodeNotFoundError,
    ProjectBusyError,
    ProjectExistsError,
    ProjectNotFoundError,
    ProjectRecord,
    ProjectStatus,
    ProjectStore,
    ReviewAlreadyAnsweredError,
    ReviewNotFoundError,
    StoreError,
    check_project_id,
    owner_alive,
)
from sentient.store.writer import StoreWriter, StoreWriterError

__all__ = [
    "PROJECT_ACTIVE",
    "PROJECT_FINISHED",
    "PROJECT_RESUMABLE",
    "InvalidProjectIdError",
    "NodeNotFoundError",
    "ProjectBusyError",
    "ProjectExistsError",
    "ProjectNotFoundError",
    "ProjectRecord",
    "ProjectStatus",
    "ProjectStore",
    "ReviewAlreadyAnsweredError",
    "ReviewNotFoundError",
    "StoreError",
    "StoreWriter",
    "StoreWriterError",
    "check_project_id",
    "owner_alive",
]

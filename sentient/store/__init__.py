"""Persistence: projects, task graphs, traces and plan reviews in SQLite (``project_results/sentient.db``),
or in PostgreSQL when ``SENTIENT_DATABASE_URL`` is set."""

from sentient.store.errors import (
    InvalidProjectIdError,
    LeaseLostError,
    NodeNotFoundError,
    ProjectBusyError,
    ProjectExistsError,
    ProjectNotFoundError,
    ReviewAlreadyAnsweredError,
    ReviewNotFoundError,
    StoreError,
)
from sentient.store.lease import DEFAULT_LEASE_S, Heartbeat, Owner, owner_alive
from sentient.store.project_store import ProjectStore
from sentient.store.records import (
    PROJECT_ACTIVE,
    PROJECT_FINISHED,
    PROJECT_RESUMABLE,
    ProjectRecord,
    ProjectStatus,
    check_project_id,
)
from sentient.store.writer import StoreWriter, StoreWriterError

__all__ = [
    "DEFAULT_LEASE_S",
    "PROJECT_ACTIVE",
    "PROJECT_FINISHED",
    "PROJECT_RESUMABLE",
    "Heartbeat",
    "InvalidProjectIdError",
    "LeaseLostError",
    "NodeNotFoundError",
    "Owner",
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

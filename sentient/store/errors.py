"""The project store's exceptions: one base, :class:`StoreError`, whatever the database.

SentientError
└── StoreError                  a database problem or a bad request
    ├── InvalidProjectIdError
    ├── ProjectNotFoundError
    ├── ProjectExistsError
    ├── ProjectBusyError        another live process holds the project
    ├── LeaseLostError          a running project's lease passed to another worker
    ├── NodeNotFoundError
    ├── ReviewNotFoundError
    ├── ReviewAlreadyAnsweredError
    └── StoreWriterError        (sentient.store.writer) events that could not be persisted
"""

from __future__ import annotations

from sentient.exceptions import SentientError


class StoreError(SentientError):
    """The project store cannot do what was asked (a database problem or a bad request)."""


class InvalidProjectIdError(StoreError):
    def __init__(self, project_id: object) -> None:
        self.project_id = project_id
        super().__init__(
            f"invalid project id {project_id!r}: use 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit"
        )


class ProjectNotFoundError(StoreError):
    def __init__(self, project_id: str) -> None:
        self.project_id = project_id
        super().__init__(f"no project '{project_id}': see `sentient projects list` for the existing ones")


class ProjectExistsError(StoreError):
    def __init__(self, project_id: str) -> None:
        self.project_id = project_id
        super().__init__(f"a project '{project_id}' already exists")


class ProjectBusyError(StoreError):
    """Another live process holds the project (it claimed it first, and its lease is live)."""

    def __init__(self, project_id: str, owner_pid: int | None, host: str | None = None) -> None:
        self.project_id = project_id
        self.owner_pid = owner_pid
        self.host = host
        where = f" on {host}" if host else ""
        super().__init__(
            f"project '{project_id}' is already being run by process {owner_pid}{where}: wait for it to finish,"
            " or stop it (Ctrl-C in its terminal) and resume it then"
        )


class LeaseLostError(StoreError):
    """This worker no longer holds the project it runs: its lease expired and may have passed to another."""

    def __init__(self, project_id: str, why: str) -> None:
        self.project_id = project_id
        super().__init__(f"project '{project_id}' is no longer held by this process ({why}); the run stops here")


class NodeNotFoundError(StoreError):
    def __init__(self, project_id: str, task_id: str) -> None:
        self.project_id = project_id
        self.task_id = task_id
        super().__init__(f"project '{project_id}' has no task '{task_id}'")


class ReviewNotFoundError(StoreError):
    def __init__(self, review_id: str) -> None:
        self.review_id = review_id
        super().__init__(f"no review '{review_id}'")


class ReviewAlreadyAnsweredError(StoreError):
    def __init__(self, review_id: str) -> None:
        self.review_id = review_id
        super().__init__(f"review '{review_id}' was already answered")

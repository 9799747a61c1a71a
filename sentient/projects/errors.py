"""The errors of the project lifecycle: one vocabulary for the Python API, the CLI and the server.

The store's errors are reused as they are (an unknown project is
:class:`~sentient.store.ProjectNotFoundError` everywhere); this module adds what a project's
state forbids. The server maps each to one HTTP status (``server/errors.py``), the CLI to an
exit code::

    SentientError
    ├── ConfigError                   bad settings, profile or goal              -> 400 / exit 2
    │   ├── DocsNotAllowedError       a docs folder outside the allowed roots    -> 403 / exit 2
    │   ├── UnusablePlanError         a review answered with an unusable plan    -> 400 / exit 2
    │   ├── UnfitAnswerError          an answer its review's kind does not take  -> 400 / exit 2
    │   └── RerunRefusedError         a node that cannot be re-run so (the root)  -> 400 / exit 2
    ├── StoreError
    │   ├── InvalidProjectIdError     an id that cannot name a project           -> 404 / exit 2
    │   ├── ProjectNotFoundError                                                 -> 404 / exit 2
    │   ├── NodeNotFoundError         a task id the project does not have        -> 404 / exit 2
    │   ├── ReviewNotFoundError                                                  -> 404 / exit 2
    │   ├── ProjectExistsError                                                   -> 409 / exit 2
    │   ├── ProjectBusyError          another live process runs it               -> 409 / exit 2
    │   └── ReviewAlreadyAnsweredError  the first answer stands                  -> 409 / exit 2
    └── RunError
        └── ProjectStateError         the project's state forbids the request    -> 409 / exit 2
            ├── ProjectRunningError   it runs (here): execute, delete refused
            ├── ProjectNotRunningError  nothing to cancel (ProjectBusyError: another process runs it)
            ├── ProjectCompletedError   nothing to resume
            └── NoReportError         it has not run yet                         -> 404 / exit 2
"""

from __future__ import annotations

from sentient.exceptions import ConfigError, RunError
from sentient.store import (
    InvalidProjectIdError,
    NodeNotFoundError,
    ProjectBusyError,
    ProjectExistsError,
    ProjectNotFoundError,
    ReviewAlreadyAnsweredError,
    ReviewNotFoundError,
    StoreError,
)

__all__ = [
    "ConfigError",
    "DocsNotAllowedError",
    "InvalidProjectIdError",
    "NoReportError",
    "NodeNotFoundError",
    "ProjectBusyError",
    "ProjectCompletedError",
    "ProjectExistsError",
    "ProjectNotFoundError",
    "ProjectNotRunningError",
    "ProjectRunningError",
    "ProjectStateError",
    "RerunRefusedError",
    "ReviewAlreadyAnsweredError",
    "ReviewNotFoundError",
    "StoreError",
    "UnfitAnswerError",
    "UnusablePlanError",
]


class DocsNotAllowedError(ConfigError):
    """A docs folder the operator does not let clients use (outside every docs root, or none set)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, field="config.docs")

    def _render(self) -> str:
        return self.message


class UnusablePlanError(ConfigError):
    """A review answered with an edited plan that cannot run (bad indices, cycles, empty goals)."""

    def __init__(self, review_id: str, problems: list[str]) -> None:
        self.review_id = review_id
        self.problems = problems
        super().__init__("the edited plan cannot be used: " + "; ".join(problems), field="plan")

    def _render(self) -> str:
        return self.message


class RerunRefusedError(ConfigError):
    """A rerun that makes no sense: the root (the whole project), re-running a planned node, bad
    instructions."""

    def __init__(self, task_id: str, message: str, *, field: str = "node_id") -> None:
        self.task_id = task_id
        super().__init__(message, field=field)

    def _render(self) -> str:
        return self.message


class ProjectStateError(RunError):
    """The project's state does not allow what was asked; ``project_id`` names it."""

    def __init__(self, project_id: str, message: str) -> None:
        self.project_id = project_id
        super().__init__(message)


class ProjectRunningError(ProjectStateError):
    """The project is running (in this process, or it did not stop in time)."""

    def __init__(self, project_id: str, message: str | None = None) -> None:
        super().__init__(project_id, message or f"project '{project_id}' is already running.")


class ProjectNotRunningError(ProjectStateError):
    """A cancel for a project that is not running."""

    def __init__(self, project_id: str) -> None:
        super().__init__(project_id, f"project '{project_id}' is not running.")


class ProjectCompletedError(ProjectStateError):
    """A resume of a project that completed: there is nothing left to run."""

    def __init__(self, project_id: str, message: str | None = None) -> None:
        super().__init__(
            project_id, message or f"project '{project_id}' already completed; execute it to run it again."
        )


class NoReportError(ProjectStateError):
    """A report asked of a project that has not run yet."""

    def __init__(self, project_id: str) -> None:
        super().__init__(project_id, f"project '{project_id}' has no report yet: execute it first.")


class UnfitAnswerError(ConfigError):
    """A review answered with an action its kind does not take (a tool call is not modified)."""

    def __init__(self, review_id: str, message: str) -> None:
        self.review_id = review_id
        super().__init__(message, field="action")

"""The project lifecycle as one service: create, run, resume, re-run one node, ask a follow-up
question, cancel, delete, review answers, report, export, list.

No web or command-line code here: the Python API (:mod:`sentient.api`), the CLI and the server
are adapters over :class:`ProjectService`, and map :mod:`sentient.projects.errors` to what their
users see.
"""

from sentient.projects.errors import (
    DocsNotAllowedError,
    NoReportError,
    ProjectCompletedError,
    ProjectNotRunningError,
    ProjectRunningError,
    ProjectStateError,
    RerunRefusedError,
    UnusablePlanError,
)
from sentient.projects.ids import new_project_id
from sentient.projects.rerun import Rerun
from sentient.projects.researcher import Researcher, open_docs_index
from sentient.projects.reviews import Decision, Review, ReviewAnswer
from sentient.projects.run import (
    ProjectRun,
    RunOptions,
    RunResult,
    RunStats,
    RunStatus,
    ask_project,
    check_goal,
    rerun_project,
    resume_project,
    run_project,
)
from sentient.projects.service import DEFAULT_PROFILE, ProjectService
from sentient.projects.settings import merge_settings

__all__ = [
    "DEFAULT_PROFILE",
    "Decision",
    "DocsNotAllowedError",
    "NoReportError",
    "ProjectCompletedError",
    "ProjectNotRunningError",
    "ProjectRun",
    "ProjectRunningError",
    "ProjectService",
    "ProjectStateError",
    "Rerun",
    "RerunRefusedError",
    "Researcher",
    "Review",
    "ReviewAnswer",
    "RunOptions",
    "RunResult",
    "RunStats",
    "RunStatus",
    "UnusablePlanError",
    "ask_project",
    "check_goal",
    "merge_settings",
    "new_project_id",
    "open_docs_index",
    "rerun_project",
    "resume_project",
    "run_project",
]

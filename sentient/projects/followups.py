"""Follow-up questions: a question asked of a project that ran, researched as a child run.

A follow-up is a project of its own in the store, linked to the project it follows by its
options (``follows``), created with that project's profile, settings and options (docs, model,
offline, language). So its runs resume, keep budgets, write traces and events, and are cancelled
as any project's, and nothing the parent holds is touched. Its runs are seeded with what the
parent holds (:class:`~sentient.context.prior.PriorKnowledge`): the findings of its finished tasks
as context, and the passages they read, cited before anything is searched again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loguru import logger

from sentient.context.prior import PriorKnowledge
from sentient.exceptions import InvalidGoalError
from sentient.projects.errors import ProjectRunningError, ProjectStateError
from sentient.projects.ids import new_project_id
from sentient.projects.rerun import forgotten
from sentient.projects.settings import with_goal_language
from sentient.settings import EngineSettings
from sentient.store import ProjectNotFoundError, ProjectRecord, ProjectStatus, ProjectStore, owner_alive
from sentient.text import goal_problem

FOLLOWS = "follows"  # the options key of the project a follow-up follows
MAX_QUESTION_CHARS = 4000


def create_followup(store: ProjectStore, project_id: str, question: str) -> ProjectRecord:
    """Store a follow-up question of the project ``project_id`` as a new project (status ``created``)
    with the project's profile and settings (its language, else the question's) and options.

    ProjectNotFoundError, InvalidGoalError (an empty question), ProjectRunningError while a live
    process runs the project, ProjectStateError before its first run.
    """
    parent = store.get_project(project_id)
    text = check_question(question)
    check_can_follow(parent)
    settings = with_goal_language(EngineSettings.model_validate(parent.settings), text)
    options = followup_options(parent)
    return store.create_project(new_project_id(text), text, parent.profile, settings.model_dump(mode="json"), options)


def check_question(question: object) -> str:
    """The question, stripped; InvalidGoalError (one line, field ``question``) when it cannot be researched."""
    text = question.strip() if isinstance(question, str) else ""
    problem = goal_problem(text, "the question")
    if problem is not None:
        raise InvalidGoalError(problem, fix=None)
    if len(text) > MAX_QUESTION_CHARS:
        raise InvalidGoalError(f"the question is {len(text)} characters; at most {MAX_QUESTION_CHARS}.", fix=None)
    return text


def check_can_follow(record: ProjectRecord) -> None:
    """ProjectRunningError while a live process runs the project, ProjectStateError before its first run."""
    project_id = record.project_id
    if record.status is ProjectStatus.RUNNING and owner_alive(record):
        raise ProjectRunningError(
            project_id, f"project '{project_id}' is running: ask a follow-up question once it has ended."
        )
    if record.status is ProjectStatus.CREATED:
        raise ProjectStateError(project_id, f"project '{project_id}' has not run yet: execute it first.")


def followup_options(parent: ProjectRecord) -> dict[str, Any]:
    """How a follow-up of ``parent`` runs: the parent's options (its docs, model, offline), without
    its reruns and the overrides its resumes recorded, and the link to it."""
    options = {k: v for k, v in forgotten(parent.options).items() if k != "overrides"}
    return {**options, FOLLOWS: parent.project_id}


def follows(options: Mapping[str, Any]) -> str | None:
    """The project the project with these ``options`` follows up, if it is a follow-up."""
    parent = options.get(FOLLOWS)
    return parent if isinstance(parent, str) else None


def prior_knowledge(store: ProjectStore | None, options: Mapping[str, Any]) -> PriorKnowledge | None:
    """What the project a follow-up follows holds (None for any other project). A parent deleted
    since gives nothing: the follow-up is then researched from scratch."""
    parent = follows(options)
    if parent is None or store is None:
        return None
    try:
        graph = store.load_graph(parent)
    except ProjectNotFoundError:
        logger.warning("the project {} that this follow-up follows is gone: researching it from scratch", parent)
        return PriorKnowledge(parent, [], [])
    return PriorKnowledge.of(parent, graph)

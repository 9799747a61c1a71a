"""Plan review through the server: reviews persisted in the store, answered over REST or Socket.IO.

:class:`ReviewBroker` is shared by every project. The engine awaits
:meth:`ProjectReviewer.review_plan` on its loop; the review is stored (so it survives a
restart), announced with ``hitl_request`` to the project's room, and the coroutine waits for
:meth:`ReviewBroker.answer`, which any request thread may call. After a restart the engine asks
again for the same node and round: the stored review is found (``find_review``) and reused, and
an answer given in between is used at once.

Futures are created, resolved and dropped only on the engine loop thread.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from loguru import logger

from sentient.hitl.protocol import ReviewDecision, ReviewRequest
from sentient.settings import EngineSettings
from sentient.store import ProjectStore, ReviewAlreadyAnsweredError, ReviewNotFoundError

from .bridge import EngineLoop
from .errors import bad_request, conflict, not_found
from .events import Broadcaster, room_of
from .schemas import ReviewAnswer, decision_from_record, valid_review_id

REVIEW_KEYS = (
    "review_id",
    "project_id",
    "task_id",
    "goal",
    "layer",
    "round",
    "plan",
    "context",
    "created_at",
    "deadline",
    "status",
)


def review_json(row: Any) -> dict[str, Any]:
    """A stored review in the protocol's Review shape (plus ``decision`` once answered)."""
    data = row if isinstance(row, dict) else (row.to_dict() if hasattr(row, "to_dict") else dict(row))
    out = {key: data.get(key) for key in REVIEW_KEYS}
    if data.get("decision"):
        out["decision"] = data["decision"]
    return out


def _get_review(store: ProjectStore, review_id: str) -> dict[str, Any] | None:
    try:
        return review_json(store.get_review(review_id))
    except ReviewNotFoundError:
        return None


class ReviewBroker:
    """Pending reviews of every project, and the futures the engine awaits on them."""

    def __init__(self, store: ProjectStore, engine: EngineLoop, broadcaster: Broadcaster) -> None:
        self._store = store
        self._engine = engine
        self._broadcaster = broadcaster
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}  # loop thread only
        self._early: dict[str, dict[str, Any]] = {}  # answers that arrived before anyone waited

    def reviewer_for(self, project_id: str, settings: EngineSettings) -> ProjectReviewer:
        return ProjectReviewer(self, project_id, settings)

    # -- any thread ------------------------------------------------------------------------

    def answer(self, review_id: str, answer: ReviewAnswer, *, by: str) -> dict[str, Any]:
        """Record a decision and wake the run waiting on it; returns the answered review.

        Raises:
            ApiError: 404 unknown review, 409 already answered, 400 an unusable edited plan.
        """
        if not valid_review_id(review_id):
            raise not_found("review", review_id)
        review = _get_review(self._store, review_id)
        if review is None:
            raise not_found("review", review_id)
        if review["status"] != "pending":
            raise conflict(f"review '{review_id}' was already answered.")
        problems = answer.problems()
        if problems:
            raise bad_request("the edited plan cannot be used: " + "; ".join(problems), "invalid_plan")
        decision = {**answer.to_record(), "by": by, "answered_at": time.time()}
        try:
            answered = review_json(self._store.answer_review(review_id, decision))
        except ReviewAlreadyAnsweredError as exc:
            # Two answers racing: the store keeps the first; the second is a conflict, not a 500.
            raise conflict(f"review '{review_id}' was already answered.") from exc
        self._engine.call_soon(self._deliver, review_id, decision)
        self._announce_resolved(review["project_id"], review_id, answer.action)
        return answered

    def pending(self, project_id: str | None = None) -> list[dict[str, Any]]:
        return [review_json(r) for r in self._store.pending_reviews(project_id)]

    def _announce_resolved(self, project_id: str, review_id: str, action: str) -> None:
        self._broadcaster.emit(
            "hitl_resolved",
            {"project_id": project_id, "review_id": review_id, "action": action},
            room_of(project_id),
        )

    # -- engine loop thread --------------------------------------------------------------------

    def _deliver(self, review_id: str, decision: dict[str, Any]) -> None:
        future = self._waiting.pop(review_id, None)
        if future is not None and not future.done():
            future.set_result(decision)
        else:
            self._early[review_id] = decision

    async def wait(self, project_id: str, request: ReviewRequest, settings: EngineSettings) -> ReviewDecision:
        existing = await asyncio.to_thread(self._store.find_review, project_id, request.task_id, request.round)
        review = review_json(existing) if existing is not None else None
        if review is not None and review["status"] != "pending":
            self._early.pop(review["review_id"], None)
            decision = review.get("decision") or {}
            logger.info("project {}: review {} was answered while the run was down", project_id, review["review_id"])
            return decision_from_record(decision)
        if review is None:
            review = self._new_review(project_id, request, settings)
            await asyncio.to_thread(self._store.add_review, dict(review))
        review_id = review["review_id"]
        early = self._early.pop(review_id, None)
        if early is not None:
            return decision_from_record(early)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[review_id] = future
        self._broadcaster.emit("hitl_request", {"project_id": project_id, "review": review}, room_of(project_id))
        try:
            decision = await future
        except asyncio.CancelledError:
            self._waiting.pop(review_id, None)
            deadline = review.get("deadline")
            if deadline is not None and time.time() >= deadline - 0.5:
                # The engine's review timeout cancelled us: the review is no longer pending.
                await asyncio.shield(asyncio.to_thread(self._timed_out, review, settings))
            raise
        return decision_from_record(decision)

    def _new_review(self, project_id: str, request: ReviewRequest, settings: EngineSettings) -> dict[str, Any]:
        now = time.time()
        timeout = settings.review_timeout_s
        return {
            "review_id": uuid.uuid4().hex,
            "project_id": project_id,
            "task_id": request.task_id,
            "goal": request.goal,
            "layer": request.layer,
            "round": request.round,
            "plan": request.plan.model_dump(mode="json"),
            "context": getattr(request, "context", "") or "",
            "created_at": now,
            "deadline": now + timeout if timeout else None,
            "status": "pending",
        }

    def _timed_out(self, review: dict[str, Any], settings: EngineSettings) -> None:
        action = str(getattr(settings.review_timeout_action, "value", settings.review_timeout_action))
        decision: dict[str, Any] = {"action": action, "by": "timeout", "answered_at": time.time()}
        if action == "reject":
            decision["reason"] = f"no answer within {settings.review_timeout_s:g}s"
        try:
            self._store.answer_review(review["review_id"], decision)
        except Exception:
            logger.opt(exception=True).warning("could not record the timeout of review {}", review["review_id"])
            return
        self._announce_resolved(review["project_id"], review["review_id"], action)


class ProjectReviewer:
    """The :class:`~sentient.hitl.protocol.PlanReviewer` of one project."""

    def __init__(self, broker: ReviewBroker, project_id: str, settings: EngineSettings) -> None:
        self._broker = broker
        self._project_id = project_id
        self._settings = settings

    async def review_plan(self, request: ReviewRequest) -> ReviewDecision:
        return await self._broker.wait(self._project_id, request, self._settings)

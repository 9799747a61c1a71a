"""Review through the server (plans, and calls of tools marked ``confirm: true``): the engine's wait for
an answer, and its announcements.

:class:`ReviewBroker` is shared by every project. The engine awaits
:meth:`ProjectReviewer.review_plan` on its loop; the review is opened through the service (stored,
so it survives a restart; after one the engine asks again for the same node and round and finds
it), announced with ``hitl_request`` to the project's room, and the coroutine waits for
:meth:`ReviewBroker.answer`, which any request thread may call. What an answer may be, and that a
review takes one, is :class:`~sentient.projects.ProjectService`'s; waking the waiting coroutine
and telling the room (``hitl_resolved``) is what is left here. When another process (a worker,
another web process) runs the project, the stored answer's wake-up is forwarded to it through the
:class:`~sentient_server.relay.OwnerRelay`, whose handler calls :meth:`ReviewBroker.wake` there,
and that process tells the room, as it sends everything else of the run (relay.py, "Order").

Futures are created, resolved and dropped only on the engine loop thread.
"""

from __future__ import annotations

import asyncio
import time

from loguru import logger

from sentient.hitl.protocol import ReviewDecision, ReviewRequest
from sentient.projects import Decision, ProjectService, Review, ReviewAnswer
from sentient.settings import EngineSettings
from sentient.store import ProjectStatus

from .bridge import EngineLoop
from .events import Broadcaster, room_of
from .relay import OwnerRelay, ReviewAnswered
from .responses import ReviewRequested, ReviewResolved, ReviewResponse


class ReviewBroker:
    """The futures the engine awaits on pending reviews, and the announcements of every project's reviews."""

    def __init__(
        self,
        service: ProjectService,
        engine: EngineLoop,
        broadcaster: Broadcaster,
        relay: OwnerRelay | None = None,
    ) -> None:
        self._service = service
        self._engine = engine
        self._broadcaster = broadcaster
        self._relay = relay
        self._waiting: dict[str, asyncio.Future[Decision]] = {}  # loop thread only
        self._early: dict[str, Decision] = {}  # answers that arrived before anyone waited

    def reviewer_for(self, project_id: str, settings: EngineSettings) -> ProjectReviewer:
        return ProjectReviewer(self, project_id, settings)

    # -- any thread ------------------------------------------------------------------------

    def answer(self, review_id: str, answer: ReviewAnswer, *, by: str) -> ReviewResponse:
        """Record the answer (the service's errors: unknown review, already answered, unusable
        plan) and wake the run waiting on it; returns the answered review."""
        answered = self._service.answer_review(review_id, answer, by=by)
        if answered.decision is not None and not self._forward(answered):
            self._engine.call_soon(self._deliver, review_id, answered.decision)
            self._announce_resolved(answered.project_id, review_id, answer.action)
        return ReviewResponse.of(answered)

    def wake(self, review_id: str) -> None:
        """Wake the run waiting on ``review_id`` here with its stored answer (forwarded by another
        process), and announce the answer: the run's own process does, so ``hitl_resolved`` takes
        its place among the run's diffs for every client (a process's emits reach its own clients
        at once, ahead of the messages still on their way to it through Redis)."""
        review = self._service.review(review_id)
        if review.decision is not None:
            self._engine.call_soon(self._deliver, review_id, review.decision)
            self._announce_resolved(review.project_id, review_id, review.decision.action)

    def _forward(self, review: Review) -> bool:
        """Tell the live process that runs the review's project, when another one does (True)."""
        if self._relay is None:
            return False
        record = self._service.get(review.project_id)
        token = record.owner_token
        if record.status is not ProjectStatus.RUNNING or token is None or token == self._service.store.owner.token:
            return False
        return self._relay.forward(token, ReviewAnswered(project_id=review.project_id, review_id=review.review_id))

    def _announce_resolved(self, project_id: str, review_id: str, action: str) -> None:
        resolved = ReviewResolved(project_id=project_id, review_id=review_id, action=action)
        self._broadcaster.emit("hitl_resolved", resolved, room_of(project_id))

    # -- engine loop thread --------------------------------------------------------------------

    def _deliver(self, review_id: str, decision: Decision) -> None:
        future = self._waiting.pop(review_id, None)
        if future is not None and not future.done():
            future.set_result(decision)
        else:
            self._early[review_id] = decision

    async def wait(self, project_id: str, request: ReviewRequest, settings: EngineSettings) -> ReviewDecision:
        review = await asyncio.to_thread(self._service.open_review, project_id, request, settings.review_timeout_s)
        review_id = review.review_id
        answered = review.engine_decision()
        if answered is not None:
            self._early.pop(review_id, None)
            logger.info("project {}: review {} was answered while the run was down", project_id, review_id)
            return answered
        early = self._early.pop(review_id, None)
        if early is not None:
            return early.to_engine()
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self._waiting[review_id] = future
        announced = ReviewRequested(project_id=project_id, review=ReviewResponse.of(review))
        self._broadcaster.emit("hitl_request", announced, room_of(project_id))
        try:
            decision = await future
        except asyncio.CancelledError:
            self._waiting.pop(review_id, None)
            if review.deadline is not None and time.time() >= review.deadline - 0.5:
                # The engine's review timeout cancelled us: the review is no longer pending.
                await asyncio.shield(asyncio.to_thread(self._timed_out, review, settings))
            raise
        return decision.to_engine()

    def _timed_out(self, review: Review, settings: EngineSettings) -> None:
        action = settings.review_timeout_action.value
        reason = f"no answer within {settings.review_timeout_s:g}s" if action == "reject" else None
        try:
            self._service.answer_review(review.review_id, ReviewAnswer(action=action, reason=reason), by="timeout")
        except Exception:
            logger.opt(exception=True).warning("could not record the timeout of review {}", review.review_id)
            return
        self._announce_resolved(review.project_id, review.review_id, action)


class ProjectReviewer:
    """The :class:`~sentient.hitl.protocol.PlanReviewer` of one project."""

    def __init__(self, broker: ReviewBroker, project_id: str, settings: EngineSettings) -> None:
        self._broker = broker
        self._project_id = project_id
        self._settings = settings

    async def review_plan(self, request: ReviewRequest) -> ReviewDecision:
        return await self._broker.wait(self._project_id, request, self._settings)

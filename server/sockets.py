"""Socket.IO handlers (default namespace): connect, join/leave a project, execute, answer a review.

Every payload is validated; a problem is sent back to the sender as ``error {code, message}``
(and as the acknowledgement, for clients that use ``call``). Nothing is broadcast: events go to
the rooms of the projects a client joined. A handler's work (the store, the engine) runs on a
thread of the hub's pool (:mod:`sentient_server.hub`), never on the hub itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import request
from flask_socketio import SocketIO
from loguru import logger
from pydantic import BaseModel, ValidationError

from .auth import host_allowed, token_ok
from .errors import ApiError, as_api_error, bad_request, describe_validation
from .events import room_of
from .hub import Hub
from .responses import Ack
from .schemas import ExecuteTask, HitlResponse, JoinProject


def register(socketio: SocketIO, services: Any) -> None:
    config = services.config
    hub = services.hub

    @socketio.on("connect")
    def connect(auth: Any = None) -> None:
        if not host_allowed(config, request.host):
            raise ConnectionRefusedError("this server only accepts connections addressed to localhost")
        token = auth.get("token") if isinstance(auth, dict) else None
        if not token_ok(config, token):
            raise ConnectionRefusedError("unauthorized: connect with auth={'token': <SENTIENT_API_TOKEN>}")

    @socketio.on("join_project")
    def join_project(data: Any) -> dict[str, Any]:
        def handle(sid: str) -> Ack:
            body = _parse(JoinProject, data)
            services.runs.join(sid, body.project_id)
            return Ack(project_id=body.project_id)

        return _guarded(socketio, hub, handle)

    @socketio.on("leave_project")
    def leave_project(data: Any) -> dict[str, Any]:
        def handle(sid: str) -> Ack:
            body = _parse(JoinProject, data)
            services.broadcaster.leave_room(sid, room_of(body.project_id))
            return Ack(project_id=body.project_id)

        return _guarded(socketio, hub, handle)

    @socketio.on("execute_task")
    def execute_task(data: Any) -> dict[str, Any]:
        def handle(sid: str) -> Ack:
            body = _parse(ExecuteTask, data)
            runs = services.runs
            project_id = body.project_id
            if project_id is None or not runs.exists(project_id):
                project_id = runs.create(body.goal, body.profile, body.config, project_id=project_id).project_id
                goal, profile = None, None
            else:
                goal, profile = body.goal, body.profile
            # Joined before the run starts: the client misses none of its events.
            services.broadcaster.enter_room(sid, room_of(project_id))
            return Ack(project=runs.execute(project_id, goal, profile))

        return _guarded(socketio, hub, handle)

    @socketio.on("hitl_response")
    def hitl_response(data: Any) -> dict[str, Any]:
        def handle(sid: str) -> Ack:
            body = _parse(HitlResponse, data)
            return Ack(review=services.reviews.answer(body.review_id, body, by="socket"))

        return _guarded(socketio, hub, handle)


def _parse(model: type[BaseModel], data: Any) -> Any:
    if not isinstance(data, dict):
        raise bad_request("the payload must be an object.")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise bad_request(describe_validation(exc)) from exc


def _guarded(socketio: SocketIO, hub: Hub, handle: Callable[[str], Ack]) -> dict[str, Any]:
    """The handler's acknowledgement, as the JSON python-socketio sends; a failure is also emitted as ``error``."""
    sid: str = request.sid  # type: ignore[attr-defined]
    ack = hub.offload(_acknowledge, handle, sid)
    if ack.error is not None:
        socketio.emit("error", ack.error, to=sid)
    return ack.model_dump(mode="json")


def _acknowledge(handle: Callable[[str], Ack], sid: str) -> Ack:
    try:
        return handle(sid)
    except Exception as exc:
        error = as_api_error(exc)
        if error is None:
            logger.opt(exception=exc).error("unhandled error in a Socket.IO handler")
            error = ApiError(500, "internal_error", "the server hit an unexpected error; it has been logged.")
        return Ack(ok=False, error=error.payload())

"""REST blueprints, and the helpers they share to read bodies and reach the app's services."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from flask import Response, current_app, jsonify, request
from pydantic import BaseModel, ValidationError

from ..errors import ApiError, bad_request, describe_validation

if TYPE_CHECKING:
    from ..app import Services

M = TypeVar("M", bound=BaseModel)


def services() -> Services:
    return current_app.extensions["sentient"]


def as_json(model: BaseModel, status: int = 200) -> Response:
    """``model`` as the response's JSON body."""
    response = jsonify(model.model_dump(mode="json"))
    response.status_code = status
    return response


def parse_body(model: type[M], *, optional: bool = False) -> M:
    """The request's JSON body as ``model``; 400 with the reason for anything else.

    ``optional`` bodies may be empty (``{}`` is assumed).
    """
    raw = request.get_data(cache=True)
    if not raw.strip():
        if optional:
            return model.model_validate({})
        raise bad_request("this request needs a JSON body.")
    if not request.is_json:
        raise ApiError(415, "unsupported_media_type", "send the body as JSON (Content-Type: application/json).")
    data = request.get_json(silent=True)
    if data is None:
        raise bad_request("the body is not valid JSON.")
    if not isinstance(data, dict):
        raise bad_request("the body must be a JSON object.")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise bad_request(describe_validation(exc)) from exc

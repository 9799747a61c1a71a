"""REST blueprints, and the helpers they share to read bodies and reach the app's services."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from flask import Response, current_app, jsonify, request
from pydantic import BaseModel, ValidationError

from ..errors import ApiError, bad_request, describe_validation

if TYPE_CHECKING:
    from ..app import Services

M = TypeVar("M", bound=BaseModel)

# No body the API takes nests half as deep; deeper ones would reach validators and the store's
# JSON encoding, which recurse.
MAX_JSON_DEPTH = 32


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
    too_deep = bad_request(f"the body is nested too deeply: at most {MAX_JSON_DEPTH} levels of arrays and objects.")
    try:
        data = request.get_json(silent=True)
    except RecursionError:  # json gives up near Python's recursion limit, and not with a ValueError
        raise too_deep from None
    if _deeper_than(data, MAX_JSON_DEPTH):
        raise too_deep
    if data is None:
        raise bad_request("the body is not valid JSON.")
    if not isinstance(data, dict):
        raise bad_request("the body must be a JSON object.")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise bad_request(describe_validation(exc)) from exc


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` levels (measured without recursion)."""
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False

"""API errors and the handlers that turn every failure into ``{"error": {code, message}}``.

No stack trace ever reaches a client: an unexpected exception is logged and answered with a
generic 500 (a 500 is a bug).
"""

from __future__ import annotations

from typing import Any

from flask import Flask, jsonify
from loguru import logger
from pydantic import ValidationError
from werkzeug.exceptions import HTTPException

from sentient.exceptions import ConfigError, ExportError
from sentient.projects.errors import DocsNotAllowedError, NoReportError, ProjectStateError, UnusablePlanError
from sentient.store import (
    InvalidProjectIdError,
    NodeNotFoundError,
    ProjectBusyError,
    ProjectExistsError,
    ProjectNotFoundError,
    ReviewAlreadyAnsweredError,
    ReviewNotFoundError,
)

from .jobqueue import QueueUnavailableError


class ApiError(Exception):
    """An error with its HTTP status, a slug for programs and a message for people."""

    def __init__(self, status: int, code: str, message: str) -> None:
        self.status = status
        self.code = code
        self.message = message
        super().__init__(message)

    def payload(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def bad_request(message: str, code: str = "invalid_request") -> ApiError:
    return ApiError(400, code, message)


def not_found(what: str, ident: str) -> ApiError:
    return ApiError(404, "not_found", f"no {what} '{ident}'.")


def conflict(message: str) -> ApiError:
    return ApiError(409, "conflict", message)


def describe_validation(exc: ValidationError) -> str:
    """pydantic's errors as one line per problem: ``field: message``."""
    parts = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error["loc"]) or "body"
        parts.append(f"{loc}: {error['msg']}")
    return "; ".join(parts)


def as_api_error(exc: BaseException) -> ApiError | None:
    """Map a known exception to an ApiError; None for anything unexpected.

    The one place where the domain's errors (:mod:`sentient.projects.errors`) become statuses.
    """
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, ValidationError):
        return bad_request(describe_validation(exc))
    if isinstance(exc, DocsNotAllowedError):
        return ApiError(403, "forbidden", str(exc))
    if isinstance(exc, UnusablePlanError):
        return bad_request(str(exc), "invalid_plan")
    if isinstance(exc, ConfigError):
        return bad_request(str(exc), "invalid_config")
    if isinstance(exc, ProjectNotFoundError | NodeNotFoundError | ReviewNotFoundError | InvalidProjectIdError):
        return ApiError(404, "not_found", f"{exc}.")
    if isinstance(exc, NoReportError):
        return ApiError(404, "no_report", str(exc))
    if isinstance(exc, ProjectStateError):
        return conflict(str(exc))
    if isinstance(exc, ProjectBusyError):
        return conflict(str(exc))
    if isinstance(exc, ProjectExistsError | ReviewAlreadyAnsweredError):
        return conflict(f"{exc}.")
    if isinstance(exc, ExportError):
        return ApiError(503, "unavailable", str(exc))
    if isinstance(exc, QueueUnavailableError):
        return ApiError(503, "unavailable", f"{exc} Try again once it is back.")
    return None


_HTTP_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
}


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Any:
        status = exc.code or 500
        code = _HTTP_CODES.get(status, "http_error")
        message = exc.description or exc.name
        response = jsonify(error={"code": code, "message": message})
        response.status_code = status
        if status == 405 and exc.response is None:
            allowed = getattr(exc, "valid_methods", None)
            if allowed:
                response.headers["Allow"] = ", ".join(allowed)
        return response

    @app.errorhandler(Exception)
    def any_error(exc: Exception) -> Any:
        mapped = as_api_error(exc)
        if mapped is None:
            logger.opt(exception=exc).error("unhandled error in a request")
            mapped = ApiError(500, "internal_error", "the server hit an unexpected error; it has been logged.")
        response = jsonify(error=mapped.payload())
        response.status_code = mapped.status
        return response

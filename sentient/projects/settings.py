"""The one settings merge: a project's engine settings are its base (profile or stored) plus overrides."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from sentient.exceptions import ConfigError
from sentient.language import detect_language
from sentient.settings import EngineSettings


def merge_settings(base: EngineSettings, overrides: Mapping[str, Any]) -> EngineSettings:
    """``base`` with the non-None ``overrides``; ConfigError (one line, naming the setting) otherwise.

    Every caller goes through here: the Python API (profile + keyword overrides), the server
    (profile + a request's ``config``), a resume (stored settings + the options given now).
    """
    unknown = sorted(set(overrides) - set(EngineSettings.model_fields))
    if unknown:
        raise ConfigError(
            f"unknown engine setting(s) {unknown}.",
            fix=f"use: {', '.join(sorted(EngineSettings.model_fields))}.",
        )
    values = {k: v for k, v in overrides.items() if v is not None}
    if not values:
        return base
    try:
        return EngineSettings.model_validate({**base.model_dump(), **values})
    except ValidationError as exc:
        # One line naming the setting, not pydantic's multi-line report.
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        got = repr(error.get("input"))  # a whole output_schema would not make one line
        raise ConfigError(
            f"invalid engine setting: {error['msg']} (got {got if len(got) <= 80 else got[:77] + '...'}).",
            field=field,
            fix="correct the value.",
        ) from exc


def stored_settings(base: EngineSettings, stored: Mapping[str, Any]) -> EngineSettings:
    """A stored project's settings read over its profile's (keys a newer version dropped are ignored)."""
    values = {k: v for k, v in stored.items() if k in EngineSettings.model_fields}
    try:
        return EngineSettings.model_validate({**base.model_dump(), **values})
    except ValidationError as exc:
        raise ConfigError(f"the stored settings cannot be used: {exc.errors()[0]['msg']}.") from exc


def with_goal_language(settings: EngineSettings, goal: str) -> EngineSettings:
    """``settings`` with the goal's language when none is set and it is detected with confidence
    (:func:`~sentient.language.detect_language`); stored with the project, so a resume keeps it."""
    if settings.language is not None:
        return settings
    detected = detect_language(goal)
    return settings if detected is None else settings.model_copy(update={"language": detected})

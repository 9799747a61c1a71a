"""A project's choices besides its engine settings: its model and whether it runs offline.

A client names them in ``config`` when it creates a project (``config.model``, ``config.offline``,
beside ``config.docs``, whose docs-roots policy is :meth:`RunManager._allowed_docs`). They are
checked then (a bad value is a 400 naming the field), kept in the project's options, and applied
every time the project runs, a resume or a worker's run included (:func:`run_settings`,
:func:`run_model`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agno.models.base import Model

from sentient.agents.models.factory import ModelFactory
from sentient.agents.models.providers import parse_model_string
from sentient.agents.registry import Profile
from sentient.exceptions import ConfigError
from sentient.settings import Settings

CHOICES = ("docs", "model", "offline")  # the keys of ``config`` that are options, not engine settings


def checked_model(value: object, settings: Settings, profile: Profile) -> str:
    """``config.model`` as a model string this server can run ``profile`` with (its key is set).

    A model at an address the client names (``openai-compatible:URL:…``) is refused: the server
    would send its requests, and its configured key, wherever a client says.
    """
    if not isinstance(value, str) or not value.strip():
        raise ConfigError("config.model must be a model string such as local or openai:gpt-4o-mini.")
    try:
        spec = parse_model_string(value)
    except ConfigError as exc:
        raise ConfigError(f"config.model: {exc.message}", fix=exc.fix) from None
    if spec.base_url is not None:
        raise ConfigError(
            "config.model: a model at an address of the client's choosing cannot be used over REST;"
            " the server's operator configures such a model (SENTIENT_MODEL)."
        )
    try:
        ModelFactory(settings, profile, model=spec.text).check()
    except ConfigError as exc:
        raise ConfigError(f"config.model: {exc.message}", fix=exc.fix) from None
    return spec.text


def checked_offline(value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"config.offline must be true or false, not {value!r}.")
    return value


def run_settings(options: Mapping[str, Any], settings: Settings) -> Settings:
    """The server's settings for one project's runs: offline when the project chose it."""
    return settings.model_copy(update={"offline": True}) if options.get("offline") is True else settings


def run_model(options: Mapping[str, Any], override: Model | None) -> Model | str | None:
    """The model of one project's runs: the server's own instance when it has one (tests,
    benchmarks), else the project's choice, else None (the server's ``SENTIENT_MODEL``)."""
    if override is not None:
        return override
    model = options.get("model")
    return model if isinstance(model, str) else None

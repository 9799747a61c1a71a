"""Model strings to agno models. Every agent in a run that names the same model shares one instance."""

from __future__ import annotations

from agno.models.base import Model

from sentient.agents.config import AgentConfig
from sentient.agents.models.fake import ScriptedModel
from sentient.agents.registry import Profile
from sentient.exceptions import ConfigError
from sentient.settings import Settings

SUPPORTED = ("local", "scripted")


class ModelFactory:
    """Resolves each agent's model. ``override`` (e.g. a ScriptedModel) replaces every model."""

    def __init__(self, settings: Settings, override: Model | None = None) -> None:
        self._settings = settings
        self._override = override
        self._models: dict[str, Model] = {}

    def check(self, profile: Profile) -> None:
        """Fail before the run starts if any agent names a model that cannot be built."""
        if self._override is not None:
            return
        for agent in profile.agents():
            spec = self._spec(agent)
            if spec not in SUPPORTED:
                source = f"agent '{agent.name}' in agents.yaml" if agent.model else "SENTIENT_MODEL"
                raise ConfigError(
                    f"unknown model '{spec}' (set by {source}).",
                    field="model",
                    fix=f"use one of: {', '.join(SUPPORTED)} ('local' is the embedded model, 'scripted' a dry run).",
                )

    def prepare(self, profile: Profile) -> None:
        """Build every model the profile needs (slow for 'local': weights are assembled and verified)."""
        for agent in profile.agents():
            self.for_agent(agent)

    def for_agent(self, agent: AgentConfig) -> Model:
        if self._override is not None:
            return self._override
        spec = self._spec(agent)
        model = self._models.get(spec)
        if model is None:
            model = self._models[spec] = self._build(spec)
        return model

    def _spec(self, agent: AgentConfig) -> str:
        return agent.model or self._settings.model

    def _build(self, spec: str) -> Model:
        if spec == "local":
            from sentient.agents.models.embedded import load_embedded_model  # llama.cpp loads only when used

            return load_embedded_model(self._settings.model_path, self._settings.cache_dir)
        if spec == "scripted":
            # A dry run of the whole pipeline with canned answers: no weights, no network.
            return ScriptedModel()
        raise ConfigError(f"unknown model '{spec}'.", field="model", fix=f"use one of: {', '.join(SUPPORTED)}.")

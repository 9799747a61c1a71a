"""Model strings to ready-to-call models. Agents of a run that name the same model share one.

Which model an agent uses, first match wins: the run's ``--model`` override, the profile's
per-role ``models``, the agent's own ``model`` in agents.yaml, then ``SENTIENT_MODEL``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module

from agno.models.base import Model

from sentient.agents.config import AgentConfig
from sentient.agents.models.cache import ResponseCache
from sentient.agents.models.catalog import FREE, ModelCatalog, Price, load_catalog
from sentient.agents.models.fake import ScriptedModel
from sentient.agents.models.gates import ProviderGates
from sentient.agents.models.providers import IN_PROCESS, ModelSpec, Provider, parse_model_string
from sentient.agents.models.resilience import ProviderGate
from sentient.agents.models.weights import DEFAULT_WEIGHTS, EMBEDDED_WEIGHTS
from sentient.agents.registry import Profile
from sentient.exceptions import ConfigError
from sentient.settings import MODEL_SEED, MODEL_TEMPERATURE, Settings


@dataclass(frozen=True)
class ModelHandle:
    """A model with everything a call needs around it."""

    name: str  # the model string, e.g. "openai:gpt-4o-mini"
    model: Model
    price: Price
    gate: ProviderGate | None  # rate limit and adaptive concurrency of a hosted provider
    cache: ResponseCache | None  # None when responses are not cached for this model
    native_tools: bool  # the provider runs a tool-call loop (hosted models); the embedded one does not
    grammar: bool = False  # outputs are decoded under the schema's grammar (the embedded model)


class ModelFactory:
    """Resolves and builds each agent's model. ``override`` (e.g. a ScriptedModel) replaces every model.

    ``gates`` holds the process's provider gates, so that runs on the same provider key share
    their limits; without it the factory keeps gates of its own.
    """

    def __init__(
        self,
        settings: Settings,
        profile: Profile,
        *,
        override: Model | None = None,
        model: str | None = None,
        timeout_s: float = 300.0,
        gates: ProviderGates | None = None,
    ) -> None:
        self._settings = settings
        self._profile = profile
        self._override = override
        self._model = model
        self._timeout_s = timeout_s
        self._catalog: ModelCatalog | None = None
        self._handles: dict[str, ModelHandle] = {}
        self._gates = gates or ProviderGates.from_settings(settings)
        self._cache: ResponseCache | None = None

    @property
    def gates(self) -> ProviderGates:
        return self._gates

    @property
    def catalog(self) -> ModelCatalog:
        if self._catalog is None:
            self._catalog = load_catalog(self._settings.config_dir, self._settings.user_config)
        return self._catalog

    def check(self) -> None:
        """Fail before the run starts on a malformed model string, a missing API key, or (for a
        hosted model) a Redis for the shared provider limits that does not answer."""
        if self._override is not None:
            return
        hosted = False
        for agent in self._profile.agents():
            try:
                spec = parse_model_string(self.model_string(agent))
            except ConfigError as exc:
                raise ConfigError(
                    f"{exc.message.rstrip('.')} (set by {self._source(agent)}).", field="model", fix=exc.fix
                ) from None
            self.catalog.check_credentials(spec)
            hosted = hosted or spec.provider not in IN_PROCESS
        if hosted:
            self._gates.check()
            # The providers' SDKs take seconds to import: before the run, not on its loop at the first call.
            import_module("sentient.agents.models.hosted")

    def prepare(self) -> None:
        """Build every model the profile needs (slow for 'local': weights are assembled and verified)."""
        for agent in self._profile.agents():
            self.for_agent(agent)

    def model_string(self, agent: AgentConfig) -> str:
        return self._model or self._profile.models.get(agent.role) or agent.model or self._settings.model

    def _source(self, agent: AgentConfig) -> str:
        if self._model:
            return "--model"
        if agent.role in self._profile.models:
            return f"models.{agent.role.value} in profile {self._profile.name}"
        if agent.model:
            return f"agent '{agent.name}' in agents.yaml"
        return "SENTIENT_MODEL"

    def for_agent(self, agent: AgentConfig) -> ModelHandle:
        text = "override" if self._override is not None else self.model_string(agent)
        handle = self._handles.get(text)
        if handle is None:
            handle = self._handles[text] = self._build(text)
        return handle

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def _build(self, text: str) -> ModelHandle:
        if self._override is not None:
            name = f"{self._override.provider}:{self._override.id}"
            grammar = isinstance(self._override, ScriptedModel) and self._override.grammar
            return ModelHandle(
                name, self._override, FREE, None, self._response_cache(False), native_tools=False, grammar=grammar
            )
        spec = parse_model_string(text)
        if spec.provider is Provider.LOCAL:
            from sentient.agents.models.embedded import load_embedded_model  # llama.cpp loads only when used

            # Plain 'local' is the default weights, or SENTIENT_MODEL_PATH; 'local:NAME' names the weights.
            weights = EMBEDDED_WEIGHTS.get(spec.model_id, DEFAULT_WEIGHTS)
            path = self._settings.model_path if spec.model_id == "local" else None
            temperature, seed = self._settings.model_temperature, self._settings.model_seed
            embedded = load_embedded_model(
                path,
                self._settings.cache_dir,
                weights=weights,
                n_threads=self._settings.model_threads,
                temperature=temperature,
                seed=seed,
            )
            # The name keys the response cache, so it says which weights answered, and at which
            # temperature and seed when they are not the default ones.
            name = f"local:{path.name}" if path is not None else f"local:{weights.name}"
            if temperature != MODEL_TEMPERATURE:
                name += f"@t{temperature:g}"
            if seed != MODEL_SEED:
                name += f"@s{seed}"
            return ModelHandle(name, embedded, FREE, None, self._response_cache(True), native_tools=False, grammar=True)
        if spec.provider is Provider.SCRIPTED:
            # A dry run of the whole pipeline with canned answers: no weights, no network.
            return ModelHandle(text, ScriptedModel(), FREE, None, self._response_cache(False), native_tools=False)
        from sentient.agents.models.hosted import build_model  # the providers' SDKs load only when used

        model = build_model(spec, self.catalog, timeout_s=self._timeout_s)
        return ModelHandle(
            text, model, self.catalog.price(spec), self._gate(spec), self._response_cache(False), native_tools=True
        )

    def _gate(self, spec: ModelSpec) -> ProviderGate:
        """The gate of the provider key (provider, endpoint, API key): shared by every agent of the
        run, and by every run given the same ``gates``."""
        assert spec.provider not in IN_PROCESS
        config = self.catalog.provider(spec.provider)
        return self._gates.gate(
            spec.provider.value,
            spec.base_url or config.base_url,
            self.catalog.api_key(spec),
            requests_per_minute=config.requests_per_minute,
            max_concurrency=config.max_concurrency,
        )

    def _response_cache(self, on_by_default: bool) -> ResponseCache | None:
        enabled = self._settings.cache_responses
        if not (on_by_default if enabled is None else enabled):
            return None
        if self._cache is None:
            self._cache = ResponseCache(self._settings.cache_dir / "responses.db")
        return self._cache

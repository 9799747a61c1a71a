"""The model catalog: per-provider keys, endpoints and limits, and token prices.

Loaded from ``agent_configs/models.yaml``, with an optional user file of the same shape merged
over it (only the fields it sets). API keys come from the environment first, then the user file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sentient.agents.config import load_yaml_model
from sentient.agents.models.providers import IN_PROCESS, ModelSpec, Provider, parse_model_string
from sentient.exceptions import ConfigError

CATALOG_FILE = "models.yaml"


class ProviderConfig(BaseModel):
    """One provider under ``providers:``. Every field has a default, so a user file sets only what it changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    api_key_env: str | None = Field(None, description="Environment variable that holds the API key.")
    api_key_required: bool = Field(False, description="Refuse to start a run without a key.")
    api_key: str | None = Field(None, repr=False, description="A key kept in the user file (the env var wins).")
    base_url: str | None = Field(None, description="Default endpoint.")
    requests_per_minute: float | None = Field(None, gt=0, description="Client-side rate limit; none if empty.")
    max_concurrency: int = Field(4, ge=1, le=256, description="Calls in flight at once, at most.")


class Price(BaseModel):
    """USD per million tokens. ``known`` is False for a hosted model without an entry (costed at 0)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(ge=0)
    known: bool = True

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Cost in USD of one call's tokens."""
        return (input_tokens * self.input_per_million + output_tokens * self.output_per_million) / 1_000_000


FREE = Price(input_per_million=0, output_per_million=0)
UNKNOWN_PRICE = Price(input_per_million=0, output_per_million=0, known=False)


class CatalogFile(BaseModel):
    """The shape of ``models.yaml`` and of the user file."""

    model_config = ConfigDict(extra="forbid")

    providers: dict[Provider, ProviderConfig] = Field(default_factory=dict)
    prices: dict[str, Price] = Field(default_factory=dict)

    @field_validator("providers")
    @classmethod
    def _remote_only(cls, value: dict[Provider, ProviderConfig]) -> dict[Provider, ProviderConfig]:
        for name in value:
            if name in IN_PROCESS:
                raise ValueError(f"'{name}' runs in process and takes no provider settings")
        return value

    @field_validator("prices")
    @classmethod
    def _model_strings(cls, value: dict[str, Price]) -> dict[str, Price]:
        for text in value:
            try:
                parse_model_string(text)
            except ConfigError as exc:
                raise ValueError(f"price key '{text}' is not a model string; {exc.fix}") from None
        return value


@dataclass(frozen=True)
class ModelCatalog:
    """Provider settings and prices for every model string a run may use."""

    providers: dict[Provider, ProviderConfig] = field(default_factory=dict)
    prices: dict[str, Price] = field(default_factory=dict)
    user_file: Path | None = None

    def provider(self, name: Provider | str) -> ProviderConfig:
        """Settings of provider ``name`` (defaults when the catalog does not list it)."""
        return self.providers.get(Provider(name), ProviderConfig())

    def api_key(self, spec: ModelSpec) -> str | None:
        """The key for ``spec``: its provider's environment variable if set, else the user file's."""
        if spec.provider in IN_PROCESS:
            return None
        config = self.provider(spec.provider)
        from_env = os.environ.get(config.api_key_env) if config.api_key_env else None
        return from_env or config.api_key or None

    def check_credentials(self, spec: ModelSpec) -> None:
        """Raise ConfigError, naming the variable to set, when ``spec`` needs a key and has none."""
        if spec.provider in IN_PROCESS:
            return
        config = self.provider(spec.provider)
        if not config.api_key_required or self.api_key(spec):
            return
        where = str(self.user_file) if self.user_file else "your Sentient config file"
        variable = config.api_key_env or f"the {spec.provider} API key"
        export = f"export {config.api_key_env}=… or " if config.api_key_env else ""
        raise ConfigError(
            f"{variable} is not set (needed by model '{spec.text}').",
            field="model",
            fix=f"{export}put api_key under providers.{spec.provider} in {where}.",
        )

    def price(self, spec: ModelSpec) -> Price:
        """Token prices of ``spec``; in-process and Ollama models are free, unlisted hosted ones unknown."""
        if spec.provider in IN_PROCESS or spec.provider is Provider.OLLAMA:
            return self.prices.get(spec.text, FREE)
        return self.prices.get(spec.text, UNKNOWN_PRICE)


def load_catalog(config_dir: Path, user_file: Path | None = None) -> ModelCatalog:
    """Load ``config_dir/models.yaml`` and merge ``user_file`` over it when that file exists."""
    base = load_yaml_model(config_dir / CATALOG_FILE, CatalogFile)
    providers = dict(base.providers)
    prices = dict(base.prices)
    if user_file is not None and user_file.exists():
        user = load_yaml_model(user_file, CatalogFile)
        for name, override in user.providers.items():
            current = providers.get(name, ProviderConfig())
            providers[name] = current.model_copy(update=override.model_dump(exclude_unset=True))
        prices.update(user.prices)
    return ModelCatalog(providers=providers, prices=prices, user_file=user_file)

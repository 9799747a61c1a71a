"""Settings: engine knobs per run, and process-wide settings from the environment (``SENTIENT_*``)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from sentient.exceptions import ConfigError
from sentient.language import check_language
from sentient.resources import agent_configs_dir
from sentient.structured import schema_problem

MAX_CALL_TIMEOUT_S = 3600.0  # the longest a model call attempt may be given: an hour
REPORT_WORDS = (100, 20_000)  # the report_length a number of words may ask for
MODEL_TEMPERATURE = 0.2  # the embedded model's sampling temperature unless SENTIENT_MODEL_TEMPERATURE says
MODEL_SEED = 1234  # the embedded model's sampling seed unless SENTIENT_MODEL_SEED says
# The largest seed that draws the same samples every time: llama.cpp keeps 32 bits of a seed and
# takes 2**32 - 1 to mean a random one.
MAX_MODEL_SEED = 2**32 - 2


class FailurePolicy(StrEnum):
    REPLAN = "replan"  # rebuild the parent's unfinished subtree (max_replans times), then continue
    CONTINUE = "continue"  # dependents still run; the aggregator is told what failed
    FAIL_PARENT = "fail_parent"  # cancel the remaining siblings and fail the parent


class ReviewMode(StrEnum):
    NONE = "none"  # never ask a human
    ROOT = "root"  # review the root plan only
    ALL = "all"  # review every plan


class ReviewTimeoutAction(StrEnum):
    APPROVE = "approve"
    REJECT = "reject"


class ReportLength(StrEnum):
    SHORT = "short"  # a few short sections
    STANDARD = "standard"  # the default size of a report
    LONG = "long"  # more sections, each longer


class EngineSettings(BaseModel):
    """How one run behaves. Profiles set defaults; the CLI and API override them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_depth: int = Field(2, ge=0, le=8, description="Nodes at this layer are always executed, never planned.")
    force_root_planning: bool = Field(True, description="Always plan the root instead of asking the atomizer.")
    answer_first: bool = Field(
        True,
        description="Answer a question directly from one search first; plan it only if no source supports that answer.",
    )
    max_subtasks: int = Field(6, ge=2, le=12, description="How many subtasks a planner is asked for, at most.")
    skip_atomization: bool = Field(False, description="Do not call the atomizer: plan above max_depth, execute at it.")
    failure_policy: FailurePolicy = FailurePolicy.REPLAN
    max_replans: int = Field(1, ge=0, le=5, description="Replans per node before the policy falls back.")
    max_concurrent_llm_calls: int = Field(4, ge=1, le=256)
    # Every model call is bounded: a timeout must be a finite number of seconds, an hour at most.
    agent_timeout_s: float = Field(
        120.0,
        gt=0,
        le=MAX_CALL_TIMEOUT_S,
        allow_inf_nan=False,
        description="Timeout of each attempt of a model call (--call-timeout).",
    )
    local_timeout_s: float = Field(
        300.0,
        gt=0,
        le=MAX_CALL_TIMEOUT_S,
        allow_inf_nan=False,
        description="Timeout of one call to the embedded model (CPU-bound, slower than a hosted one).",
    )
    call_deadline_s: float | None = Field(
        None,
        gt=0,
        le=3 * MAX_CALL_TIMEOUT_S,
        allow_inf_nan=False,
        description="Bound on all attempts of one model call, backoff included (default: 3 x the timeout).",
    )
    max_validation_retries: int = Field(2, ge=0, le=10, description="Retries of an output that fails its schema.")
    max_tool_steps: int = Field(
        3,
        ge=0,
        le=10,
        description="Tool calls a model that decodes under a grammar (the embedded one) may make before it answers.",
    )
    review: ReviewMode = ReviewMode.NONE
    review_timeout_s: float | None = Field(
        None, gt=0, description="Wait this long for a plan review (default: forever)."
    )
    review_timeout_action: ReviewTimeoutAction = Field(
        ReviewTimeoutAction.REJECT, description="What a review that timed out decides."
    )
    max_cost_usd: float | None = Field(None, gt=0, description="Stop the run when model calls have cost this much.")
    max_llm_calls: int | None = Field(None, ge=1, description="Stop the run after this many model calls.")
    max_time_s: float | None = Field(None, gt=0, description="Stop the run after this many seconds.")
    context_token_budget: int = Field(3000, ge=200, description="Approximate tokens of context per agent call.")
    knowledge_results: int = Field(3, ge=0, le=20, description="Related knowledge entries offered per call.")
    report_length: ReportLength | int | None = Field(
        None,
        description=(
            "Write a report of this size (short, standard, long, or about this many words) whatever the goal;"
            " unset, a goal the atomizer finds asks for a report gets one of standard size, others an answer."
        ),
    )
    max_items: int = Field(
        12, ge=1, le=30, description="A report's 'for each' part covers at most this many items it discovers."
    )
    language: str | None = Field(
        None,
        description=(
            "The language every agent writes in, as a tag (en, de, fr, pt-BR); unset, the goal's language when"
            " it is detected with confidence, else the agents are told to write in the language of the goal."
        ),
    )

    output_schema: dict[str, Any] | None = Field(
        None,
        description=(
            "A JSON Schema (an object): the run's final answer is also given as a JSON value that validates"
            " against it, with the sources each of its strings cites (docs/structured-output.md)."
        ),
    )

    @field_validator("output_schema")
    @classmethod
    def _a_json_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        problem = None if value is None else schema_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("language")
    @classmethod
    def _a_language(cls, value: str | None) -> str | None:
        return None if value is None else check_language(value)

    @field_validator("report_length", mode="before")
    @classmethod
    def _a_size_or_words(cls, value: Any) -> Any:
        """A size's name, or a number of words (as a number or in digits) within REPORT_WORDS."""
        if value is None or isinstance(value, ReportLength):
            return value
        if isinstance(value, str) and value.strip().lower() in set(ReportLength):
            return ReportLength(value.strip().lower())
        words = int(value) if isinstance(value, str) and value.strip().isdigit() else value
        if type(words) is not int or not REPORT_WORDS[0] <= words <= REPORT_WORDS[1]:
            raise ValueError(
                f"use short, standard, long or a number of words from {REPORT_WORDS[0]} to {REPORT_WORDS[1]}"
            )
        return words


class Settings(BaseSettings):
    """Process-wide settings, read from ``SENTIENT_*`` environment variables."""

    model_config = SettingsConfigDict(env_prefix="SENTIENT_", extra="forbid")

    model: str = Field("local", description="Model for every agent without its own: 'local' is the embedded one.")
    model_path: Path | None = Field(None, description="A local GGUF file to use instead of the embedded weights.")
    model_threads: int | None = Field(
        None,
        ge=1,
        description=(
            "CPU threads of the embedded model (default: the CPUs other work leaves free when it loads, at most"
            " half of them or two, at least one). More is faster on a machine left to Sentient, and much"
            " slower when other work shares the cores."
        ),
    )
    model_temperature: float = Field(
        MODEL_TEMPERATURE,
        ge=0.0,
        le=2.0,
        description="Sampling temperature of the embedded model; 0 always takes the most likely token.",
    )
    model_seed: int = Field(
        MODEL_SEED,
        ge=0,
        le=MAX_MODEL_SEED,
        description=(
            "Sampling seed of the embedded model: the same prompt gets the same reply. Another seed shows how much"
            " a result owes to one draw of the samples."
        ),
    )
    cache_dir: Path = Field(Path.home() / ".cache" / "sentient", description="Assembled weights, docs indexes.")
    results_dir: Path = Field(Path("project_results"), description="Where each project's files are written.")
    database_url: str | None = Field(
        None,
        repr=False,  # it may hold a password
        description=(
            "A postgresql:// URL: keep projects in that PostgreSQL database (shared by every process given it)"
            " instead of SQLite in results_dir/sentient.db; reports and traces stay in results_dir."
        ),
    )
    config_dir: Path = Field(
        default_factory=agent_configs_dir,
        description="agents.yaml, models.yaml and profiles/ (default: the shipped ones).",
    )
    user_config: Path = Field(
        Path.home() / ".config" / "sentient" / "config.yaml",
        description="Optional: API keys, provider limits and prices that override models.yaml.",
    )
    cache_responses: bool | None = Field(
        None, description="Cache model responses (default: on for the embedded model, off for hosted ones)."
    )
    offline: bool = Field(False, description="Never use the network (web tools refuse at once).")
    lease_s: float = Field(
        30.0,
        gt=0,
        description=(
            "How long a worker's claim on a running project holds without renewal (it renews every third of"
            " it): another worker may take over a project whose owner died once this has passed (on one"
            " machine, at once when the owner's process is gone)."
        ),
    )
    redis_url: str | None = Field(
        None,
        description=(
            "redis://… shared by every Sentient process: provider rate limits and concurrency caps are "
            "enforced there for all of them together (default: each process keeps its own)."
        ),
    )
    queue_url: str | None = Field(
        None,
        description=(
            "redis://… of the job queue (arq): `sentient serve` then runs no project itself but queues it,"
            " and `sentient worker` processes run the queued projects (needs redis_url and, across"
            " machines, database_url)."
        ),
    )
    retrieval: Literal["bm25", "hybrid"] = Field(
        "hybrid",
        description=(
            "Docs search ranking: BM25 fused with multilingual sentence vectors (hybrid), which finds"
            " paraphrases and says when nothing is relevant, or BM25 alone (faster to index, lower"
            " recall; see bench/README.md)."
        ),
    )


def settings_from_env() -> Settings:
    """The process's settings from its ``SENTIENT_*`` variables.

    Raises:
        ConfigError: a variable holds a value its setting cannot take; the message names each such
            variable and what it needs (not the value: it may be a URL with a password).
    """
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"SENTIENT_{'_'.join(str(part) for part in error['loc']).upper()}: {error['msg']}" for error in exc.errors()
        )
        raise ConfigError(f"invalid environment: {problems}") from None

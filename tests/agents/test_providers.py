"""Model strings, the model catalog, and hosted models over real HTTP against a loopback fake."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from agno.exceptions import ModelProviderError, ModelRateLimitError
from agno.models.anthropic import Claude
from agno.models.base import Model
from agno.models.message import Message
from agno.models.ollama import Ollama
from agno.models.openai import OpenAIChat
from agno.models.openai.like import OpenAILike
from agno.models.openrouter import OpenRouter
from agno.tools.function import Function
from fakes.openai_server import (
    FakeOpenAIServer,
    Reply,
    delayed,
    fake_openai_server,
    json_reply,
    malformed,
    rate_limited,
    server_error,
    text,
    tool_call,
)
from pydantic import BaseModel

from sentient.agents.models.catalog import ModelCatalog, load_catalog
from sentient.agents.models.hosted import build_model
from sentient.agents.models.providers import REMOTE, ModelSpec, Provider, parse_model_string, response_format_for
from sentient.agents.models.resilience import ProviderGate, call_with_retries, is_rate_limit, retry_after_s
from sentient.exceptions import ConfigError, MalformedResponseError
from sentient.resources import agent_configs_dir

SHIPPED = agent_configs_dir()
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "OPENAI_COMPATIBLE_API_KEY", "OLLAMA_API_KEY")


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts without provider keys in the environment."""
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def catalog() -> ModelCatalog:
    return load_catalog(SHIPPED, None)


# -- model strings ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "provider", "model_id", "base_url"),
    [
        ("local", Provider.LOCAL, "local", None),
        ("scripted", Provider.SCRIPTED, "scripted", None),
        ("openai:gpt-4o-mini", Provider.OPENAI, "gpt-4o-mini", None),
        ("anthropic:claude-sonnet-4-0", Provider.ANTHROPIC, "claude-sonnet-4-0", None),
        ("openrouter:openai/gpt-4o-mini", Provider.OPENROUTER, "openai/gpt-4o-mini", None),
        ("ollama:llama3.1:8b", Provider.OLLAMA, "llama3.1:8b", None),
        (
            "openai-compatible:http://127.0.0.1:8000/v1:qwen2.5:7b",
            Provider.OPENAI_COMPATIBLE,
            "qwen2.5:7b",
            "http://127.0.0.1:8000/v1",
        ),
        ("openai-compatible:https://api.example.com:m", Provider.OPENAI_COMPATIBLE, "m", "https://api.example.com"),
        ("openai-compatible:http://localhost:8080/:m", Provider.OPENAI_COMPATIBLE, "m", "http://localhost:8080"),
    ],
)
def test_model_strings_parse(text: str, provider: Provider, model_id: str, base_url: str | None) -> None:
    assert parse_model_string(text) == ModelSpec(provider, model_id, base_url, text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "gpt-4o",
        "gemini:pro",
        "local:x",
        "openai:",
        "openai:gpt 4o",
        "openai-compatible:qwen",
        "openai-compatible:ftp://host:m",
        "openai-compatible:http://127.0.0.1:8000/v1",
    ],
)
def test_malformed_model_strings_name_the_field_and_the_accepted_forms(text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_model_string(text)
    assert caught.value.field == "model"
    assert f"'{text}'" in caught.value.message
    assert caught.value.fix is not None
    assert "openai-compatible:http(s)://HOST[:PORT][/PATH]:MODEL" in caught.value.fix
    assert "ollama:MODEL" in caught.value.fix


# -- catalog ---------------------------------------------------------------------------------


def test_shipped_catalog_covers_every_remote_provider(catalog: ModelCatalog) -> None:
    assert set(catalog.providers) == REMOTE
    assert catalog.provider("ollama").base_url == "http://localhost:11434"
    assert catalog.provider(Provider.OPENAI).api_key_env == "OPENAI_API_KEY"


def test_missing_key_names_the_variable_and_the_user_file(tmp_path: Path) -> None:
    user_file = tmp_path / "config.yaml"
    catalog = load_catalog(SHIPPED, user_file)
    with pytest.raises(ConfigError) as caught:
        catalog.check_credentials(parse_model_string("openai:gpt-4o-mini"))
    assert caught.value.message == "OPENAI_API_KEY is not set (needed by model 'openai:gpt-4o-mini')."
    assert caught.value.fix == f"export OPENAI_API_KEY=… or put api_key under providers.openai in {user_file}."


@pytest.mark.parametrize(
    ("text", "variable"),
    [("anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY"), ("openrouter:meta/llama", "OPENROUTER_API_KEY")],
)
def test_each_hosted_provider_needs_its_own_key(catalog: ModelCatalog, text: str, variable: str) -> None:
    with pytest.raises(ConfigError, match=f"{variable} is not set"):
        catalog.check_credentials(parse_model_string(text))


@pytest.mark.parametrize("text", ["local", "scripted", "ollama:llama3.1", "openai-compatible:http://h:1/v1:m"])
def test_local_servers_need_no_key(catalog: ModelCatalog, text: str) -> None:
    spec = parse_model_string(text)
    catalog.check_credentials(spec)
    assert catalog.api_key(spec) is None


def test_environment_key_wins_over_the_user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user_file = tmp_path / "config.yaml"
    user_file.write_text("providers:\n  openai:\n    api_key: from-file\n")
    catalog = load_catalog(SHIPPED, user_file)
    spec = parse_model_string("openai:gpt-4o")
    assert catalog.api_key(spec) == "from-file"
    catalog.check_credentials(spec)
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert catalog.api_key(spec) == "from-env"


def test_user_file_overrides_only_the_fields_it_sets(tmp_path: Path) -> None:
    user_file = tmp_path / "config.yaml"
    user_file.write_text(
        "providers:\n"
        "  openai:\n"
        "    max_concurrency: 2\n"
        "  openai-compatible:\n"
        "    requests_per_minute: 30\n"
        "prices:\n"
        "  openai:gpt-4o-mini: {input_per_million: 1, output_per_million: 2}\n"
        "  openrouter:meta/llama: {input_per_million: 0.1, output_per_million: 0.2}\n"
    )
    shipped = load_catalog(SHIPPED, None)
    merged = load_catalog(SHIPPED, user_file)
    assert merged.provider("openai").max_concurrency == 2
    assert merged.provider("openai").requests_per_minute == shipped.provider("openai").requests_per_minute
    assert merged.provider("openai").api_key_env == "OPENAI_API_KEY"
    assert merged.provider("openai-compatible").requests_per_minute == 30
    assert merged.price(parse_model_string("openai:gpt-4o-mini")).input_per_million == 1
    assert merged.price(parse_model_string("openrouter:meta/llama")).known
    assert merged.price(parse_model_string("openai:gpt-4o")) == shipped.price(parse_model_string("openai:gpt-4o"))


def test_a_missing_user_file_is_ignored(tmp_path: Path) -> None:
    assert load_catalog(SHIPPED, tmp_path / "absent.yaml").providers == load_catalog(SHIPPED, None).providers


@pytest.mark.parametrize(
    ("body", "field", "line"),
    [
        ("providers:\n  openai:\n    max_concurency: 2\n", "providers.openai.max_concurency", 3),
        ("providers:\n  openai:\n    requests_per_minute: -5\n", "providers.openai.requests_per_minute", 3),
        ("providers:\n  local:\n    max_concurrency: 2\n", "providers", 2),
        ("prices:\n  gpt-4o: {input_per_million: 1, output_per_million: 2}\n", "prices", 2),
        (
            "prices:\n  openai:gpt-4o: {input_per_million: 1, output_per_million: 2, currency: EUR}\n",
            "prices.openai:gpt-4o.currency",
            2,
        ),
    ],
)
def test_user_file_errors_name_file_line_and_field(tmp_path: Path, body: str, field: str, line: int) -> None:
    user_file = tmp_path / "config.yaml"
    user_file.write_text(body)
    with pytest.raises(ConfigError) as caught:
        load_catalog(SHIPPED, user_file)
    assert caught.value.file == str(user_file)
    assert caught.value.field == field
    assert f"(line {line})" in caught.value.message


def test_prices_cost_tokens(catalog: ModelCatalog) -> None:
    mini = catalog.price(parse_model_string("openai:gpt-4o-mini"))
    assert mini.cost(1_000_000, 1_000_000) == pytest.approx(0.15 + 0.60)
    assert mini.cost(2000, 500) == pytest.approx((2000 * 0.15 + 500 * 0.60) / 1e6)
    assert catalog.price(parse_model_string("anthropic:claude-sonnet-4-0")).cost(1000, 1000) > 0


@pytest.mark.parametrize("text", ["local", "scripted", "ollama:llama3.1:8b"])
def test_models_on_this_machine_are_free(catalog: ModelCatalog, text: str) -> None:
    price = catalog.price(parse_model_string(text))
    assert price.known
    assert price.cost(10**6, 10**6) == 0


def test_unlisted_hosted_model_costs_zero_and_is_flagged(catalog: ModelCatalog) -> None:
    price = catalog.price(parse_model_string("openai:some-future-model"))
    assert not price.known
    assert price.cost(10**6, 10**6) == 0


# -- build_model -----------------------------------------------------------------------------


def test_build_model_refuses_a_missing_key_before_any_call(catalog: ModelCatalog) -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        build_model(parse_model_string("openai:gpt-4o-mini"), catalog, timeout_s=30)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("openai:gpt-4o-mini", OpenAIChat),
        ("openrouter:openai/gpt-4o-mini", OpenRouter),
        ("openai-compatible:http://127.0.0.1:9/v1:m", OpenAILike),
    ],
)
def test_openai_style_clients_do_not_retry_and_carry_the_timeout(
    catalog: ModelCatalog, monkeypatch: pytest.MonkeyPatch, text: str, kind: type[Model]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k1")
    monkeypatch.setenv("OPENROUTER_API_KEY", "k2")
    spec = parse_model_string(text)
    model = build_model(spec, catalog, timeout_s=12.5)
    assert isinstance(model, kind)
    assert model.id == spec.model_id
    client = model.get_async_client()  # type: ignore[attr-defined]
    assert client.max_retries == 0
    assert client.timeout == 12.5


def test_openrouter_uses_its_endpoint_without_a_token_cap(
    catalog: ModelCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "k")
    model = build_model(parse_model_string("openrouter:openai/gpt-4o-mini"), catalog, timeout_s=5)
    assert isinstance(model, OpenRouter)
    assert model.base_url == "https://openrouter.ai/api/v1"
    assert model.api_key == "k"
    assert model.max_tokens is None


def test_anthropic_client_does_not_retry(catalog: ModelCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    model = build_model(parse_model_string("anthropic:claude-haiku-4-5"), catalog, timeout_s=7)
    assert isinstance(model, Claude)
    client = model.get_async_client()
    assert client.max_retries == 0
    assert client.timeout == 7


def test_ollama_talks_to_the_configured_host(catalog: ModelCatalog) -> None:
    model = build_model(parse_model_string("ollama:llama3.1:8b"), catalog, timeout_s=9)
    assert isinstance(model, Ollama)
    assert (model.id, model.host, model.timeout, model.api_key) == ("llama3.1:8b", "http://localhost:11434", 9, None)


def test_build_model_leaves_in_process_models_to_the_factory(catalog: ModelCatalog) -> None:
    with pytest.raises(ValueError, match="in-process"):
        build_model(parse_model_string("local"), catalog, timeout_s=1)


class Answer(BaseModel):
    answer: str
    confidence: float


def test_each_provider_gets_structured_output_in_the_shape_it_understands(
    catalog: ModelCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    openai_model = build_model(parse_model_string("openai:gpt-4o-mini"), catalog, timeout_s=5)
    assert response_format_for(openai_model, Answer) == {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": Answer.model_json_schema()},
    }
    claude = build_model(parse_model_string("anthropic:claude-haiku-4-5"), catalog, timeout_s=5)
    assert isinstance(claude, Claude)
    output_format = claude._build_output_format(response_format_for(claude, Answer))
    assert output_format is not None
    assert output_format["type"] == "json_schema"
    assert set(output_format["schema"]["properties"]) == {"answer", "confidence"}
    local = build_model(parse_model_string("ollama:qwen2.5:7b"), catalog, timeout_s=5)
    assert isinstance(local, Ollama)
    request = local._prepare_request_kwargs_for_invoke(response_format=response_format_for(local, Answer))
    assert set(request["format"]["properties"]) == {"answer", "confidence"}


# -- over HTTP, against the fake server ------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with fake_openai_server() as running:
        yield running


@pytest.fixture
async def model(server: FakeOpenAIServer, catalog: ModelCatalog) -> AsyncIterator[Model]:
    built = build_model(parse_model_string(f"openai-compatible:{server.base_url}:fake-model"), catalog, timeout_s=10)
    yield built
    if built.async_client is not None:  # type: ignore[attr-defined]
        await built.async_client.close()  # type: ignore[attr-defined]  # before the test's event loop closes


def ask(prompt: str = "Hi") -> list[Message]:
    return [Message(role="system", content="Be brief."), Message(role="user", content=prompt)]


async def test_plain_chat_round_trip(server: FakeOpenAIServer, model: Model) -> None:
    server.script(text("Hello there"))
    response = await model.aresponse(messages=ask("Say hello"))
    assert response.content == "Hello there"
    assert response.response_usage is not None
    assert (response.response_usage.input_tokens, response.response_usage.output_tokens) == (11, 7)
    (request,) = server.requests
    assert request["model"] == "fake-model"
    assert request["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello"},
    ]


async def test_tool_call_runs_the_function_then_returns_the_final_answer(
    server: FakeOpenAIServer, model: Model
) -> None:
    calls: list[tuple[int, int]] = []

    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls.append((a, b))
        return a + b

    server.script(tool_call("add", {"a": 2, "b": 3}, call_id="call_7"), text("The sum is 5."))
    response = await model.aresponse(messages=ask("2+3?"), tools=[Function.from_callable(add)])
    assert calls == [(2, 3)]
    assert response.content == "The sum is 5."
    first, second = server.requests
    assert first["tools"][0]["function"]["name"] == "add"
    tool_message = second["messages"][-1]
    assert (tool_message["role"], tool_message["tool_call_id"], tool_message["content"]) == ("tool", "call_7", "5")


async def test_structured_output_sends_the_json_schema(server: FakeOpenAIServer, model: Model) -> None:
    response_format = response_format_for(model, Answer)
    server.script(json_reply({"answer": "42", "confidence": 0.9}))
    response = await model.aresponse(messages=ask(), response_format=response_format)
    assert Answer.model_validate_json(str(response.content)) == Answer(answer="42", confidence=0.9)
    assert server.requests[0]["response_format"] == response_format


async def test_rate_limit_keeps_the_retry_after_header(server: FakeOpenAIServer, model: Model) -> None:
    server.script(rate_limited(retry_after_s=7))
    with pytest.raises(ModelRateLimitError) as caught:
        await model.aresponse(messages=ask())
    assert is_rate_limit(caught.value)
    assert retry_after_s(caught.value) == 7


class Sleeps:
    """An injected ``sleep`` that returns at once and records what it was asked."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


async def retried(model: Model, gate: ProviderGate, sleeps: Sleeps, *, attempts: int = 3, timeout_s: float = 5) -> str:
    async def call() -> str:
        response = await model.aresponse(messages=ask())  # fresh messages: aresponse appends to them
        return str(response.content)

    return await call_with_retries(
        call,
        gate,
        max_attempts=attempts,
        base_delay_s=0.01,
        max_delay_s=30,
        attempt_timeout_s=timeout_s,
        sleep=sleeps,
    )


async def test_429_then_success_waits_as_told_and_halves_concurrency(server: FakeOpenAIServer, model: Model) -> None:
    server.script(rate_limited(retry_after_s=7), text("ok now"))
    gate, sleeps = ProviderGate(None, 4), Sleeps()
    assert await retried(model, gate, sleeps) == "ok now"
    assert len(server.requests) == 2
    assert sleeps.delays == [7]
    assert gate.rate_limited == 1
    assert gate.concurrency.current == 2


async def test_500_then_success_is_retried_without_slowing_down(server: FakeOpenAIServer, model: Model) -> None:
    server.script(server_error(500), server_error(503), text("recovered"))
    gate, sleeps = ProviderGate(None, 4), Sleeps()
    assert await retried(model, gate, sleeps) == "recovered"
    assert len(server.requests) == 3
    assert len(sleeps.delays) == 2
    assert gate.rate_limited == 0
    assert gate.concurrency.current == 4


async def test_client_error_is_not_retried(server: FakeOpenAIServer, model: Model) -> None:
    server.script(Reply(status=400, body={"error": {"message": "bad request"}}))
    sleeps = Sleeps()
    with pytest.raises(ModelProviderError, match="bad request"):
        await retried(model, ProviderGate(None, 4), sleeps)
    assert len(server.requests) == 1
    assert sleeps.delays == []


async def warm_up(server: FakeOpenAIServer, model: Model) -> None:
    """One call first, so that the short timeouts below do not race the client's lazy set-up."""
    server.script(text("warm"))
    await model.aresponse(messages=ask())
    server.requests.clear()


async def test_timed_out_attempt_is_retried(server: FakeOpenAIServer, model: Model) -> None:
    await warm_up(server, model)
    server.script(delayed(text("too late"), 30), text("in time"))
    sleeps = Sleeps()
    assert await retried(model, ProviderGate(None, 4), sleeps, timeout_s=1.0) == "in time"
    assert len(server.requests) == 2
    assert len(sleeps.delays) == 1


async def test_timeouts_on_every_attempt_raise_timeout_error(server: FakeOpenAIServer, model: Model) -> None:
    await warm_up(server, model)
    server.script(delayed(text("late"), 30), delayed(text("late"), 30))
    with pytest.raises(TimeoutError):
        # 1 s, not less: an attempt's timeout covers sending its request, which a loaded machine can delay.
        await retried(model, ProviderGate(None, 4), Sleeps(), attempts=2, timeout_s=1.0)
    assert len(server.requests) == 2


async def test_malformed_body_is_transient(server: FakeOpenAIServer, model: Model) -> None:
    """A garbled body is the server's (or a proxy's) fault, like a 502: retried, then surfaced."""
    server.script(malformed(), text("clean"))
    assert await retried(model, ProviderGate(None, 4), Sleeps()) == "clean"
    assert len(server.requests) == 2

    server.script(malformed(), malformed())
    with pytest.raises(MalformedResponseError, match="not JSON") as caught:
        await retried(model, ProviderGate(None, 4), Sleeps(), attempts=2)
    assert isinstance(caught.value.__cause__, ModelProviderError), "agno's error stays in the chain"
    assert isinstance(caught.value.__cause__.__cause__, json.JSONDecodeError)
    assert len(server.requests) == 4


def test_local_model_strings_name_the_embedded_weights() -> None:
    from sentient.agents.models.providers import Provider, parse_model_string

    spec = parse_model_string("local:qwen2.5-coder-0.5b")
    assert (spec.provider, spec.model_id) == (Provider.LOCAL, "qwen2.5-coder-0.5b")
    assert parse_model_string("local").model_id == "local"  # the default weights
    with pytest.raises(ConfigError, match=r"no embedded model 'qwen-7b' \(there are: qwen2.5-coder-0.5b"):
        parse_model_string("local:qwen-7b")

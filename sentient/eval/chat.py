"""One plain chat call (no JSON schema, no tools) through the run's response cache.

The baselines and the judge talk to the model directly, not through an agent, but they go
through the same :class:`~sentient.agents.models.cache.ResponseCache` as the agents (same key
layout), so a re-run of an eval replays every system at 0 model calls.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from agno.metrics import RunMetrics
from agno.models.message import Message
from agno.models.response import ModelResponse
from agno.run.agent import RunOutput
from loguru import logger

from sentient.agents.models.cache import CachedResponse, ResponseCache
from sentient.agents.models.factory import ModelHandle
from sentient.agents.models.resilience import call_with_retries
from sentient.exceptions import AgentTimeoutError, ModelError


@dataclass(frozen=True)
class ChatReply:
    """The text a call returned and what it used (``model_calls`` is 0 for a cache hit)."""

    text: str
    input_tokens: int
    output_tokens: int
    cost_usd: float
    model_calls: int


async def chat(handle: ModelHandle, system: str, user: str, *, role: str, goal: str, timeout_s: float) -> ChatReply:
    """Ask ``handle``'s model one question; the cache answers repeats.

    ``role`` and ``goal`` (the question) go in the call's metadata, as an agent call's do (the
    scripted fake model answers by role).

    Raises:
        AgentTimeoutError: the call ran past ``timeout_s``.
        ModelError: the model or its provider failed.
    """
    key = ResponseCache.key(
        handle.name, [{"role": "system", "content": system}, {"role": "user", "content": user}], None, []
    )
    if handle.cache is not None and (cached := handle.cache.get(key)) is not None:
        return ChatReply(cached.content, cached.input_tokens, cached.output_tokens, 0.0, 0)

    async def request() -> tuple[ModelResponse, RunMetrics]:
        run = RunOutput(metrics=RunMetrics(), run_id=f"eval:{role}", metadata={"role": role, "goal": goal})
        messages = [Message(role="system", content=system), Message(role="user", content=user)]
        response = await handle.model.aresponse(messages=messages, run_response=run)
        assert run.metrics is not None
        return response, run.metrics

    try:
        if handle.gate is None:
            async with asyncio.timeout(timeout_s):
                response, metrics = await request()
        else:
            response, metrics = await call_with_retries(
                request,
                handle.gate,
                max_attempts=4,
                base_delay_s=1.0,
                max_delay_s=30.0,
                attempt_timeout_s=timeout_s,
                on_retry=lambda n, exc, delay: logger.warning(
                    "eval {} {}: {} (attempt {}), retrying in {:.1f}s", role, handle.name, exc, n, delay
                ),
            )
    except TimeoutError:
        raise AgentTimeoutError(timeout_s, agent=f"eval:{role}") from None
    except Exception as exc:  # the provider boundary, as in the agent runner
        raise ModelError(f"model call failed: {exc}", agent=f"eval:{role}") from exc
    content = response.content
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    used_in, used_out = metrics.input_tokens or 0, metrics.output_tokens or 0
    if handle.cache is not None:
        handle.cache.put(key, handle.name, CachedResponse(text, used_in, used_out))
    return ChatReply(text, used_in, used_out, handle.price.cost(used_in, used_out), 1)

"""The LLM judge: SimpleQA's three grades, parsed from the reply, asked over a loopback OpenAI-style server."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.openai_server import fake_openai_server, text

from sentient.agents.models.factory import ModelFactory, ModelHandle
from sentient.agents.registry import AgentRegistry
from sentient.eval.judge import Grade, judge, parse_current, parse_grade, parse_support
from sentient.settings import Settings


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("A", Grade.CORRECT),
        ("B.", Grade.INCORRECT),
        ("  C: NOT_ATTEMPTED", Grade.NOT_ATTEMPTED),
        ("The predicted answer is INCORRECT.", Grade.INCORRECT),
        ("NOT ATTEMPTED", Grade.NOT_ATTEMPTED),
        ("correct", Grade.CORRECT),
        ("A wrong answer, I think", None),  # a leading article is not the letter A
        ("maybe", None),
    ],
)
def test_parse_grade(reply: str, grade: Grade | None) -> None:
    assert parse_grade(reply) is grade


@pytest.mark.parametrize(
    ("reply", "supported", "current"),
    [
        ("A", True, True),
        (" B.", False, False),
        ("It is NOT SUPPORTED.", False, None),
        ("SUPPORTED", True, None),
        ("The report gives it as PAST.", None, False),
        ("CURRENT", None, True),
        ("A value of the past", None, False),  # a leading article is not the letter A
        ("unsure", None, None),
    ],
)
def test_two_way_judges_read_the_letter_or_their_own_labels(
    reply: str, supported: bool | None, current: bool | None
) -> None:
    assert parse_support(reply) is supported
    assert parse_current(reply) is current


def judge_handle(tmp_path: Path, base_url: str) -> ModelHandle:
    settings = Settings(cache_dir=tmp_path / "cache", results_dir=tmp_path / "results", cache_responses=True)
    profile = AgentRegistry.load(settings.config_dir).profile("general_agent")
    factory = ModelFactory(settings, profile, model=f"openai-compatible:{base_url}:judge-model", timeout_s=10)
    return factory.for_agent(profile.aggregator_for(True))


async def test_judge_sends_question_targets_and_answer_body_and_caches_the_grade(tmp_path: Path) -> None:
    with fake_openai_server(text("A")) as server:
        handle = judge_handle(tmp_path, server.base_url)
        answer = "The beacon is teal [1].\n\n## References\n\n1. Beacon log — `pier.md`"
        grade, reply = await judge(handle, "What colour is the beacon?", [["teal", "blue-green"]], answer, timeout_s=10)
        assert grade is Grade.CORRECT and reply.model_calls == 1
        (request,) = server.requests
        prompt = request["messages"][-1]["content"]
        assert "Question: What colour is the beacon?" in prompt
        assert "Gold target(s): teal | blue-green" in prompt
        assert "Predicted answer: The beacon is teal [1]." in prompt
        assert "References" not in prompt and "response_format" not in request

        again, replayed = await judge(
            handle, "What colour is the beacon?", [["teal", "blue-green"]], answer, timeout_s=10
        )
        assert again is Grade.CORRECT and replayed.model_calls == 0
        assert len(server.requests) == 1


async def test_a_question_asking_several_things_gives_the_judge_every_part(tmp_path: Path) -> None:
    with fake_openai_server(text("B")) as server:
        handle = judge_handle(tmp_path, server.base_url)
        parts = [["31 months"], ["22 months", "twenty-two months"]]
        grade, _ = await judge(handle, "How long then, and how long now?", parts, "31 months.", timeout_s=10)
        assert grade is Grade.INCORRECT
        prompt = server.requests[0]["messages"][-1]["content"]
        assert "Gold target(s): all of these: (31 months) AND (22 months or twenty-two months)" in prompt

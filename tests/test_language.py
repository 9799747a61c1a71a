"""The language a run writes in: a checked tag, the goal's language detected only when sure, and
one instruction at the end of every role's task, kept with the project so a resume writes in it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from sentient.agents.models.fake import ScriptedModel
from sentient.exceptions import ConfigError
from sentient.hitl.protocol import Approve, Modify, ReviewRequest
from sentient.language import check_language, detect_language, language_name
from sentient.projects import merge_settings
from sentient.settings import EngineSettings
from sentient.store import ProjectStore

GERMAN = "Write all of your text in German (Deutsch)"
GOAL = "Compare how asyncio and threads run concurrent work"


class ModifyOnce:
    """A reviewer that asks for one change of the root plan, then approves: the plan modifier runs."""

    def __init__(self) -> None:
        self.asked = 0

    async def review_plan(self, request: ReviewRequest) -> Approve | Modify:
        self.asked += 1
        return Modify(instructions="Add a step about the GIL") if self.asked == 1 else Approve()


def test_a_language_is_a_tag_babel_knows_and_anything_else_names_the_setting() -> None:
    assert check_language(" de ") == "de"
    assert check_language("pt_BR") == "pt-BR"
    assert language_name("de") == "German (Deutsch)"
    assert language_name("pt-BR") == "Portuguese (Brazil)"
    with pytest.raises(ValidationError, match="not a language tag"):
        EngineSettings(language="klingon")
    with pytest.raises(ConfigError) as info:
        merge_settings(EngineSettings(), {"language": "xx"})
    assert info.value.field == "language" and "'xx' is not a language tag" in str(info.value)


@pytest.mark.parametrize(
    ("goal", "expected"),
    [
        ("Erforsche Anwendungen von Quantencomputern im Gesundheitswesen", "de"),
        ("Wie sortiere ich ein Wörterbuch nach seinen Werten?", "de"),
        ("Comment trier un dictionnaire par valeur ?", "fr"),
        ("Research quantum computing applications in healthcare", "en"),
        # Short English questions langdetect reads as Welsh and Czech, unsure: no language is taken.
        ("What does yield do?", None),
        ("Why use venv?", None),
        ("42 + 17", None),
    ],
)
def test_the_goals_language_is_taken_only_when_the_detector_is_sure(goal: str, expected: str | None) -> None:
    assert detect_language(goal) == expected


async def test_every_roles_task_ends_with_the_runs_language(make_agent) -> None:
    model = ScriptedModel()
    agent = make_agent(model, reviewer=ModifyOnce(), review="root", answer_first=False, language="de")
    result = await agent.arun(GOAL, write_files=False)
    report = await make_agent(model, report_length="short", language="de").arun(GOAL, write_files=False)

    assert result.status == report.status == "completed"
    roles = {call.request.role for call in model.calls}
    assert roles >= {"planner", "plan_modifier", "atomizer", "executor", "verifier", "aggregator"}
    agents = {call.request.agent for call in model.calls}
    assert {"outliner", "section_writer"} <= agents, agents  # a report's roles too
    for call in model.calls:
        assert call.request.prompt.rstrip().splitlines()[-1].startswith(GERMAN), call.request.agent


@pytest.mark.parametrize("language", [None, "en", "en-GB"])
async def test_a_run_in_the_tasks_own_language_gets_the_tasks_as_written(make_agent, language: str | None) -> None:
    """No language (the model follows the goal's), or the language agents.yaml is written in."""
    model = ScriptedModel()
    await make_agent(model, answer_first=False, language=language).arun("What does yield do?", write_files=False)

    assert model.calls
    assert not any("Write all of your text in" in call.request.prompt for call in model.calls)


async def test_the_detected_language_is_stored_and_a_resume_writes_in_it(make_agent, tmp_path: Path) -> None:
    store = ProjectStore.open(tmp_path)
    goal = "Vergleiche, wie asyncio und Threads nebenläufige Arbeit ausführen"
    first = ScriptedModel()
    stopped = await make_agent(first, answer_first=False, max_llm_calls=2).arun(
        goal, project_id="p-de", store=store, write_files=False
    )
    assert stopped.status == "stopped"
    assert store.get_project("p-de").settings["language"] == "de"

    second = ScriptedModel()
    resumed = await make_agent(second).aresume("p-de", store=store, write_files=False, max_llm_calls=100)
    assert resumed.status == "completed" and second.calls
    assert all(GERMAN in call.request.prompt for call in second.calls)

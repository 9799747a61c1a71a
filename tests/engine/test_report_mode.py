"""Report mode: a goal that asks for a report gets an outline drafted from a quick search, a
subtree per section (its searches, each answering one question from its own passages, then a
writing step that joins the answers and has their citations verified), fan-out over the
items a "for each" part discovers, and a root that writes only the title and summary around the
sections, assembled in order. The quotes, the overview's (sentences of a search for the whole
goal, first) and those after each search's answers, are tested at the end; the other tests write
reports without them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sentient.agents.models.fake import (
    FakeRequest,
    ScriptedModel,
    asks_for,
    default_response,
    executor_answer,
    listed_passages,
    listed_sources,
)
from sentient.agents.report import UNCONFIRMED
from sentient.agents.schemas import (
    AggregationOutput,
    AtomizerOutput,
    Items,
    Outline,
    OutlineSection,
    ReportFrame,
)
from sentient.agents.schemas import RootAtomizerOutput as Root
from sentient.api import ProfiledSentientAgent
from sentient.context.citations import cited_numbers
from sentient.context.grounding import Reading
from sentient.graph.node import NodeType, TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus
from sentient.hitl.protocol import Approve, Modify, ReviewDecision, ReviewRequest
from sentient.settings import ReportLength, Settings
from sentient.store import ProjectStore
from sentient.tools.docs_search import DocsIndex

GOAL = "Write a briefing on the outages of the ferry booking service and how the team handles them"
OUTLINE = Outline(
    sections=[
        OutlineSection(title="Outages", find=["Which outages did the booking service have?"]),
        OutlineSection(
            title="Handling", find=["Who is paged when the service fails?", "How fast must a page be answered?"]
        ),
    ]
)
FRAME = ReportFrame(
    title="Ferry booking outages",
    summary="The service failed twice; the duty engineer answers pages within ten minutes.",
)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings with the shipped agent configuration: reports open with their overview."""
    base = tmp_path_factory.mktemp("shipped")
    return Settings(results_dir=base / "results", cache_dir=base / "cache")


@pytest.fixture(scope="module")
def settings(sections_only: Settings) -> Settings:
    return sections_only


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> DocsIndex:
    folder: Path = tmp_path_factory.mktemp("ferry")
    (folder / "outage_harbour.md").write_text(
        "# Outage report: harbour gate\n\nThe booking service failed at the harbour gate on 3 May; "
        "the ticket printer queue overflowed.\n"
    )
    (folder / "outage_island.md").write_text(
        "# Outage report: island pier\n\nThe booking service failed at the island pier on 9 June; "
        "a certificate had expired.\n"
    )
    (folder / "outage_quay.md").write_text(
        "# Outage report: east quay\n\nThe booking service failed at the east quay on 2 July; a disk filled up.\n"
    )
    (folder / "paging.md").write_text(
        "# Paging policy\n\nThe duty engineer is paged for an outage and must answer a page within ten minutes.\n"
    )
    return DocsIndex.from_folder(folder)


def agent(settings: Settings, docs: DocsIndex, model: ScriptedModel, **engine: Any) -> ProfiledSentientAgent:
    return ProfiledSentientAgent.create_with_profile(
        "deep_research_agent", settings=settings, model=model, docs=docs, **engine
    )


def atomizer(is_report: bool = True):
    """The atomizer: the root goal asks for a report (or not); everything else is one step."""

    def answer(request: FakeRequest) -> Root | AtomizerOutput:
        if asks_for(request, "is_report"):
            return Root(is_report=is_report, is_atomic=False)
        return AtomizerOutput(is_atomic=True)

    return answer


def section_writer(request: FakeRequest, key: str = "outage") -> Any:
    """Answers a section's question with an answer that states its key word ``key`` (every passage
    of ``docs`` mentions an outage), naming every passage it was shown as stating it."""
    answer = {"answer": f"Answer to: {request.goal} ({key})", "keys": [key], "sources": listed_sources(request.prompt)}
    return {"answers": [answer]}


def crashing_on(text: str):
    """The section writer, except that the model crashes on a prompt that holds ``text``."""

    def write(request: FakeRequest) -> Any:
        return RuntimeError("the model crashed") if text in request.prompt else section_writer(request)

    return write


def reader(*words: str, only: str = ""):
    """A verifier that, asked what a passage answers (without the answer), reads the first of
    ``words`` the passage holds; with ``only``, in that document's passage alone. Asked anything
    else, it accepts."""

    def read(request: FakeRequest) -> Any:
        if not asks_for(request, "answer"):
            return default_response(request)
        passage = request.prompt.split("## Sources you may cite as [n]")[-1].split("## Your task")[0].lower()
        if only and only not in passage:
            return Reading(answer="something else")
        return Reading(answer=next((w for w in words if w in passage), ""))

    return read


def outliner(outline: Outline = OUTLINE, items: tuple[str, ...] = ()):
    def answer(request: FakeRequest) -> Outline | Items:
        return outline if asks_for(request, "sections") else Items(items=list(items))

    return answer


def model_for(**script: Any) -> ScriptedModel:
    base: dict[str, Any] = {
        "atomizer": atomizer(),
        "planner": outliner(),
        "executor": section_writer,
        "verifier": reader("outage"),  # read alone, every passage gives the answer's key word
        "aggregator": FRAME,
    }
    return ScriptedModel(script={**base, **script})


async def test_a_report_goal_is_outlined_researched_per_section_and_assembled_in_order(settings, docs) -> None:
    model = model_for()
    result = await agent(settings, docs, model).arun(GOAL, write_files=False)

    assert result.status == "completed"
    graph, root = result.graph, result.graph.root
    parts = graph.children("root")
    assert [p.goal.splitlines()[0] for p in parts] == ["Outages", "Handling"]
    assert all(p.task_type is TaskType.WRITE and p.node_type is NodeType.PLAN for p in parts)
    # Each section is its own subtree: one search per thing to find, then a writing step on them.
    handling = graph.children(parts[1].task_id)
    assert [(c.task_type, c.node_type) for c in handling] == [
        (TaskType.SEARCH, NodeType.EXECUTE),
        (TaskType.SEARCH, NodeType.EXECUTE),
        (TaskType.WRITE, NodeType.EXECUTE),
    ]
    assert handling[2].depends_on == [handling[0].task_id, handling[1].task_id]
    # The outline was drafted from a quick search: the outliner saw passages.
    (outline_call,) = model.calls_for(role="planner")
    assert "Sources you may cite" in outline_call.request.prompt
    assert "Draft the outline of a report" in outline_call.request.prompt
    # Each search answers its question in one call that sees only its own passages; the writing
    # step joins the answers in order without a call. The verifier reads each passage an answer
    # names, for its question alone.
    roles = [c.request.role for c in model.calls]
    searches = [n for n in graph if n.task_type is TaskType.SEARCH and n.parent_id is not None]
    assert roles.count("executor") == 3 and roles.count("verifier") == sum(len(n.sources) for n in searches)
    assert roles.count("aggregator") == 1 and roles.count("planner") == 1
    (answer,) = model.calls_for(role="executor", task_id=handling[1].task_id)
    assert answer.request.agent == "section_writer"
    assert len(listed_sources(answer.request.prompt)) == len(handling[1].sources)
    assert "Section of the report: Handling" in answer.request.prompt
    assert "Answer to: Who is paged" not in answer.request.prompt  # no other search's answer
    assert not model.calls_for(role="executor", task_id=handling[2].task_id)
    section = handling[2].result or ""
    assert section.index("Answer to: Who is paged when the service fails? (outage) [") < section.index(
        "Answer to: How fast"
    )
    # The root writes only the title and summary; the sections follow as written.
    (assembly,) = model.calls_for(role="aggregator")
    assert "Answer to: Who is paged when the service fails?" in assembly.request.prompt
    text = root.result or ""
    assert text.startswith("# Ferry booking outages\n\nThe service failed twice")
    assert text.index("## Outages\n\nAnswer to: Which outages") < text.index("## Handling\n\nAnswer to: Who is paged")
    assert "Answer to: Which outages did the booking service have? (outage) [" in text
    assert "Answer to: How fast must a page be answered? (outage) [" in text
    report = result.report
    assert report is not None and report.title == "Ferry booking outages"
    assert report.references and all(r.verified for r in report.references)


async def test_report_length_writes_a_report_of_that_size_without_asking_the_atomizer(settings, docs) -> None:
    model = model_for()
    result = await agent(settings, docs, model, report_length="short").arun("Which port?", write_files=False)

    assert result.status == "completed"
    assert not model.calls_for(role="atomizer")  # the setting decided: even a question is written as a report
    short = agent(settings, docs, model).profile.prompts.report_size(ReportLength.SHORT)
    (outline_call,) = model.calls_for(role="planner")
    assert f"at most {short.sections} (none when" in outline_call.request.prompt
    answer = model.calls_for(role="executor")[0].request  # a section's words, shared by its questions
    assert f"in about {round(short.section_words / short.searches)} words" in answer.prompt
    assert (result.graph.root.result or "").startswith("# Ferry booking outages")


async def test_a_goal_the_atomizer_does_not_find_a_report_is_not_outlined(settings, docs) -> None:
    plan = PlanOutput(
        subtasks=[SubTask(goal="Which outages?", task_type="SEARCH"), SubTask(goal="Who is paged?", task_type="SEARCH")]
    )
    model = model_for(
        atomizer=atomizer(is_report=False),
        planner=plan,
        executor=lambda request: executor_answer(request, "An answer."),
        verifier=default_response,
        aggregator=AggregationOutput(answer="An answer [1]."),
    )
    result = await agent(settings, docs, model, max_depth=1).arun(GOAL, write_files=False)

    assert result.status == "completed"
    assert len(model.calls_for(role="planner")) == 1
    assert not any(asks_for(c.request, "sections") for c in model.calls_for(role="planner"))
    assert result.graph.root.result == "An answer [1]."
    assert not any(c.task_type is TaskType.WRITE and c.node_type is NodeType.PLAN for c in result.graph)


FAN_OUT_GOAL = (
    "Write a briefing on the outages of the booking service: for each outage, what failed, when, and the cause"
)


async def test_a_goal_asking_the_same_of_each_item_fans_out_over_the_items_found(settings, docs) -> None:
    fan_out = Outline(
        for_each="outage",
        each=["what failed", "when", "the cause", "who was blamed"],  # the last is not asked by the goal
        sections=[OutlineSection(title="Paging", find=["Who is paged?"])],
    )
    # No passage names the first two: the second is a file's name ("outage_quay.md"), shown with its passage.
    items = ("sea serpent", "Outage_quay", "harbour gate", "island pier", "east quay")
    model = model_for(planner=outliner(fan_out, items))
    result = await agent(settings, docs, model, max_items=2).arun(FAN_OUT_GOAL, write_files=False)

    assert result.status == "completed"
    # The report is its items: the facts the goal asks of each, in at most the size's searches
    # per section (2 here); the outliner's other sections are left out.
    (part,) = result.graph.children("root")
    assert part.goal == "outage\n{item} = outage\n- what failed; when\n- the cause"
    discover = next(c for c in model.calls_for(role="planner") if not asks_for(c.request, "sections"))
    assert "Name each single outage" in discover.request.prompt
    assert "Sources you may cite" in discover.request.prompt
    sections = result.graph.children(part.task_id)
    assert [s.goal for s in sections] == [  # one per item, capped by max_items, from the per-item lines
        "harbour gate\n- harbour gate: what failed; when\n- harbour gate: the cause",
        "island pier\n- island pier: what failed; when\n- island pier: the cause",
    ]
    assert all(s.task_type is TaskType.WRITE and s.node_type is NodeType.PLAN for s in sections)
    # Each item's search looks for that item.
    search = result.graph.children(sections[1].task_id)[0]
    assert search.task_type is TaskType.SEARCH and search.sources[0].ref.endswith("outage_island.md")
    text = result.graph.root.result or ""
    assert text.index("## Outage") < text.index("### harbour gate") < text.index("### island pier")
    assert "## Paging" not in text
    assert "east quay" not in text.split("### island pier")[0]


@pytest.mark.parametrize("fans_out", [True, False])
async def test_the_embedded_outliner_stops_after_one_section_once_the_goal_fans_out(settings, docs, fans_out) -> None:
    # A fan-out's sections are not used, so under a grammar the outline stops at the first one
    # (the model cannot close its JSON before writing one); other outlines are written whole.
    sections = [OutlineSection(title=title, find=["Who is paged?"]) for title in ("Paging", "Pay", "Shifts")]
    outline = Outline(for_each="outage" if fans_out else "", each=["what failed"], sections=sections)
    model = model_for(planner=outliner(outline, ("harbour gate",)))
    model.grammar = True
    result = await agent(settings, docs, model).arun(FAN_OUT_GOAL, write_files=False)

    assert result.status == "completed"
    written = next(c for c in model.calls_for(role="planner") if asks_for(c.request, "sections")).output
    assert ("Pay" in written, "Shifts" in written) == (not fans_out, not fans_out)
    (part, *others) = result.graph.children("root")
    assert (part.goal == "outage\n{item} = outage\n- what failed") == fans_out
    assert len(others) == (0 if fans_out else 2)
    assert "cut off" not in " ".join(result.graph.root.warnings)


@pytest.mark.parametrize("verifier_fails", [False, True])
async def test_an_items_facts_are_read_only_from_passages_that_name_the_item(settings, docs, verifier_fails) -> None:
    # Every outage report states what failed; only the item's own one names the item.
    fan_out = Outline(for_each="outage", each=["what failed"])
    verifier = (lambda request: RuntimeError("the model crashed")) if verifier_fails else reader("outage")
    model = model_for(planner=outliner(fan_out, ("harbour gate", "island pier")), verifier=verifier)
    result = await agent(settings, docs, model).arun(FAN_OUT_GOAL, write_files=False)

    assert result.status == "completed"
    for section in result.graph.children("root.0"):
        search, write = result.graph.children(section.task_id)
        own = f"outage_{section.goal.split()[0]}.md"
        assert [s.ref.rsplit("/", 1)[-1] for s in search.sources] == [own]
        (call,) = [c for c in model.calls_for(role="executor") if c.request.goal == search.goal]
        assert "outage_quay" not in call.request.prompt and "paging" not in call.request.prompt
        # A passage the verifier could not read is not cited.
        assert [s.ref.rsplit("/", 1)[-1] for s in write.sources if s.verified] == ([] if verifier_fails else [own])
    report = result.report
    assert report is not None
    cited = [r.ref.rsplit("/", 1)[-1] for r in report.references]
    assert cited == ([] if verifier_fails else ["outage_harbour.md", "outage_island.md"])


ROUTES_GOAL = "Write a briefing on the ferry routes: for each route, its crossing time and fare"
ROUTES = Outline(for_each="route", each=["crossing time", "fare"])
TIMETABLE = (
    "# Timetable\n\n| Route | Crossing time | Fare |\n|---|---|---|\n| Gull Rock | 40 minutes | 8 euros |\n"
    "| Seal Point | 25 minutes | 6 euros |\n"
)


async def test_items_are_looked_for_with_what_is_asked_of_each(settings, tmp_path: Path) -> None:
    # The table listing the routes says "route" once; six news items say it often. What is asked
    # of each route (its crossing time and fare) are the table's columns.
    for n in range(6):
        (tmp_path / f"news_{n}.md").write_text(
            f"# Harbour news {n}\n\nThe route past the harbour was busy; a new route is planned and the old route stays.\n"
        )
    (tmp_path / "timetable.md").write_text(TIMETABLE)
    model = model_for(
        planner=outliner(ROUTES, ("Gull Rock", "Seal Point")),
        executor=lambda request: section_writer(request, "euros"),
    )
    index = DocsIndex.from_folder(tmp_path)
    result = await agent(settings, index, model, max_items=2).arun(ROUTES_GOAL, write_files=False)

    (part,) = result.graph.children("root")
    assert [s.goal.splitlines()[0] for s in result.graph.children(part.task_id)] == ["Gull Rock", "Seal Point"]


async def test_an_items_searches_read_the_passage_the_item_was_found_in(settings, tmp_path: Path) -> None:
    # The timetable lists the routes with their facts; for one route's facts, a search ranks the
    # news pages about that route above it. The route was found in the timetable, so its
    # searches read that passage too, and no other route's news.
    for route in ("Gull Rock", "Seal Point"):
        for n in range(6):
            (tmp_path / f"{route.split()[0].lower()}_{n}.md").write_text(
                f"# {route} news {n}\n\nThe {route} crossing time and the {route} fare were discussed again.\n"
            )
    (tmp_path / "timetable.md").write_text(TIMETABLE)
    index = DocsIndex.from_folder(tmp_path)
    assert "timetable.md" not in {hit.source for hit in index.search("Seal Point: crossing time; fare\nSeal Point", 4)}
    model = model_for(
        planner=outliner(ROUTES, ("Gull Rock", "Seal Point")),
        executor=lambda request: section_writer(request, "fare"),
    )
    result = await agent(settings, index, model, max_items=2).arun(ROUTES_GOAL, write_files=False)

    assert result.status == "completed"
    (part,) = result.graph.children("root")
    for section in result.graph.children(part.task_id):
        searches = [c for c in result.graph.children(section.task_id) if c.task_type is TaskType.SEARCH]
        for search in searches:
            read = [s.ref.rsplit("/", 1)[-1] for s in search.sources]
            assert read[0] == "timetable.md" and len(read) == len(set(read))
            assert all(name.startswith(section.goal.split()[0].lower()) for name in read[1:])


async def test_an_items_searches_read_several_passages_of_its_own_document(settings, tmp_path: Path) -> None:
    # Each route's page states its fare in one section and its crossing time in another, far
    # apart: two passages of one document, which a search shows one of for other questions.
    filler = "The harbour office keeps the printed timetable by the door. " * 20
    for route, fare, minutes in (("Gull Rock", "8 euros", "40 minutes"), ("Seal Point", "6 euros", "25 minutes")):
        (tmp_path / f"{route.split()[0].lower()}.md").write_text(
            f"# {route}\n\n## Fares\n\nThe {route} fare is {fare}. {filler}\n\n"
            f"## Notes\n\n{filler}\n\n## Crossing\n\nThe {route} crossing takes {minutes}. {filler}\n"
        )
    index = DocsIndex.from_folder(tmp_path)
    model = model_for(
        planner=outliner(Outline(for_each="route", each=["fare and crossing time"]), ("Gull Rock", "Seal Point")),
        executor=lambda request: section_writer(request, "euros"),
    )
    goal = "Write a briefing on the ferry routes: for each route, its fare and crossing time"
    result = await agent(settings, index, model, max_items=2).arun(goal, write_files=False)

    assert result.status == "completed"
    (part,) = result.graph.children("root")
    for section in result.graph.children(part.task_id):
        search = result.graph.children(section.task_id)[0]  # one search asks both
        route = section.goal.splitlines()[0]
        shown = " ".join(s.snippet for s in search.sources)
        assert f"The {route} fare is" in shown and f"The {route} crossing takes" in shown
        assert {s.ref for s in search.sources} == {f"{route.split()[0].lower()}.md"}


async def test_items_the_goal_does_not_name_are_not_fanned_out_over(settings, docs) -> None:
    # The kinds the outliner's instructions give as examples, copied: the goal asks for no such items.
    copied = Outline(
        for_each="each incident, each service",
        each=["what failed"],
        sections=[OutlineSection(title="Outages", find=["Which outages were there?"])],
    )
    model = model_for(planner=outliner(copied, ("harbour gate",)))
    result = await agent(settings, docs, model).arun(FAN_OUT_GOAL, write_files=False)

    assert result.status == "completed"
    assert [p.goal for p in result.graph.children("root")] == ["Outages\n- Which outages were there?"]
    assert len(model.calls_for(role="planner")) == 1  # no items were looked for


async def test_a_section_states_each_answer_with_the_passages_it_names_and_leaves_out_the_rest(settings, docs) -> None:
    outline = Outline(sections=[OutlineSection(title="Paging", find=["Who is paged; how fast must they answer?"])])

    def writer(request: FakeRequest) -> dict[str, Any]:
        return {
            "answers": [
                {"answer": "The duty engineer [7].", "sources": [1, 1]},  # its own markers are not trusted
                {"answer": "Within an hour.", "sources": []},  # no passage states it
            ]
        }

    model = model_for(planner=outliner(outline), executor=writer, verifier=reader("duty engineer"))
    result = await agent(settings, docs, model).arun(GOAL, write_files=False)

    (search, write) = result.graph.children(result.graph.children("root")[0].task_id)
    assert search.result == "The duty engineer. [1]"
    assert write.result == "The duty engineer. [1]" and "an hour" not in (result.graph.root.result or "")


class Reviewer:
    """Decides each node's first review as told (by task id), approves the rest, records every request."""

    def __init__(self, decisions: dict[str, ReviewDecision]) -> None:
        self._decisions = dict(decisions)
        self.requests: dict[str, ReviewRequest] = {}

    async def review_plan(self, request: ReviewRequest) -> ReviewDecision:
        self.requests.setdefault(request.task_id, request)
        return self._decisions.pop(request.task_id, Approve())


async def test_the_outline_and_the_discovered_items_are_reviewed_like_a_plan(settings, docs) -> None:
    outline = Outline(
        for_each="outage", each=["what failed"], sections=[OutlineSection(title="Paging", find=["Who is paged?"])]
    )
    # The reviewer renames the second section and changes what it must find, then drops a discovered item.
    edited_outline = PlanOutput(
        subtasks=[
            SubTask(goal="Outages\n{item} = outage report\n- What failed?", task_type=TaskType.WRITE),
            SubTask(goal="Who answers pages\n- How fast must a page be answered?", task_type=TaskType.WRITE),
        ]
    )
    edited_items = PlanOutput(
        subtasks=[
            SubTask(goal="east quay\n- What failed?", task_type=TaskType.WRITE),
            SubTask(goal="harbour gate\n- What failed?", task_type=TaskType.WRITE),
        ]
    )
    reviewer = Reviewer({"root": Modify(plan=edited_outline), "root.0": Modify(plan=edited_items)})
    model = model_for(planner=outliner(outline, ("harbour gate", "island pier", "east quay")))
    result = await ProfiledSentientAgent.create_with_profile(
        "deep_research_agent", settings=settings, model=model, docs=docs, reviewer=reviewer, review="all"
    ).arun(FAN_OUT_GOAL, write_files=False)

    assert result.status == "completed"
    outline_review, items_review = reviewer.requests["root"], reviewer.requests["root.0"]
    assert [s.goal.splitlines()[0] for s in outline_review.plan.subtasks] == ["outage"]
    assert [s.goal.splitlines()[0] for s in items_review.plan.subtasks] == ["harbour gate", "island pier", "east quay"]
    outages, paging = result.graph.children("root")
    assert [s.goal.splitlines()[0] for s in result.graph.children(outages.task_id)] == ["east quay", "harbour gate"]
    assert result.graph.children(paging.task_id)[0].goal == "How fast must a page be answered?"
    text = result.graph.root.result or ""
    assert text.index("### east quay") < text.index("### harbour gate") < text.index("## Who answers pages")
    assert "island pier" not in text and "## Paging" not in text


async def test_a_citation_whose_passage_reads_otherwise_is_not_verified_and_not_shown(settings, docs) -> None:
    outline = Outline(sections=[OutlineSection(title="Paging", find=["Who is paged when the service fails?"])])
    # Every passage holds the answer's key word; read alone, only the paging policy gives it.
    model = model_for(planner=outliner(outline), verifier=reader("outage", only="paging.md"))
    result = await agent(settings, docs, model).arun(GOAL, write_files=False)

    search = result.graph.get("root.0.0")
    readings = model.calls_for(role="verifier")  # each passage the answer names, read on its own
    assert len(readings) == len(search.sources) > 1
    for call in readings:
        assert len(listed_sources(call.request.prompt)) == 1
        assert "Who is paged when the service fails?" in call.request.prompt and "Answer to:" not in call.request.prompt
    assert any("gave another answer: not cited" in w for w in search.warnings)
    write = result.graph.get("root.0.1")
    assert [s.ref.rsplit("/", 1)[-1] for s in write.sources if s.verified] == ["paging.md"]
    report = result.report
    assert report is not None
    assert [r.ref.rsplit("/", 1)[-1] for r in report.references] == ["paging.md"]
    assert all(r.verified for r in report.references)


@pytest.mark.parametrize(
    ("reading", "verified"),
    [
        ("9 June", True),  # part of the answer
        ("3 May, at the island pier", False),  # another answer that shares one of its key words
    ],
)
async def test_a_report_answer_is_verified_only_by_a_reading_that_is_part_of_it(
    settings, docs, reading, verified
) -> None:
    outline = Outline(sections=[OutlineSection(title="Outages", find=["When did the booking service fail?"])])
    answer = "The booking service failed on 9 June at the island pier."

    def writer(request: FakeRequest) -> Any:
        keys = ["9 June", "island pier"]
        return {"answers": [{"answer": answer, "keys": keys, "sources": listed_sources(request.prompt)}]}

    def read(request: FakeRequest) -> Any:
        return Reading(answer=reading) if asks_for(request, "answer") else default_response(request)

    model = model_for(planner=outliner(outline), executor=writer, verifier=read)
    result = await agent(settings, docs, model).arun(GOAL, write_files=False)

    search = result.graph.get("root.0.0")
    (reading_call,) = model.calls_for(role="verifier")  # the one passage that holds its words
    assert "outage_island.md" in reading_call.request.prompt
    assert [s.ref.rsplit("/", 1)[-1] for s in search.sources if s.verified] == (
        ["outage_island.md"] if verified else []
    )
    assert (UNCONFIRMED in (search.result or "")) is not verified


async def test_each_answer_of_an_items_search_is_read_for_its_own_part_of_the_question(settings, docs) -> None:
    # One search asks two facts of the item; its writer answers each. Read for the whole question,
    # the passage gives only the first fact, so the second answer could never be confirmed.
    fan_out = Outline(for_each="outage", each=["what failed", "when", "the cause"])
    facts = {"what failed": ("The booking service failed.", "booking service"), "when": ("On 9 June.", "9 June")}

    def writer(request: FakeRequest) -> Any:
        parts = request.goal.removeprefix("island pier: ").split("; ")
        answers = [facts.get(part, ("The cause: a certificate had expired.", "certificate")) for part in parts]
        sources = listed_sources(request.prompt)[:1]
        return {"answers": [{"answer": text, "keys": [key], "sources": sources} for text, key in answers]}

    def read(request: FakeRequest) -> Any:
        if not asks_for(request, "answer"):
            return default_response(request)
        question = request.prompt.split("Question: ")[-1].splitlines()[0]
        return Reading(answer="9 June" if question.endswith("when") else "the booking service")

    model = model_for(planner=outliner(fan_out, ("island pier",)), executor=writer, verifier=read)
    result = await agent(settings, docs, model).arun(FAN_OUT_GOAL, write_files=False)

    assert result.status == "completed"
    search = result.graph.children("root.0.0")[0]
    assert search.goal == "island pier: what failed; when"
    asked = [call.request.prompt.split("Question: ")[-1].splitlines()[0] for call in model.calls_for(role="verifier")]
    assert {"island pier: what failed", "island pier: when"} <= set(asked)
    # One line per fact, named by the fact unless the answer says it.
    assert search.result == "- **What failed:** The booking service failed. [1]\n- **When:** On 9 June. [1]"
    cause, write = result.graph.children("root.0.0")[1:]
    assert cause.result.startswith("- The cause: a certificate had expired.")
    assert write.result == f"{search.result}\n{cause.result}"  # the item's section is one list


async def test_only_passages_that_hold_an_answers_words_stay_cited(settings, docs) -> None:
    outline = Outline(sections=[OutlineSection(title="Paging", find=["Who is paged when the service fails?"])])
    model = model_for(
        planner=outliner(outline),
        executor=lambda request: section_writer(request, "duty engineer"),
        verifier=reader("duty engineer"),
    )
    result = await agent(settings, docs, model).arun(GOAL, write_files=False)

    search = result.graph.get("root.0.0")  # the section's one search
    assert len(search.sources) > 1  # shown several passages, it named them all
    (verifier,) = model.calls_for(role="verifier")  # only the one holding "duty engineer" is read
    assert len(listed_sources(verifier.request.prompt)) == 1
    report = result.report
    assert report is not None
    assert [r.ref.rsplit("/", 1)[-1] for r in report.references] == ["paging.md"]


async def test_an_answer_whose_named_passage_does_not_hold_it_cites_a_shown_passage_that_does(settings, docs) -> None:
    outline = Outline(sections=[OutlineSection(title="Paging", find=["How fast must an outage page be answered?"])])

    def writer(request: FakeRequest) -> dict[str, Any]:
        passages = listed_passages(request.prompt)
        wrong = next(n for n, text in passages.items() if "ten minutes" not in text)
        return {
            "answers": [
                # The small model names the wrong passage; another passage shown holds its words.
                {"answer": "Within ten minutes.", "keys": ["ten minutes"], "sources": [wrong]},
                # Its only key is a word of the question, which every passage holds: it shows nothing.
                {"answer": "The outage page.", "keys": ["outage"], "sources": []},
            ]
        }

    model = model_for(planner=outliner(outline), executor=writer, verifier=reader("ten minutes"))
    result = await agent(settings, docs, model).arun(GOAL, write_files=False)

    search = result.graph.get("root.0.0")
    assert (search.result or "").startswith("Within ten minutes. [")
    (cited,) = cited_numbers(search.result or "")
    assert search.sources[cited - 1].ref.endswith("paging.md") and search.sources[cited - 1].verified
    assert "outage page" not in (result.graph.root.result or "")


async def test_an_answer_no_passage_holds_is_left_out(settings, docs) -> None:
    outline = Outline(sections=[OutlineSection(title="Paging", find=["Who is paged when the service fails?"])])
    model = model_for(planner=outliner(outline), executor=lambda request: section_writer(request, "the night nurse"))
    result = await agent(settings, docs, model, failure_policy="continue").arun(GOAL, write_files=False)

    search = result.graph.get("root.0.0")  # the section's one search
    assert search.result == "" and "no passage found answers the question" in search.warnings
    assert not model.calls_for(role="verifier")


async def test_an_answer_no_passage_is_read_to_state_stays_marked_as_not_confirmed(settings, docs) -> None:
    outline = Outline(sections=[OutlineSection(title="Paging", find=["Who is paged when the service fails?"])])
    # The passages hold the answer's key word, but read alone none of them gives the answer.
    model = model_for(planner=outliner(outline), verifier=reader("outage", only="no such document"))
    result = await agent(settings, docs, model).arun(GOAL, write_files=False)

    search = result.graph.get("root.0.0")
    assert search.result == "Answer to: Who is paged when the service fails? (outage) *(not confirmed by the sources)*"
    assert not any(s.verified for s in search.sources)
    report = result.report
    assert report is not None and report.references == []
    assert "*(not confirmed by the sources)*" in (report.answer or "")
    # The summary cites nothing, so with no confirmed answer there is none: the goal titles the report.
    assert not model.calls_for(role="aggregator")
    assert (report.answer or "").startswith(f"# {GOAL}\n\n## Paging")
    assert "no section's answer is confirmed by the sources: the report has no summary" in result.graph.root.warnings


async def test_a_summary_is_written_when_one_answer_is_confirmed(settings, docs) -> None:
    def writer(request: FakeRequest) -> Any:  # read alone, no passage gives "ten minutes"
        return section_writer(request, "ten minutes" if "How fast" in request.goal else "outage")

    model = model_for(executor=writer)
    result = await agent(settings, docs, model).arun(GOAL, write_files=False)

    assert UNCONFIRMED in (result.graph.get("root.1.1").result or "")
    (frame,) = model.calls_for(role="aggregator")
    assert "not confirmed" not in frame.request.prompt  # written from what the sections state, not the mark
    assert (result.graph.root.result or "").startswith(f"# {FRAME.title}\n\n{FRAME.summary}")


async def test_an_answer_that_states_only_words_of_its_question_is_left_out(settings, docs) -> None:
    # "The page is answered as follows:" names nothing the question does not: every passage
    # holding "page" cannot show that it states an answer.
    outline = Outline(sections=[OutlineSection(title="Paging", find=["How fast must a page be answered?"])])

    def writer(request: FakeRequest) -> Any:
        sources = listed_sources(request.prompt)
        return {"answers": [{"answer": "A page must be answered as follows:", "keys": ["page"], "sources": sources}]}

    model = model_for(planner=outliner(outline), executor=writer, verifier=reader("page"))
    result = await agent(settings, docs, model, failure_policy="continue").arun(GOAL, write_files=False)

    search = result.graph.get("root.0.0")
    assert search.result == "" and "no passage found answers the question" in search.warnings
    assert not model.calls_for(role="verifier")


async def test_an_answer_that_restates_its_question_is_left_out(settings, docs) -> None:
    outline = Outline(sections=[OutlineSection(title="Paging", find=["How fast must a page be answered?"])])

    def writer(request: FakeRequest) -> Any:
        # Its key value is real, but the answer is the question's own words.
        answer = {"answer": "How fast must a page be answered", "keys": ["ten minutes"], "sources": [1]}
        return {"answers": [answer]}

    model = model_for(planner=outliner(outline), executor=writer, verifier=reader("ten minutes"))
    result = await agent(settings, docs, model, failure_policy="continue").arun(GOAL, write_files=False)

    search = result.graph.get("root.0.0")
    assert search.result == "" and "no passage found answers the question" in search.warnings


async def test_a_section_that_fails_is_left_out_and_listed_as_not_covered(settings, docs) -> None:
    model = model_for(executor=crashing_on("Section of the report: Handling"))
    result = await agent(settings, docs, model, failure_policy="continue").arun(GOAL, write_files=False)

    assert result.status == "completed_with_failures"
    text = result.graph.root.result or ""
    assert "## Outages" in text and "## Handling" not in text
    report = result.report
    assert report is not None and [m.goal.splitlines()[0] for m in report.missing] == ["Handling"]
    assert result.graph.get("root.1").status is TaskStatus.FAILED


async def test_a_report_stopped_midway_resumes_as_a_report(settings, docs, tmp_path: Path) -> None:
    store = ProjectStore.open(tmp_path / "results")
    try:
        # The atomizer, the outline and one section's first answer, then the call budget is spent.
        first = model_for()
        stopped = await agent(settings, docs, first, max_llm_calls=3, max_concurrent_llm_calls=1).arun(
            GOAL, project_id="p-report", store=store, write_files=False
        )
        assert stopped.status == "stopped"
        second = model_for()
        resumed = await agent(settings, docs, second).aresume(
            "p-report", store=store, write_files=False, max_llm_calls=100
        )
    finally:
        store.close()

    assert resumed.status == "completed"
    assert not second.calls_for(role="atomizer") and not second.calls_for(role="planner")  # the outline is kept
    text = resumed.graph.root.result or ""
    assert text.startswith("# Ferry booking outages") and text.index("## Outages") < text.index("## Handling")


# -- the quotes -----------------------------------------------------------------------------


async def test_a_report_opens_with_the_sentences_of_a_search_for_its_goal_closest_to_it(shipped, docs) -> None:
    model = model_for()
    result = await agent(shipped, docs, model, report_length="short").arun(GOAL, write_files=False)

    assert result.status == "completed"
    overview, *parts = result.graph.children("root")
    assert [p.goal.splitlines()[0] for p in parts] == ["Outages", "Handling"]
    assert overview.goal == f"Key passages\n- {GOAL}"  # reviewed and edited like any part
    search, write = result.graph.children(overview.task_id)
    assert write.task_type is TaskType.WRITE
    assert search.task_type is TaskType.SEARCH and search.goal == GOAL
    # No model call: the sentences closest in meaning to the goal, quoted as their passage writes
    # them, under its headings, citing it verified.
    assert not model.calls_for(task_id=search.task_id)
    text = result.graph.root.result or ""
    assert text.index("## Key passages") < text.index("## Outages") < text.index("## Handling")
    quoted = text.split("## Key passages")[1].split("## Outages")[0].strip().splitlines()
    short = agent(shipped, docs, model).profile.prompts.report_size(ReportLength.SHORT)
    assert 1 <= len(quoted) <= short.overview_quotes
    passages = {s.snippet for s in search.sources}
    for line in quoted:
        heading, _, rest = line.removeprefix("> - **").partition(":** ")
        quote, _, marker = rest.rpartition(" ")
        assert heading.startswith("Outage report") or heading == "Paging policy"
        source = search.sources[cited_numbers(marker)[0] - 1]
        assert source.verified and source.title.endswith(heading) and source.snippet in passages
        assert all(piece in source.snippet for piece in quote.split(" … "))  # "…" where sentences are left out
        assert not quote.startswith(heading)  # the passage's text without the headings it stands under


async def test_a_size_that_quotes_nothing_has_no_overview(settings, docs) -> None:
    result = await agent(settings, docs, model_for(), report_length="short").arun(GOAL, write_files=False)

    assert [p.goal.splitlines()[0] for p in result.graph.children("root")] == ["Outages", "Handling"]
    assert "## Key passages" not in (result.graph.root.result or "")


async def test_each_search_quotes_its_passages_sentences_closest_to_its_question_after_its_answers(
    shipped, docs
) -> None:
    model = model_for(executor=crashing_on("How fast must a page be answered?"))
    result = await agent(shipped, docs, model, report_length="short").arun(GOAL, write_files=False)

    assert result.status == "completed"
    _, outages, handling = result.graph.children("root")
    size = agent(shipped, docs, model).profile.prompts.report_size(ReportLength.SHORT)
    found, _ = result.graph.children(outages.task_id)
    answer, quotes = (found.result or "").split("\n\n")
    assert answer.startswith("Answer to: Which outages did the booking service have? (outage) [")
    quoted = []
    for line in quotes.splitlines():
        quote, _, marker = line.partition(":** ")[2].rpartition(" ")
        source = found.sources[cited_numbers(marker)[0] - 1]
        assert source.verified and all(piece in source.snippet for piece in quote.split(" … "))
        quoted += quote.split(" … ")
    assert 1 <= len(quoted) <= size.search_quotes
    # A search whose question the model could not answer still quotes its passages.
    paged = result.graph.children(handling.task_id)[1]
    assert paged.goal == "How fast must a page be answered?"
    assert (paged.result or "").startswith("> - **") and "Answer to" not in (paged.result or "")
    assert "within ten minutes" in (result.graph.root.result or "")
    # The section is its searches' answers, then their quotes.
    written = result.graph.children(handling.task_id)[-1].result or ""
    assert written.startswith("Answer to: Who is paged") and "\n> - **" in written
    assert written.rindex("Answer to") < written.index("> - **")

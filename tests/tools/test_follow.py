"""Following references: a second docs search for the names the best passage mentions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from sentient.tools import DocsIndex
from sentient.tools.base import ToolSettings
from sentient.tools.follow import ADDED, CUT_AFTER, KEEP, bridge_terms, merge, subject
from sentient.tools.toolbox import ToolBox

QUESTION = "What is the chat channel of the team that owns the Cobblestone identity service?"


@pytest.fixture
def linked_docs(tmp_path: Path) -> DocsIndex:
    """A service page that names its owning team, a directory row that only names the team,
    and pages about team chat channels that the question's words rank above the directory."""
    (tmp_path / "cobblestone.md").write_text(
        "# Cobblestone identity service\n\nCobblestone is the sign-on service. It is run by Team Bittern.\n"
    )
    (tmp_path / "directory.md").write_text("# Directory\n\nBittern: #bittern-sec (security).\n")
    for i in range(6):
        (tmp_path / f"chat_{i}.md").write_text(
            f"# Chat etiquette {i}\n\nEvery team keeps its chat channel tidy; the channel of a team "
            f"that owns a service announces outages of the service there (rule {i}).\n"
        )
    with DocsIndex.from_folder(tmp_path) as index:
        yield index


def test_following_shows_the_document_the_first_passage_links_to(linked_docs: DocsIndex) -> None:
    plain = linked_docs.search(QUESTION, 5)
    followed = linked_docs.search(QUESTION, 5, follow=True)

    assert "directory.md" not in [h.source for h in plain]  # nothing in the question says "Bittern"
    assert [h.source for h in followed[:KEEP]] == [h.source for h in plain[:KEEP]]
    directory = next(h for h in followed if h.source == "directory.md")
    assert "#bittern-sec" in directory.snippet
    assert len(followed) == 5


def test_without_names_to_follow_the_search_is_the_plain_one(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("the quay crane lifts containers at dawn.\n")
    (tmp_path / "b.md").write_text("the quay crane is serviced every spring.\n")
    with DocsIndex.from_folder(tmp_path) as index:
        assert index.search("when is the quay crane serviced", 5, follow=True) == index.search(
            "when is the quay crane serviced", 5
        )


async def test_the_agents_docs_search_follows_and_the_rag_baselines_does_not(linked_docs: DocsIndex) -> None:
    settings = ToolSettings(offline=True)
    agent = await ToolBox.for_agent(["docs_search"], settings, linked_docs).retrieve(QUESTION, 5)
    baseline = ToolBox.for_agent(["docs_search"], settings, linked_docs, follow_references=False)
    plain = await baseline.retrieve(QUESTION, 5)

    assert "directory.md" in [s.ref for s in agent.sources]
    assert "directory.md" not in [s.ref for s in plain.sources]


@dataclass(frozen=True)
class Hit:
    source: str
    snippet: str


def _frequency(counts: dict[str, tuple[int, int]]):
    return lambda word, source: counts.get(word, (0, 0))


def test_bridge_terms_are_names_found_elsewhere_rarest_first() -> None:
    hits = [Hit("a", "Approval: the Data Steward signs. Requests go to Team Gannet, see ACP-9 and the Sev1 rules.")]
    counts = {"data": (5, 30), "steward": (3, 8), "gannet": (2, 4), "acp-9": (1, 2), "sev1": (1, 3)}

    terms = bridge_terms(hits[0], lambda w: False, _frequency(counts), lambda w: False)

    # "Approval" and "Requests" start a sentence; "ACP-9" and "Sev1" are identifiers.
    assert terms == ["ACP-9", "Sev1"]


def test_bridge_terms_skip_asked_words_and_names_nothing_else_mentions() -> None:
    hits = [Hit("a", "It is run by Team Bittern with Corwin.")]
    counts = {"team": (4, 9), "bittern": (1, 5), "corwin": (0, 1)}

    assert bridge_terms(hits[0], lambda w: w == "team", _frequency(counts), lambda w: False) == ["Bittern"]


def test_bridge_terms_put_names_the_questions_words_lead_to_first_and_skip_dates() -> None:
    # "the team that owns Marrowgate Lite": the owner is the name to follow, not the rarer query language.
    hit = Hit("a", "It shares the MarrowQL language. **Owner:** Team Gannet. **Launched:** 30 June 2022 (Sev3).")
    counts = {"marrowql": (1, 2), "gannet": (6, 12), "june": (1, 1), "sev3": (2, 3), "owner": (9, 9)}

    terms = bridge_terms(hit, lambda w: w == "team", _frequency(counts), lambda w: w.startswith("own"))

    assert terms == ["Gannet", "MarrowQL"]  # "June" is rarest, but a month leads to every date


def test_a_name_in_a_list_after_a_name_like_the_questions_is_not_what_its_relation_leads_to() -> None:
    hit = Hit("a", "See module copyreg. Classes: Pickler Unpickler Functions: dump, SortKey")
    counts = {"unpickler": (3, 3), "sortkey": (1, 1)}

    # "pickle" is asked; "Pickler" starts a list of names, it says nothing of the names after it.
    assert bridge_terms(hit, lambda w: False, _frequency(counts), lambda w: w.startswith("pickl")) == [
        "SortKey",
        "Unpickler",
    ]


def test_the_subject_is_the_best_hit_that_holds_the_questions_names() -> None:
    question = "What is the chat channel of the team that owns Marrowgate Lite?"
    directory = Hit("team_directory.md", "Each team owns its services. Team: Lanternfish; Channel: #lf-pager.")
    page = Hit("marrowgate_lite.md", "The public read-only API. **Owner:** Team Gannet.")

    assert subject([directory, page, Hit("x", "Marrowgate")], question) is page
    assert subject([directory, Hit("y", "plain")], "what is the chat channel of a team?") is directory


def test_merge_keeps_the_best_first_hits_and_adds_only_followed_hits_naming_a_term() -> None:
    first = [Hit("f0", "plain"), Hit("f1", "Bittern first"), *(Hit(f"f{i}", "plain") for i in range(2, 5))]
    followed = [
        Hit("f0", "Bittern again"),  # already shown, where it names the term
        Hit("f1", "Bittern second"),  # already shown, and its shown snippet names the term
        Hit("x", "nothing to do with it"),  # does not mention the name
        *(Hit(f"b{i}", f"Bittern row {i}") for i in range(3)),
    ]

    merged = merge(first, followed, ["Bittern"], first[0], 5)

    assert [h.source for h in merged] == ["f0", "f1", "f2", "b0", "b1"][: KEEP + ADDED]
    # A shown source is shown where it names the term: the row of the person named, not the
    # directory's introduction; a snippet that names it already stays.
    assert [h.snippet for h in merged[:2]] == ["Bittern again", "Bittern first"]


def test_merge_recuts_a_shown_hit_cut_mid_sentence_just_after_a_term_but_not_the_hit_read() -> None:
    cut = "Team: Lanternfish; Channel: #lf-pager. Team: Gannet; Team lead: Solveig Ashdown; On-call lead:…"
    ended = "Escalation: for Gannet pages, after 30 minutes, to the CTO.…"
    first = [Hit("f0", "Owner: Team Gannet…"), Hit("f1", cut), Hit("f2", ended)]
    followed = [Hit("f1", "…Team: Gannet; Channel: #gannet-oncall."), Hit("f0", "…Gannet recut"), Hit("f2", "…Gannet")]

    merged = merge(first, followed, ["Gannet"], first[0], 3)

    assert len(cut) - cut.find("Gannet") < CUT_AFTER and len(ended) - ended.find("Gannet") < CUT_AFTER
    # f0: the terms were read from it; f2: cut after a full sentence, which said what it says of the term.
    assert [h.snippet for h in merged] == ["Owner: Team Gannet…", "…Team: Gannet; Channel: #gannet-oncall.", ended]


def test_merge_without_fill_leaves_out_the_first_searchs_weaker_hits_but_not_what_following_found() -> None:
    first = [Hit(f"f{i}", "plain") for i in range(5)]
    followed = [Hit("b0", "Bittern row")]

    assert [h.source for h in merge(first, followed, ["Bittern"], first[0], 5)] == ["f0", "f1", "f2", "b0", "f3"]
    assert [h.source for h in merge(first, followed, ["Bittern"], first[0], 5, fill=False)] == ["f0", "f1", "f2", "b0"]


def test_following_reads_names_from_the_best_passage_and_recuts_a_shown_table_at_its_row(tmp_path: Path) -> None:
    # The directory ranks second and names many people, each rarer than "Bittern"; the name that
    # leads on is in the best passage. Its row is past what the directory's introduction leaves room for.
    (tmp_path / "cobblestone.md").write_text(
        "# Cobblestone identity service\n\nService accounts of Cobblestone are requested through Bittern's queue.\n"
    )
    teams = [(f"Team{i}", f"Lead{i} Person{i}", f"#team{i}-ops") for i in range(12)] + [
        ("Bittern", "Fenwick Morrow", "#bittern-sec")
    ]
    rows = "\n".join(f"| {team} | {lead} | {channel} |" for team, lead, channel in teams)
    (tmp_path / "teams.md").write_text(
        "# Team directory\n\nEach engineering team owns its services end to end, including on-call duty. "
        "Which services each team owns is recorded on the service pages, not here.\n\n"
        f"| Team | Team lead | Channel |\n|---|---|---|\n{rows}\n"
    )
    people = "\n".join(f"- {lead}, team {team}." for team, lead, _ in teams)
    (tmp_path / "people.md").write_text(f"# People\n\n{people}\n")
    with DocsIndex.from_folder(tmp_path) as index:
        plain = index.search(QUESTION, 5)
        followed = index.search(QUESTION, 5, follow=True)

    assert [h.source for h in plain[:2]] == ["cobblestone.md", "teams.md"]
    assert "#bittern-sec" not in plain[1].snippet
    assert "#bittern-sec" in next(h for h in followed if h.source == "teams.md").snippet

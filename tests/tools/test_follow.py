"""Following references: a second docs search for the names the best passage mentions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from sentient.tools import DocsIndex
from sentient.tools.base import ToolSettings
from sentient.tools.follow import ADDED, KEEP, bridge_terms, merge
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
    with DocsIndex.from_folder(tmp_path, relative_sources=True) as index:
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

    terms = bridge_terms(hits, lambda w: False, _frequency(counts))

    # "Approval" and "Requests" start a sentence; "ACP-9" and "Sev1" are identifiers.
    assert terms == ["ACP-9", "Sev1"]


def test_bridge_terms_skip_asked_words_and_names_nothing_else_mentions() -> None:
    hits = [Hit("a", "It is run by Team Bittern with Corwin.")]
    counts = {"team": (4, 9), "bittern": (1, 5), "corwin": (0, 1)}

    assert bridge_terms(hits, lambda w: w == "team", _frequency(counts)) == ["Bittern"]


def test_merge_keeps_the_best_first_hits_and_adds_only_followed_hits_naming_a_term() -> None:
    first = [Hit("f0", "plain"), Hit("f1", "Bittern first"), *(Hit(f"f{i}", "plain") for i in range(2, 5))]
    followed = [
        Hit("f0", "Bittern again"),  # already shown, where it names the term
        Hit("f1", "Bittern second"),  # already shown, and its shown snippet names the term
        Hit("x", "nothing to do with it"),  # does not mention the name
        *(Hit(f"b{i}", f"Bittern row {i}") for i in range(3)),
    ]

    merged = merge(first, followed, ["Bittern"], 5)

    assert [h.source for h in merged] == ["f0", "f1", "f2", "b0", "b1"][: KEEP + ADDED]
    # A shown source is shown where it names the term: the row of the person named, not the
    # directory's introduction; a snippet that names it already stays.
    assert [h.snippet for h in merged[:2]] == ["Bittern again", "Bittern first"]


def test_merge_without_fill_leaves_out_the_first_searchs_weaker_hits_but_not_what_following_found() -> None:
    first = [Hit(f"f{i}", "plain") for i in range(5)]
    followed = [Hit("b0", "Bittern row")]

    assert [h.source for h in merge(first, followed, ["Bittern"], 5)] == ["f0", "f1", "f2", "b0", "f3"]
    assert [h.source for h in merge(first, followed, ["Bittern"], 5, fill=False)] == ["f0", "f1", "f2", "b0"]


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
    with DocsIndex.from_folder(tmp_path, relative_sources=True) as index:
        plain = index.search(QUESTION, 5)
        followed = index.search(QUESTION, 5, follow=True)

    assert [h.source for h in plain[:2]] == ["cobblestone.md", "teams.md"]
    assert "#bittern-sec" not in plain[1].snippet
    assert "#bittern-sec" in next(h for h in followed if h.source == "teams.md").snippet

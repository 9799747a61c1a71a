"""Sentence-window snippets: the part of a passage shown to the model is its best-matching sentences."""

from __future__ import annotations

from sentient.tools import DocsIndex, Retrieval
from sentient.tools.snippets import SNIPPET_CHARS, best_window, joined, sentences

FILLER = [
    f"Section {i} describes the general layout of the harbour and its many quiet corners in detail." for i in range(10)
]
ANSWER = "The lighthouse keeper winds the lamp clock every evening at nine."
AFTER = "Afterwards the keeper logs the weather in the blue ledger."


def long_passage() -> str:
    return " ".join([*FILLER, ANSWER, AFTER, "Visitors are welcome on Sundays."])


def test_snippet_holds_the_best_matching_sentence_when_it_comes_late() -> None:
    body = long_passage()
    assert len(body) > 1000 and body.index(ANSWER) > 900  # past any fixed 600-character prefix
    snippet = best_window(body, ["lighthouse", "keeper", "lamp", "clock"])
    assert ANSWER in snippet
    assert AFTER in snippet  # grown by the neighbour that also matches ('keeper')
    assert len(snippet) <= SNIPPET_CHARS
    assert snippet.startswith("…")  # text before it was left out


def test_short_passage_is_returned_whole() -> None:
    body = "A short passage. It has two sentences."
    assert best_window(body, ["nothing"]) == body


def test_snippet_keeps_whole_sentences() -> None:
    body = long_passage()
    snippet = best_window(body, ["lighthouse"]).strip("…")
    assert all(part in sentences(body) for part in sentences(snippet))


def test_text_without_sentence_ends_is_still_cut_to_the_budget_around_the_match() -> None:
    body = "filler " * 150 + "the marmalade clause " + "padding " * 150
    snippet = best_window(body, ["marmalade"])
    assert len(snippet) <= SNIPPET_CHARS
    assert "marmalade" in snippet


def test_stems_match_other_word_forms() -> None:
    body = " ".join([*FILLER, "Tasks are scheduled by the event loop in order.", *FILLER])
    assert "scheduled by the event loop" in best_window(body, ["scheduling"])


def test_search_snippets_are_cut_around_the_late_matching_sentence() -> None:
    index = DocsIndex(embeddings=None)
    index.add_document("/docs/harbour.md", "Harbour", long_passage())
    (hit,) = index.search("when does the lighthouse keeper wind the lamp clock", retrieval=Retrieval.BM25)
    assert ANSWER in hit.snippet
    assert hit.passage == long_passage()  # the whole passage stays available beside the snippet


def test_the_row_naming_the_rare_word_beats_an_introduction_of_the_common_ones() -> None:
    intro = "Each team has a team lead and an on-call lead; the on-call lead runs the team's rotation."
    rows = [
        f"Team: {name}; Team lead: {lead}; On-call lead: {oncall}."
        for name, lead, oncall in [
            ("Lanternfish", "Anselm Grieve", "Odile Varnavas"),
            ("Sandpiper", "Tomasz Okonjo", "Dorotea Quayle"),
            ("Gannet", "Solveig Ashdown", "Casimir Dunleavy"),
            ("Bittern", "Fenwick Morrow", "Juno Halberd"),
            ("Cormorant", "Yevgenia Palk", "Rafferty Coll"),
        ]
    ]
    body = " ".join([intro, *rows, *FILLER])

    # "team", "lead" and "on-call" are in every row; "Cormorant" in one: that row must be shown.
    snippet = best_window(body, ["on-call", "lead", "team", "cormorant"], budget=300)

    assert "Rafferty Coll" in snippet


def test_the_row_asked_about_is_the_first_row_shown() -> None:
    # The 1.5B answers from the first row it is shown: "Who is Sandpiper's on-call lead?" shown
    # Lanternfish's row first was answered with Lanternfish's on-call lead.
    rows = [
        f"Name: {name}; Role: {role}; Team: {team}; Joined: {year}."
        for name, role, team, year in [
            ("Anselm Grieve", "Team Lead", "Lanternfish", 2015),
            ("Odile Varnavas", "Ingest Engineer", "Lanternfish", 2016),
            ("Ilse Merrick", "Data Steward", "Gannet", 2019),
            ("Tomasz Okonjo", "Storage Engineer", "Sandpiper", 2018),
        ]
    ]
    body = " ".join(["People directory. It lists staff who appear in runbooks.", *rows])

    # The matching piece ("Data Steward; Team:") follows the name the question asks for.
    snippet = best_window(body, ["name", "data", "steward"], budget=180)

    assert snippet.startswith("…Name: Ilse Merrick; Role: Data Steward")
    assert "Tomasz Okonjo" in snippet  # read on; the rows before it are left out
    assert "Odile Varnavas" not in snippet


def test_a_snippet_given_a_row_starts_at_it_however_the_words_score() -> None:
    intro = (
        "KESTREL-archive: the KESTREL-archive is the Observatory's long-term store for raw telemetry. "
        "It keeps two copies of every object. The second copy sits in a fire-separated room. "
    )
    rows = (
        "Limit: Writes; Value: 95 per second. Limit: Usable capacity; Value: 640 TiB. Limit: Compression; Value: zstd."
    )
    body = f"{intro}{rows}"

    plain = best_window(body, ["usable", "capacity", "kestrel", "archive", "observatory"], budget=120)
    named = best_window(
        body, ["usable", "capacity", "kestrel", "archive", "observatory"], budget=120, row=body.index("Limit: Usable")
    )

    assert "640 TiB" not in plain
    assert named.startswith("…Limit: Usable capacity; Value: 640 TiB.")


def test_prose_keeps_the_sentence_before_that_says_what_it_is_about() -> None:
    body = (
        "Lists are built with square brackets. A dict comprehension needs two expressions joined by a colon. "
        "Its key and value elements are inserted in the order they are produced. " + "Other notes follow here. " * 12
    )

    snippet = best_window(body, ["dict", "comprehension", "order", "elements", "inserted"], budget=200)

    assert "A dict comprehension needs two expressions" in snippet
    assert "in the order they are produced" in snippet


def test_a_second_window_adds_only_its_sentences_with_words_the_first_lacks() -> None:
    body = long_passage()
    early = best_window(body, ["layout", "harbour", "quiet", "corners"])
    late = best_window(body, ["lighthouse", "keeper", "lamp", "clock"])
    assert ANSWER not in early and ANSWER in late and AFTER in late

    both = joined(early, late, ["lamp", "harbour"])  # the early window has "harbour"
    assert both.startswith(early.removesuffix("…")) and both.endswith(f"… {ANSWER}…")
    assert AFTER not in both  # it holds none of the words the early window lacks
    assert joined(early, late, ["corners"]) == early
    assert joined(late, late, ["lamp"]) == late  # nothing it does not show already

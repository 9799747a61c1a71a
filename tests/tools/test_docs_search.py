"""The local-documents search tool: real files in a temp dir, a real SQLite FTS5 index."""

from __future__ import annotations

import math
import sqlite3
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fakes.embedder import HashingEmbedder

from sentient.exceptions import DocsFolderError
from sentient.tools import DocsIndex, Retrieval, SearchHit
from sentient.tools.snippets import SNIPPET_CHARS

STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()
HTML_PAGE = """<!doctype html>
<html><head><title>Page</title><style>.zebracolor { color: red }</style></head>
<body><h1>Harbour guide</h1>
<script>var lighthousekeeper = "<b>hidden</b>";</script>
<p>The <b>quokkafish</b> swims near the <a href="#pier">pier</a> at dawn.</p>
</body></html>
"""


@pytest.fixture
def docs_folder(tmp_path: Path) -> Path:
    """A folder with one document of every supported kind, each with a distinctive word."""
    (tmp_path / "notes.md").write_text("# Intro\n\nGeneral words.\n\n## Gardening\n\nThe axolotlbloom grows.\n")
    (tmp_path / "plain.txt").write_text("A plain file about the frobnicator machine.\n")
    (tmp_path / "manual.rst").write_text("Usage\n=====\n\nRun the wibblewrench daily.\n")
    (tmp_path / "page.html").write_text(HTML_PAGE)
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "mod.py").write_text('"""Helpers for the snorkelwidget."""\n\nVALUE = 1\n')
    return tmp_path


@pytest.fixture
def index(docs_folder: Path) -> DocsIndex:
    return DocsIndex.from_folder(docs_folder)


@pytest.mark.parametrize(
    ("word", "relative"),
    [
        ("axolotlbloom", "notes.md"),
        ("frobnicator", "plain.txt"),
        ("wibblewrench", "manual.rst"),
        ("quokkafish", "page.html"),
        ("snorkelwidget", "pkg/mod.py"),
    ],
)
def test_every_supported_file_kind_is_found_by_its_distinctive_word(index: DocsIndex, word: str, relative: str) -> None:
    hits = index.search(word)
    assert [hit.source for hit in hits] == [relative]  # named relative to the folder, never by a path of the machine
    assert word in hits[0].snippet.lower()
    assert hits[0].score > 0


def test_markdown_and_rst_passages_are_titled_with_their_headings(index: DocsIndex) -> None:
    assert index.search("axolotlbloom")[0].title == "notes.md - Intro / Gardening"  # two short sections, one passage
    assert index.search("wibblewrench")[0].title == "manual.rst - Usage"


def test_short_sections_share_a_passage_and_long_ones_stay_apart(tmp_path: Path) -> None:
    timeline = "\n\n".join(f"Step {i}: the operators checked gauge {i} and wrote it down." for i in range(25))
    (tmp_path / "postmortem.md").write_text(
        "# Postmortem Q-7\n\nThe harbour crane incident.\n\n"
        "## Summary\n\nFor 55 minutes the crane API was down.\n\n"
        f"## Timeline\n\n{timeline}\n"
    )
    index = DocsIndex.from_folder(tmp_path)
    # One passage per file is returned: the summary must not sit alone behind the title section.
    (hit,) = index.search("how long was the harbour crane incident")
    assert hit.title == "postmortem.md - Postmortem Q-7 / Summary"
    assert "For 55 minutes the crane API was down." in hit.snippet
    titles = {hit.title for hit in index.search("operators gauge", per_source=5)}
    # Too long to join: its own passages, shown under the document's title.
    assert titles == {"postmortem.md - Postmortem Q-7 / Timeline"}


def test_a_long_table_is_cut_between_its_rows(tmp_path: Path) -> None:
    rows = "\n".join(f"| Person{i:02d} | Senior Engineer | Team{i:02d} |" for i in range(40))
    (tmp_path / "people.md").write_text(f"# People\n\n| Name | Role | Team |\n|---|---|---|\n{rows}\n")
    index = DocsIndex.from_folder(tmp_path)

    hits = index.search("senior engineer", limit=10, per_source=10)

    assert len(hits) > 1  # the table is longer than a passage
    for hit in hits:
        assert hit.passage.removeprefix("# People ").startswith("Name: Person")
        assert hit.passage.endswith(".")  # a whole row, not "...; Role: Senior"


def _archive(folder: Path) -> None:
    """A document whose capacity-planning section outranks its limits table for "usable capacity"."""
    filler = "The archive keeps two copies of every object in separate rooms on the island. " * 9
    (folder / "archive.md").write_text(
        f"# Archive\n\n## Limits\n\n{filler}\n\n| Limit | Value |\n|---|---|\n| Writes | 95 per second |\n"
        f"| Usable capacity | 640 TiB |\n\n## Capacity planning\n\n{filler}\n\nAt the end of 2025 the archive "
        "held 417 TiB of its capacity. Capacity is reviewed quarterly and disks are ordered at 80 per cent of "
        "usable capacity.\n"
    )


def test_the_passage_with_the_row_the_question_names_is_the_one_shown(tmp_path: Path) -> None:
    # The capacity-planning section says "capacity" three times and ranks first; the limits table
    # holds the row the question names. One passage per source is shown: the table's, from that row.
    _archive(tmp_path)
    (tmp_path / "other.md").write_text("# Other\n\nNothing about the archive's capacity here.\n")
    index = DocsIndex.from_folder(tmp_path)

    [hit, _] = index.search("What is the usable capacity of the archive?", limit=2)
    # The same words out of order name no row: BM25 alone picks the capacity-planning section.
    [ranked_first] = index.search("What capacity is usable in the archive?", limit=1)

    assert "417 TiB" in ranked_first.snippet and "640 TiB" not in ranked_first.snippet
    assert hit.source.endswith("archive.md")
    assert hit.snippet.startswith("…Limit: Usable capacity; Value: 640 TiB.")


def test_with_several_passages_per_source_a_named_row_moves_only_within_its_source(tmp_path: Path) -> None:
    _archive(tmp_path)
    (tmp_path / "tape.md").write_text(
        "# Tape library\n\n" + "Tapes are kept in a cold room. " * 4 + "Its usable capacity is 90 TiB, less than "
        "the archive's capacity.\n"
    )
    index = DocsIndex.from_folder(tmp_path)

    plain = index.search("What capacity is usable in the archive?", limit=3, per_source=2)
    named = index.search("What is the usable capacity of the archive?", limit=3, per_source=2)

    assert [Path(h.source).name for h in plain] == ["archive.md", "tape.md", "archive.md"]
    assert "640 TiB" in plain[2].snippet
    assert [Path(h.source).name for h in named] == ["archive.md", "tape.md", "archive.md"]  # the tape keeps its place
    assert "640 TiB" in named[0].snippet and "640 TiB" not in named[2].snippet


def test_the_documents_title_is_shown_with_every_passage_but_not_searched(tmp_path: Path) -> None:
    rules = "\n\n".join(f"Rule {i}: a harbour key expires after {i + 20} days unless renewed." for i in range(30))
    (tmp_path / "Q3 - policy_p2.md").write_text(
        f"# Key policy P-2 (SUPERSEDED)\n\nReplaced by P-3.\n\n## Expiry\n\n{rules}\n"
    )
    (tmp_path / "notes.txt").write_text("Harbour keys are cut at the quay office.\n")
    index = DocsIndex.from_folder(tmp_path)

    titles = {hit.title for hit in index.search("how many days before renewal", per_source=5)}
    assert titles == {"Q3 - policy_p2.md - Key policy P-2 (SUPERSEDED) / Expiry"}  # two passages, one title
    assert index.search("quay office")[0].title == "notes.txt"  # a document that opens with text has none
    # The title is not indexed with each passage: only the passage under it matches its words.
    assert [hit.snippet for hit in index.search("superseded", per_source=5)] == [
        "Key policy P-2 (SUPERSEDED) Replaced by P-3."
    ]


def test_a_superseded_documents_passages_rank_after_current_ones_unless_asked_for(tmp_path: Path) -> None:
    # The old policy matches the question better (its words repeat), as superseded copies often do.
    (tmp_path / "p2.md").write_text(
        "# Key policy P-2 (SUPERSEDED)\n\nHarbour keys expire after 30 days. Harbour keys expire, keys expire.\n\nSpare keys sit in the vault.\n"
    )
    (tmp_path / "p3.md").write_text("# Key policy P-3 (CURRENT)\n\nHarbour keys expire after 45 days.\n")
    (tmp_path / "quay.md").write_text("# Quay office\n\nThe quay office cuts harbour keys.\n")
    index = DocsIndex.from_folder(tmp_path)

    def sources(query: str, limit: int = 3) -> list[str]:
        return [hit.source for hit in index.search(query, limit, retrieval=Retrieval.BM25)]

    assert sources("when do harbour keys expire") == ["p3.md", "quay.md", "p2.md"]
    assert sources("when do harbour keys expire", 2) == ["p3.md", "quay.md"]
    # Asked for: by a word about the past, or by the document's identifier in any spelling.
    assert sources("when did harbour keys expire under the superseded policy")[0] == "p2.md"
    assert sources("when did harbour keys expire under P-2")[0] == "p2.md"
    assert sources("when did harbour keys expire under p2")[0] == "p2.md"
    assert sources("when do harbour keys expire under P-3")[0] == "p3.md"
    # Nothing current matches: the old document is still found.
    assert sources("the spare vault") == ["p2.md"]


def test_following_the_names_a_current_document_mentions_does_not_bring_back_the_one_it_replaced(
    tmp_path: Path,
) -> None:
    (tmp_path / "p2.md").write_text("# Key policy P-2 (SUPERSEDED)\n\nHarbour keys expire after 30 days.\n")
    (tmp_path / "p3.md").write_text("# Key policy P-3 (CURRENT)\n\nHarbour keys expire after 45 days. Replaces P-2.\n")
    for name in ("crane", "quay", "pier"):
        (tmp_path / f"{name}.md").write_text(f"# {name.title()}\n\nThe {name} office cuts harbour keys.\n")
    index = DocsIndex.from_folder(tmp_path)

    # The search follows "P-2" (named by the current policy): p2.md would be its best new document.
    found = [hit.source for hit in index.search("when do harbour keys expire", 5, follow=True)]

    assert found[0] == "p3.md" and "p2.md" not in found[:4]
    asked = [hit.source for hit in index.search("when did harbour keys expire under P-2", 5, follow=True)]
    assert asked[0] == "p2.md"


def test_html_script_and_style_are_not_indexed_and_tags_not_in_snippets(index: DocsIndex) -> None:
    # The text index is what proves the words were left out: a dense search would still
    # (rightly) offer the harbour page for 'lighthousekeeper'.
    assert index.search("lighthousekeeper", retrieval=Retrieval.BM25) == []
    assert index.search("zebracolor", retrieval=Retrieval.BM25) == []
    snippet = index.search("quokkafish")[0].snippet
    assert "<" not in snippet and ">" not in snippet
    assert "The quokkafish swims near the pier at dawn." in snippet


def test_more_relevant_document_ranks_first() -> None:
    index = DocsIndex()
    index.add_document("/docs/passing.md", "passing", "Tides are mentioned once here among many other topics.")
    index.add_document("/docs/focused.md", "Tides", "Tides: tides rise and tides fall; spring tides are high.")
    hits = index.search("tides")
    assert [hit.source for hit in hits] == ["/docs/focused.md", "/docs/passing.md"]
    assert hits[0].score > hits[1].score


def test_a_code_in_the_query_finds_the_document_that_names_it_over_look_alikes() -> None:
    # Each look-alike repeats the code's parts ("inc", "2024", "031") and the question's words more
    # often than the document the code names.
    index = DocsIndex()
    index.add_document("/docs/a.md", "a", "INC-2023-031 (2024 review): the page was acknowledged late; severity Sev2.")
    index.add_document(
        "/docs/b.md", "b", "INC-2024-047: the page was acknowledged late, as INC-2023-031 was. Severity Sev2."
    )
    index.add_document("/docs/c.md", "c", "Postmortem INC-2024-031 of the Heron buoys in Sector Nine. Severity: Sev1.")
    question = "The page in incident INC-2024-031 was acknowledged late. What was its severity?"
    assert index.search(question, 1)[0].source == "/docs/c.md"


def test_code_quoted_in_backticks_finds_the_passage_that_shows_it() -> None:
    # Quoted alone, its words are too short or too common to be searched ("e", "as", "n"), and
    # the look-alike holds more of the question's words.
    index = DocsIndex()
    for n in range(8):  # the question's other words are common ones
        index.add_document(
            f"/docs/other{n}.md", "other", f"In Python {n}, a name bound in a clause is deleted when it finishes."
        )
    index.add_document(
        "/docs/names.md", "names", "A name bound by an except clause is deleted when the clause finishes."
    )
    index.add_document(
        "/docs/handlers.md", "handlers", "A handler written except E as N: clears N at its end: a reference cycle."
    )
    question = "Why does Python delete the name bound by `except E as N:` when the except clause finishes?"
    assert index.search(question, 1)[0].source == "/docs/handlers.md"
    assert index.search(question.replace("`", ""), 1)[0].source == "/docs/names.md"


def test_stemming_matches_other_forms_of_a_word() -> None:
    index = DocsIndex()
    index.add_document("/docs/cal.txt", "cal", "Keep a schedule for the week.")
    hits = index.search("scheduling")
    assert [hit.source for hit in hits] == ["/docs/cal.txt"]


@pytest.mark.parametrize("query", ['"unbalanced ( AND *', "", "the a of", "NOT OR AND", "* ) ( ^ -", "'\"'"])
def test_odd_queries_never_raise(index: DocsIndex, query: str) -> None:
    assert index.search(query) == []


def test_operator_words_in_a_query_are_searched_as_plain_words() -> None:
    index = DocsIndex()
    index.add_document("/docs/near.txt", "near", "The boats moored near the frobnicator.")
    assert [hit.source for hit in index.search("NEAR(boats")] == ["/docs/near.txt"]


def test_hits_are_one_per_source_and_respect_the_limit() -> None:
    index = DocsIndex()
    long_text = "\n\n".join(f"Paragraph {i} about lanterns. " + "filler words " * 40 for i in range(10))
    index.add_document("/docs/long.md", "long", long_text)
    index.add_document("/docs/short.md", "short", "Lanterns glow.")
    assert len(index) > 3  # the long document was split into several passages
    hits = index.search("lanterns", limit=5)
    assert sorted(hit.source for hit in hits) == ["/docs/long.md", "/docs/short.md"]
    assert len(index.search("lanterns", limit=1)) == 1


def _boolean_section(index: DocsIndex) -> None:
    """A section cut into two passages: the first holds most of the question's words, the second
    the sentence that answers it, with one word of the question the first lacks ("restrict")."""
    first = "Boolean operators. " + "In a Boolean context the operators test values. " * 24
    second = "Note that neither will restrict the result they return to false and true, but gives the last " + (
        "evaluated argument. " + "The grammar is given above. " * 30
    )
    index.add_document("/docs/booleans.txt", "booleans", f"{first}\n\n{second}")
    index.add_document("/docs/other.txt", "other", "Operators in another context.")


def test_the_passage_after_the_best_one_joins_it_when_it_holds_a_word_of_the_query_it_lacks() -> None:
    index = DocsIndex()
    _boolean_section(index)
    assert len(index) == 3  # the section is two passages

    [hit] = index.search("What do the boolean operators return instead of restricting the result to false and true?", 1)
    [plain] = index.search("What do the boolean operators test in a Boolean context?", 1)

    assert "the last evaluated argument" in hit.snippet
    assert hit.passage.startswith("Boolean operators") and "the last evaluated argument" in hit.passage
    assert "last evaluated" not in plain.passage  # the next passage adds no word of this query


def test_a_table_passage_is_not_joined_with_its_neighbours(tmp_path: Path) -> None:
    names = {3: "Quillon", 35: "Marrowby"}
    rows = "\n".join(f"| {names.get(i, f'Person{i:02d}')} | Senior Engineer | Team{i:02d} |" for i in range(40))
    (tmp_path / "people.md").write_text(f"# People\n\n| Name | Role | Team |\n|---|---|---|\n{rows}\n")
    index = DocsIndex.from_folder(tmp_path)

    [hit] = index.search("Which teams are Quillon and Marrowby in?", 1)

    # A row the question names is found by named_row; the table's other passage is not added.
    assert ("Quillon" in hit.passage) != ("Marrowby" in hit.passage)


def test_long_passages_give_short_snippets_around_the_match() -> None:
    index = DocsIndex()
    text = "filler " * 150 + "the marmalade clause " + "padding " * 150
    index.add_document("/docs/big.txt", "big", text)
    snippet = index.search("marmalade")[0].snippet
    assert len(snippet) <= SNIPPET_CHARS
    assert "marmalade" in snippet


def test_search_from_worker_threads(index: DocsIndex) -> None:
    words = ["axolotlbloom", "frobnicator", "wibblewrench", "quokkafish", "snorkelwidget"] * 20
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(index.search, words))
    assert all(len(hits) == 1 and isinstance(hits[0], SearchHit) for hits in results)


def test_missing_folder_raises_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(DocsFolderError, match=r"docs folder '.*nope' does not exist"):
        DocsIndex.from_folder(missing)


def test_file_instead_of_folder_raises(tmp_path: Path) -> None:
    file = tmp_path / "a.md"
    file.write_text("text")
    with pytest.raises(DocsFolderError, match="is not a directory"):
        DocsIndex.from_folder(file)


def test_folder_without_indexable_files_raises_naming_the_path(tmp_path: Path) -> None:
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    with pytest.raises(DocsFolderError, match=rf"docs folder '{tmp_path}' has no .md, .txt"):
        DocsIndex.from_folder(tmp_path)


def test_hidden_and_cache_dirs_are_skipped(tmp_path: Path) -> None:
    for skipped in (".hidden", "__pycache__", "node_modules", ".git"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "secret.md").write_text("The gloomberry is here.")
    (tmp_path / "visible.md").write_text("The gloomberry is visible.")
    index = DocsIndex.from_folder(tmp_path)
    assert [hit.source for hit in index.search("gloomberry", limit=10)] == ["visible.md"]


def test_index_persists_in_a_database_file(docs_folder: Path, tmp_path: Path) -> None:
    db_file = tmp_path / "docs.sqlite"
    DocsIndex.from_folder(docs_folder, db_file).close()
    with DocsIndex(db_file) as reopened:
        assert len(reopened.search("frobnicator")) == 1


# The Python docs tests use the hashing embedder: the real one takes minutes for ~2,000
# passages, and what is tested here is the index and its cache, not what the vectors mean.
@pytest.fixture(scope="module")
def pydocs_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cold build of the Python documentation index, shared by the tests below."""
    cache = tmp_path_factory.mktemp("pydocs")
    DocsIndex.python_docs(cache, embeddings=HashingEmbedder).close()
    return cache


@pytest.mark.parametrize("query", ["asyncio event loop coroutine", "with statement context manager"])
def test_python_docs_answers_with_files_that_exist(pydocs_cache: Path, query: str) -> None:
    with DocsIndex.python_docs(pydocs_cache, embeddings=HashingEmbedder) as index:
        hits = index.search(query)
    assert len(hits) == 5
    for hit in hits:
        # Named relative to the standard library's folder, never by a path of this machine.
        assert not Path(hit.source).is_absolute() and (STDLIB / hit.source.partition("#")[0]).is_file()
        assert hit.snippet and hit.title


def test_python_docs_covers_reference_topics_and_module_docstrings(pydocs_cache: Path) -> None:
    with DocsIndex.python_docs(pydocs_cache, embeddings=HashingEmbedder) as index:
        assert len(index) > 1000
        titles = {hit.title for hit in index.search("with statement context manager", limit=10)}
        assert "Python reference: with" in titles
        assert any(hit.title.startswith("json") for hit in index.search("json decoder", limit=5))


def test_python_docs_reuses_the_cache_file(pydocs_cache: Path) -> None:
    (db_file,) = pydocs_cache.glob("pydocs-*.sqlite")
    before = db_file.stat().st_mtime_ns
    with DocsIndex.python_docs(pydocs_cache, embeddings=HashingEmbedder) as index:
        assert index.search("coroutine")
        assert index.embedded_passages == 0  # the vectors came from the cache file
        assert index.default_retrieval is Retrieval.HYBRID
    assert db_file.stat().st_mtime_ns == before
    assert [p.name for p in pydocs_cache.iterdir()] == [db_file.name]  # no temp files left


def test_python_docs_cache_without_the_model_still_serves_bm25(pydocs_cache: Path) -> None:
    (db_file,) = pydocs_cache.glob("pydocs-*.sqlite")
    before = db_file.stat().st_mtime_ns
    with DocsIndex.python_docs(pydocs_cache, embeddings=None) as index:
        assert index.default_retrieval is Retrieval.BM25
        assert any(
            hit.title == "Python reference: with" for hit in index.search("with statement context manager", limit=10)
        )
    assert db_file.stat().st_mtime_ns == before  # not rebuilt


def test_python_docs_rebuilds_for_another_embedding_model(tmp_path: Path) -> None:
    with DocsIndex.python_docs(tmp_path, embeddings=HashingEmbedder) as first:
        assert first.embedding_model == "hashing-64"
    with DocsIndex.python_docs(tmp_path, embeddings=lambda: HashingEmbedder(model_id="other")) as rebuilt:
        assert rebuilt.embedding_model == "other"
        assert rebuilt.search("coroutine", retrieval=Retrieval.DENSE)
        assert rebuilt.embedded_passages == 0  # every vector was made by the rebuild


def test_python_docs_rebuilds_a_stale_or_corrupt_cache(tmp_path: Path) -> None:
    db_file = tmp_path / f"pydocs-{sys.version_info.major}.{sys.version_info.minor}.sqlite"
    with DocsIndex(db_file) as stale:  # right schema, old marker, one passage
        stale.add_document("/old.txt", "old", "outdated text")
    conn = sqlite3.connect(db_file)
    with conn:
        conn.execute("INSERT INTO meta VALUES ('marker', 'schema=0')")
    conn.close()
    with DocsIndex.python_docs(tmp_path, embeddings=HashingEmbedder) as fresh:
        rebuilt_size = len(fresh)
        assert "/old.txt" not in {hit.source for hit in fresh.search("outdated text", limit=50)}
    assert rebuilt_size > 1000
    db_file.write_bytes(b"not a database at all")
    with DocsIndex.python_docs(tmp_path, embeddings=HashingEmbedder) as rebuilt:
        assert len(rebuilt) == rebuilt_size


def test_a_word_is_rarer_the_fewer_passages_hold_it(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("The harbour key opens the quay gate.\n")
    (tmp_path / "b.md").write_text("The harbour office keeps the tide tables.\n")
    index = DocsIndex.from_folder(tmp_path)

    assert index.rarity("quay") > index.rarity("harbour") > 0  # in one passage of two; in both
    assert index.rarity("kelp") == math.log(1 + 2)  # in none

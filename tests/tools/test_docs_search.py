"""The local-documents search tool: real files in a temp dir, a real SQLite FTS5 index."""

from __future__ import annotations

import sqlite3
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fakes.embedder import HashingEmbedder

from sentient.exceptions import DocsFolderError
from sentient.tools import DocsIndex, Retrieval, SearchHit
from sentient.tools.docs_search import EmbedderLoader

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


def test_stemming_matches_other_forms_of_a_word() -> None:
    index = DocsIndex()
    index.add_document("/docs/cal.txt", "cal", "Keep a schedule for the week.")
    hits = index.search("scheduling")
    assert [hit.source for hit in hits] == ["/docs/cal.txt"]


def test_an_index_knows_whether_it_holds_a_passage(tmp_path: Path) -> None:
    index = DocsIndex(tmp_path / "docs.sqlite")
    assert index.empty
    index.add_document("/docs/blank.md", "blank", "  \n\n  ")  # no passage in it
    assert index.empty
    index.add_document("/docs/cal.txt", "cal", "Keep a schedule for the week.")
    assert not index.empty
    index.close()
    with DocsIndex(tmp_path / "docs.sqlite") as reopened:
        assert not reopened.empty


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
    the sentence that answers it."""
    first = "Boolean operators. " + "In a Boolean context the operators test values. " * 24
    second = "Note that neither will restrict the result they return to false and true, but gives the last " + (
        "evaluated argument. " + "The grammar is given above. " * 30
    )
    index.add_document("/docs/booleans.txt", "logic", f"{first}\n\n{second}")
    index.add_document("/docs/other.txt", "other", "Operators in another context.")


def test_a_hit_is_shown_with_the_passages_of_its_section_that_the_search_ranked_too() -> None:
    index = DocsIndex()
    _boolean_section(index)
    assert len(index) == 3  # the section is two passages

    [hit] = index.search("What do the boolean operators return instead of restricting the result to false and true?", 1)
    [plain] = index.search("What do the boolean operators test in a Boolean context?", 1)

    # Both passages hold words of the question: one hit, shown whole with its neighbour, in order.
    assert hit.snippet.startswith("Boolean operators") and hit.snippet.endswith("The grammar is given above.")
    assert hit.passage in hit.snippet and len(hit.passage) < len(hit.snippet)
    # The second passage holds no word of this query: the hit is its passage, whole.
    assert plain.snippet == plain.passage and "last evaluated" not in plain.snippet


@pytest.mark.parametrize("embeddings", [None, HashingEmbedder], ids=["bm25", "hybrid"])
def test_a_search_for_what_the_corpus_never_names_returns_nothing(embeddings: EmbedderLoader | None) -> None:
    index = DocsIndex(embeddings=embeddings)
    for n in range(20):
        index.add_document(f"/docs/{n}.md", f"d{n}", f"Report {n}: the harbour ledger for week {n}.")
    index.add_document("/docs/gulls.md", "gulls", "Gulls nest on the harbour breakwater in spring.")

    assert [hit.source for hit in index.search("where do gulls nest")][:1] == ["/docs/gulls.md"]
    assert len(index.search("harbour")) == 5  # in every passage: what the corpus is about
    # Of this question's words only "week" is in the corpus, and in nearly every passage: it
    # carries almost none of the question's weight, so nothing here is about it.
    assert index.search("which heapq function pops the smallest item each week") == []


def test_a_folder_too_small_for_document_frequencies_is_searched_without_the_cut() -> None:
    # In a folder of one passage, "penguins" (in no passage) outweighs "nest" (in every one).
    index = DocsIndex(embeddings=HashingEmbedder)
    index.add_document("/docs/gulls.md", "gulls", "Gulls nest on the harbour breakwater in spring.")

    assert [hit.source for hit in index.search("where do penguins nest")] == ["/docs/gulls.md"]


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

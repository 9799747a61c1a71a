"""KnowledgeStore: what a run learned, searchable by relevance in a real SQLite FTS5 table."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sentient.context.knowledge import KnowledgeStore


@pytest.fixture
def store() -> KnowledgeStore:
    knowledge = KnowledgeStore()
    knowledge.add("root.0", "Find how lists grow", "Lists over-allocate when they grow.", ["/docs/list.md"])
    knowledge.add(
        "root.1",
        "Compare tuples and lists",
        "Tuples are immutable; lists are mutable. Tuples hash, lists do not.",
        ["/docs/tuple.md", "/docs/list.md"],
    )
    knowledge.add("root.2", "Describe garden soil", "Loam holds water and air for roots.", [])
    return knowledge


def test_search_returns_relevant_entries_most_relevant_first(store: KnowledgeStore) -> None:
    entries = store.search("Are tuples immutable like lists?")
    assert [e.task_id for e in entries] == ["root.1", "root.0"]
    assert entries[0].score >= entries[1].score > 0
    assert entries[0].sources == ("/docs/tuple.md", "/docs/list.md")
    assert entries[0].goal == "Compare tuples and lists"


def test_search_matches_word_stems(store: KnowledgeStore) -> None:
    assert [e.task_id for e in store.search("growing list")] == ["root.0", "root.1"]


def test_excluded_task_ids_are_skipped_without_shrinking_the_result(store: KnowledgeStore) -> None:
    entries = store.search("tuples lists", limit=1, exclude={"root.1"})
    assert [e.task_id for e in entries] == ["root.0"]


def test_limit_caps_the_number_of_entries(store: KnowledgeStore) -> None:
    assert len(store.search("tuples lists", limit=1)) == 1
    assert store.search("tuples lists", limit=0) == []


def test_queries_of_only_stopwords_or_short_words_find_nothing(store: KnowledgeStore) -> None:
    assert store.search("what is the") == []
    assert store.search("") == []


def test_query_with_fts_syntax_characters_is_treated_as_words(store: KnowledgeStore) -> None:
    entries = store.search('tuples" OR (lists* AND NOT -near "')
    assert {e.task_id for e in entries} == {"root.0", "root.1"}


def test_adding_a_task_again_replaces_its_entry(store: KnowledgeStore) -> None:
    store.add("root.2", "Describe garden soil", "Clay soil drains slowly.", [])
    assert len(store) == 3
    assert store.search("loam") == []
    assert [e.result for e in store.search("clay")] == ["Clay soil drains slowly."]


def test_concurrent_adds_from_threads_are_all_kept() -> None:
    knowledge = KnowledgeStore()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda i: knowledge.add(f"t.{i}", f"goal {i}", f"zebrafinding number {i}"), range(50)))
    assert len(knowledge) == 50
    assert len(knowledge.search("zebrafinding", limit=20)) == 20


def test_a_file_backed_store_keeps_its_entries_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "knowledge.sqlite"
    first = KnowledgeStore(path)
    first.add("root.0", "Find the GIL", "The GIL serialises bytecode.", ["/docs/gil.md"])
    first.close()
    second = KnowledgeStore(path)
    assert [e.task_id for e in second.search("GIL bytecode")] == ["root.0"]
    second.close()

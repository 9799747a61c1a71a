"""KnowledgeStore: what a run learned, in a real SQLite table, and which of it relates to a goal."""

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


ALL = frozenset({"root.0", "root.1", "root.2"})


def test_related_returns_the_entries_sharing_rare_words_most_related_first(store: KnowledgeStore) -> None:
    entries = store.related("Are tuples immutable like lists?", ALL)
    assert [e.task_id for e in entries] == ["root.1", "root.0"]  # the soil entry shares no word
    assert entries[0].score > entries[1].score > 0
    assert entries[0].sources == ("/docs/tuple.md", "/docs/list.md")
    assert entries[0].goal == "Compare tuples and lists"


def test_only_the_given_tasks_are_considered(store: KnowledgeStore) -> None:
    assert [e.task_id for e in store.related("tuples lists", {"root.0", "root.2"})] == ["root.0"]
    assert store.related("tuples lists", frozenset()) == []


def test_the_answer_does_not_depend_on_other_entries_in_the_store(store: KnowledgeStore) -> None:
    before = store.related("tuples lists grow", ALL)
    for i in range(20):
        store.add(f"root.9.{i}", f"More about lists {i}", "Lists and tuples again, lists everywhere.", [])
    assert store.related("tuples lists grow", ALL) == before


def test_limit_caps_the_number_of_entries(store: KnowledgeStore) -> None:
    assert len(store.related("tuples lists", ALL, limit=1)) == 1
    assert store.related("tuples lists", ALL, limit=0) == []


def test_queries_of_only_stopwords_or_short_words_find_nothing(store: KnowledgeStore) -> None:
    assert store.related("what is the", ALL) == []
    assert store.related("", ALL) == []


def test_punctuation_in_the_query_is_ignored(store: KnowledgeStore) -> None:
    entries = store.related('tuples" OR (lists* AND NOT -near "', ALL)
    assert {e.task_id for e in entries} == {"root.0", "root.1"}


def test_adding_a_task_again_replaces_its_entry(store: KnowledgeStore) -> None:
    store.add("root.2", "Describe garden soil", "Clay soil drains slowly.", [])
    assert len(store) == 3
    assert store.related("loam", ALL) == []
    assert [e.result for e in store.related("clay", ALL)] == ["Clay soil drains slowly."]


def test_concurrent_adds_from_threads_are_all_kept() -> None:
    knowledge = KnowledgeStore()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda i: knowledge.add(f"t.{i}", f"goal {i}", f"zebrafinding number {i}"), range(50)))
    assert len(knowledge) == 50
    assert len(knowledge.related("zebrafinding", {f"t.{i}" for i in range(50)}, limit=20)) == 20


def test_a_file_backed_store_keeps_its_entries_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "knowledge.sqlite"
    first = KnowledgeStore(path)
    first.add("root.0", "Find the GIL", "The GIL serialises bytecode.", ["/docs/gil.md"])
    first.close()
    second = KnowledgeStore(path)
    assert [e.task_id for e in second.related("GIL bytecode", {"root.0"})] == ["root.0"]
    second.close()

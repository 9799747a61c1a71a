"""KnowledgeStore: what a project learned, read from its project store (a temp-dir file) or kept in step
with a run's events, and which of it relates to a goal."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sentient.context.knowledge import KnowledgeStore
from sentient.events import EventBus, NodesRemoved, NodeStatusChanged, RunStarted, snapshot
from sentient.graph.node import NodeType, Source, TaskNode, TaskType
from sentient.graph.plan import SubTask
from sentient.graph.status import TaskStatus
from sentient.graph.task_graph import TaskGraph
from sentient.store import ProjectStore

PROJECT = "p-1"


@pytest.fixture
def projects(tmp_path: Path) -> Iterator[ProjectStore]:
    with ProjectStore.open(tmp_path) as projects:
        projects.create_project(PROJECT, "Explain lists and tuples", "general_agent", {})
        yield projects


@pytest.fixture
def store(projects: ProjectStore) -> KnowledgeStore:
    projects.add_knowledge(
        PROJECT, "root.0", "Find how lists grow", "Lists over-allocate when they grow.", ["/docs/list.md"]
    )
    projects.add_knowledge(
        PROJECT,
        "root.1",
        "Compare tuples and lists",
        "Tuples are immutable; lists are mutable. Tuples hash, lists do not.",
        ["/docs/tuple.md", "/docs/list.md"],
    )
    projects.add_knowledge(PROJECT, "root.2", "Describe garden soil", "Loam holds water and air for roots.", [])
    return KnowledgeStore(projects, PROJECT)


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


def test_the_answer_does_not_depend_on_other_entries_in_the_store(
    projects: ProjectStore, store: KnowledgeStore
) -> None:
    before = store.related("tuples lists grow", ALL)
    for i in range(20):
        projects.add_knowledge(PROJECT, f"root.9.{i}", f"More {i}", "Lists and tuples again, lists everywhere.", [])
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


def test_adding_a_task_again_replaces_its_entry(projects: ProjectStore, store: KnowledgeStore) -> None:
    projects.add_knowledge(PROJECT, "root.2", "Describe garden soil", "Clay soil drains slowly.", [])
    assert len(store) == 3
    assert store.related("loam", ALL) == []
    assert [e.result for e in store.related("clay", ALL)] == ["Clay soil drains slowly."]


def test_entries_in_any_script_relate_by_their_words(projects: ProjectStore) -> None:
    projects.add_knowledge(PROJECT, "root.0", "Найти, как растут списки", "Списки растут с запасом.", [])
    projects.add_knowledge(PROJECT, "root.1", "Cómo crecen las tuplas", "Las tuplas no crecen.", [])
    store = KnowledgeStore(projects, PROJECT)
    assert [e.task_id for e in store.related("Почему списки растут?", ALL)] == ["root.0"]
    assert [e.task_id for e in store.related("¿Las TUPLAS crecen?", ALL)] == ["root.1"]


def test_concurrent_adds_from_threads_are_all_kept(projects: ProjectStore) -> None:
    knowledge = KnowledgeStore(projects, PROJECT)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(
            pool.map(
                lambda i: projects.add_knowledge(PROJECT, f"t.{i}", f"goal {i}", f"zebrafinding {i}", []), range(50)
            )
        )
    assert len(knowledge) == 50
    assert len(knowledge.related("zebrafinding", {f"t.{i}" for i in range(50)}, limit=20)) == 20


def test_a_file_backed_store_keeps_its_entries_across_instances(tmp_path: Path) -> None:
    with ProjectStore.open(tmp_path) as projects:
        projects.create_project(PROJECT, "Explain the GIL", "general_agent", {})
        projects.add_knowledge(PROJECT, "root.0", "Find the GIL", "The GIL serialises bytecode.", ["/docs/gil.md"])
    with ProjectStore.open(tmp_path) as projects:
        assert [e.task_id for e in KnowledgeStore(projects, PROJECT).related("GIL bytecode", {"root.0"})] == ["root.0"]


def test_each_project_has_its_own_entries(projects: ProjectStore, store: KnowledgeStore) -> None:
    projects.create_project("p-2", "Describe soil", "general_agent", {})
    projects.add_knowledge("p-2", "root.0", "Describe clay", "Clay holds water; lists are unrelated.", [])
    other = KnowledgeStore(projects, "p-2")
    assert len(other) == 1 and len(store) == 3
    assert [e.result for e in store.related("clay lists", {"root.0"})] == ["Lists over-allocate when they grow."]


def test_search_ranks_the_whole_project_and_entries_keep_the_finishing_order(store: KnowledgeStore) -> None:
    assert [e.task_id for e in store.search("tuples immutable lists")] == ["root.1", "root.0"]
    assert [e.task_id for e in store.search("loam", limit=5)] == ["root.2"]
    assert store.search("what is the") == [] and store.search("tuples", limit=0) == []
    assert [e.task_id for e in store.entries()] == ["root.0", "root.1", "root.2"]
    assert store.entries()[1].sources == ("/docs/tuple.md", "/docs/list.md")


def test_forget_drops_only_the_given_entries(projects: ProjectStore, store: KnowledgeStore) -> None:
    projects.forget_knowledge(PROJECT, ["root.0", "root.9"])
    assert [e.task_id for e in store.entries()] == ["root.1", "root.2"]


# -- kept in step with a run's events --------------------------------------------------------------


class Run:
    """A graph moved and announced the way the engine's processor does it, with the store subscribed."""

    def __init__(self, knowledge: KnowledgeStore) -> None:
        self.graph = TaskGraph()
        self.bus = EventBus()
        self.bus.subscribe(knowledge)
        root = self.graph.add_root("Explain lists and tuples", TaskType.WRITE, NodeType.PLAN)
        subtasks = [SubTask(goal=g, task_type=TaskType.SEARCH) for g in ("Find list growth", "Find tuple hashing")]
        self.graph.add_children(root.task_id, subtasks, [NodeType.EXECUTE] * 2)

    def finish_both(self) -> None:
        """Start the run and finish both subtasks, root.0 first."""
        self.start()
        self.finish("root.0", "Lists over-allocate when they grow.")
        self.finish("root.1", "Tuples hash by their items.")

    def start(self, *, resumed: bool = False) -> None:
        self.bus.publish(RunStarted(PROJECT, tuple(snapshot(n) for n in self.graph), resumed=resumed))

    def move(self, task_id: str, *targets: TaskStatus) -> TaskNode:
        node = self.graph.get(task_id)
        for target in targets:
            old = node.move_to(target)
            self.bus.publish(NodeStatusChanged(snapshot(node), old, node.history[-1].at))
        return node

    def finish(self, task_id: str, result: str) -> None:
        node = self.move(task_id, TaskStatus.EXECUTING)
        node.result = result
        node.sources = [Source(ref=f"/docs/{task_id}.md", title="Doc", snippet="…")]
        self.move(task_id, TaskStatus.DONE)


def test_a_done_task_is_known_as_soon_as_its_status_is_published(projects: ProjectStore) -> None:
    """The run's entries are kept in memory (the store writer stores them): known at once."""
    knowledge = KnowledgeStore(projects, PROJECT)
    run = Run(knowledge)
    run.start()
    run.finish("root.0", "Lists over-allocate when they grow.")
    assert [(e.task_id, e.goal, e.result, e.sources) for e in knowledge.entries()] == [
        ("root.0", "Find list growth", "Lists over-allocate when they grow.", ("/docs/root.0.md",))
    ]
    assert [e.task_id for e in knowledge.related("lists grow", {"root.0", "root.1"})] == ["root.0"]


def test_a_run_without_a_store_keeps_its_entries_in_memory() -> None:
    knowledge = KnowledgeStore(None, PROJECT)
    run = Run(knowledge)
    run.finish_both()
    assert [e.task_id for e in knowledge.entries()] == ["root.0", "root.1"]
    assert len(knowledge) == 2


def test_a_task_finished_again_moves_to_the_end(projects: ProjectStore) -> None:
    knowledge = KnowledgeStore(projects, PROJECT)
    run = Run(knowledge)
    run.finish_both()
    node = run.graph.get("root.0")
    node.status = TaskStatus.READY  # as engine.resume resets it, announced as a change from DONE
    run.bus.publish(NodeStatusChanged(snapshot(node), TaskStatus.DONE, 0.0))
    run.finish("root.0", "Lists grow by about an eighth.")
    assert [(e.task_id, e.result) for e in knowledge.entries()] == [
        ("root.1", "Tuples hash by their items."),
        ("root.0", "Lists grow by about an eighth."),
    ]


def test_a_task_removed_by_a_replan_loses_its_entry(projects: ProjectStore) -> None:
    knowledge = KnowledgeStore(projects, PROJECT)
    run = Run(knowledge)
    run.finish_both()
    run.bus.publish(NodesRemoved("root", tuple(run.graph.remove_subtree("root.1"))))
    assert [e.task_id for e in knowledge.entries()] == ["root.0"]


def test_a_resumed_run_forgets_what_is_no_longer_done(projects: ProjectStore) -> None:
    """A resumed run starts from the stored entries of its DONE tasks. The entry of a task that is not
    DONE (left behind by an older version, which stored it before the task's status) is deleted, and a
    DONE task redone by the resume loses its entry."""
    run = Run(KnowledgeStore(projects, PROJECT))
    root_0 = run.graph.get("root.0")
    root_0.status, root_0.result = TaskStatus.DONE, "Lists over-allocate when they grow."
    projects.add_knowledge(PROJECT, "root.0", "Find list growth", "Lists over-allocate when they grow.", [])
    projects.add_knowledge(PROJECT, "root.1", "Find tuple hashing", "Tuples hash by their items.", [])  # still READY
    knowledge = KnowledgeStore(projects, PROJECT)
    run.bus.subscribe(knowledge)
    run.start(resumed=True)
    assert [e.task_id for e in knowledge.entries()] == ["root.0"]
    assert [row["task_id"] for row in projects.knowledge(PROJECT)] == ["root.0"]
    root_0.status = TaskStatus.READY  # as engine.resume resets it, announced as a change from DONE
    run.bus.publish(NodeStatusChanged(snapshot(root_0), TaskStatus.DONE, 0.0))
    assert knowledge.entries() == []

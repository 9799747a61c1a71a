"""Citations: one numbered source list per context, markers renumbered so every [n] resolves."""

from __future__ import annotations

from sentient.context.citations import SourceList, cited_numbers, renumber
from sentient.graph.node import Source

A = Source(ref="/docs/a.md", title="A")
B = Source(ref="/docs/b.md", title="B")
C = Source(ref="/docs/c.md", title="C")


def test_sources_are_numbered_from_one_and_deduplicated_by_ref() -> None:
    sources = SourceList([A, B, Source(ref=A.ref, title="A again")])
    assert len(sources) == 2
    assert sources.add(C) == 3
    assert sources.add(Source(ref=B.ref)) == 2
    assert [s.ref for s in sources.sources] == [A.ref, B.ref, C.ref]
    assert sources.sources[0].title == "A", "the first copy of a source is the one kept"


def test_another_passage_of_a_listed_document_joins_its_passage() -> None:
    first = Source(ref=A.ref, title="A", snippet="Alpha sails at 07:15.")
    second = Source(ref=A.ref, title="A", snippet="Alpha's captain is Ines Moreau.", verified=True)
    sources = SourceList([first])
    assert sources.add(second) == 1 and sources.add(first) == 1
    (kept,) = sources.sources
    assert kept.snippet == "Alpha sails at 07:15. … Alpha's captain is Ines Moreau."
    assert kept.verified and kept.title == "A"


def test_adopt_renumbers_local_citations_into_the_shared_list() -> None:
    shared = SourceList([C])
    text = shared.adopt("Lists are mutable [1]; tuples are not [2].", [A, B])
    assert text == "Lists are mutable [2]; tuples are not [3]."
    assert [s.ref for s in shared.sources] == [C.ref, A.ref, B.ref]


def test_adopting_two_texts_that_cite_the_same_source_gives_it_one_number() -> None:
    shared = SourceList()
    first = shared.adopt("x [1] y [2]", [A, B])
    second = shared.adopt("z [1] w [2]", [B, C])
    assert first == "x [1] y [2]"
    assert second == "z [2] w [3]"
    assert len(shared) == 3


def test_adopt_drops_citations_that_point_at_no_source() -> None:
    shared = SourceList()
    text = shared.adopt("Known [1], invented [4], mixed [1, 7].", [A])
    assert text == "Known [1], invented, mixed [1]."
    assert len(shared) == 1


def test_renumber_splits_grouped_citations_and_removes_duplicates() -> None:
    assert renumber("see [1, 3] and [3,3]", {1: 2, 3: 1}) == "see [2][1] and [1]"


def test_two_passages_of_one_document_cited_side_by_side_show_its_number_once() -> None:
    second = Source(ref=A.ref, title="A", snippet="Alpha's captain is Ines Moreau.")
    shared = SourceList()
    assert shared.adopt("Alpha sails at 07:15 [1][2].", [A, second]) == "Alpha sails at 07:15 [1]."


def test_renumber_drops_numbers_without_a_mapping() -> None:
    assert renumber("a [1] b [2] c [9]", {2: 1}) == "a b [1] c"


def test_renumber_leaves_indexing_in_code_alone() -> None:
    text = "Use `xs[0]` for the first item [1].\n```python\nys[2] = 3\n```\nSee also [2]."
    assert renumber(text, {1: 5, 2: 1}) == (
        "Use `xs[0]` for the first item [5].\n```python\nys[2] = 3\n```\nSee also [1]."
    )


def test_renumber_ignores_brackets_that_are_not_numbers() -> None:
    assert renumber("a [note] b [x1] [2]", {2: 1}) == "a [note] b [x1] [1]"


def test_cited_numbers_are_in_order_of_first_appearance() -> None:
    assert cited_numbers("b [3], a [1], again [3], group [2, 1]") == [3, 1, 2]


def test_cited_numbers_skip_code() -> None:
    assert cited_numbers("`xs[0]` then [3]\n```\nys[4]\n```\n[1]") == [3, 1]
    assert cited_numbers("no citations here") == []

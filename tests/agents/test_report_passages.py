"""Which passages a report section's question is answered from: each passage once, even when two
searches show it with different neighbours."""

from __future__ import annotations

from sentient.agents.report import _once
from sentient.graph.node import Source

ROW = "| Gull Rock | 40 minutes | 6 euros |"
WITH_NEIGHBOURS = f"Routes and fares.\n{ROW}\n| Seal Point | 25 minutes | 4 euros |"


def test_a_passage_shown_again_with_its_neighbours_is_read_once_in_the_longer_form() -> None:
    alone = Source(ref="timetable.md", snippet=ROW)
    joined = Source(ref="timetable.md", snippet=WITH_NEIGHBOURS)
    news = Source(ref="news.md", snippet="The Gull Rock crossing was busy.")

    assert _once([alone, news, joined]) == [news, joined]
    assert _once([joined, news, alone]) == [joined, news]


def test_the_same_words_in_another_document_and_a_repeated_passage_are_kept_once_each() -> None:
    here = Source(ref="timetable.md", snippet=ROW)
    elsewhere = Source(ref="fares_2024.md", snippet=ROW)

    assert _once([here, elsewhere, here.model_copy(update={"snippet": f" {ROW}\n"})]) == [here, elsewhere]

"""Quotes: passages' sentences word for word, one line per passage under its headings, and a
report that quotes one sentence twice keeping it where it is first quoted."""

from __future__ import annotations

from sentient.agents.quotes import GAP, QUOTE, apart, quoted_lines, to_quote, unrepeated
from sentient.graph.node import Source


def source(title: str, snippet: str) -> Source:
    return Source(ref="paging.md", title=title, snippet=snippet, kind="docs")


PAGING = source(
    "paging.md - Paging policy",
    "Paging policy The duty engineer is paged. A page is answered in ten minutes. Pages go by SMS. Nobody is paged twice.",
)
ROTA = source("paging.md - Rota", "Rota Ana is on duty in May. 五月はアナが当番です。")


def test_a_passage_is_quoted_under_its_headings_without_them_and_with_a_gap_where_sentences_are_left_out() -> None:
    said = to_quote([PAGING, ROTA])
    assert said[0] == (1, "The duty engineer is paged.")  # the heading it begins with is left out
    assert (2, "五月はアナが当番です。") in said

    lines = quoted_lines([PAGING, ROTA], said, [0, 1, 3, 5])

    assert lines == [
        f"{QUOTE}**Paging policy:** The duty engineer is paged. A page is answered in ten minutes.{GAP}Nobody is paged twice. [1]",
        f"{QUOTE}**Rota:** 五月はアナが当番です。 [2]",
    ]


def test_a_sentence_quoted_again_later_in_a_report_is_left_out_there() -> None:
    overview = f"{QUOTE}**Paging policy:** The duty engineer is paged. A page is answered in ten minutes. [1]"
    section = "\n".join(
        [
            "The duty engineer answers within ten minutes [1].",
            f"{QUOTE}**Paging policy:** The duty engineer is paged.{GAP}Pages go by SMS. A page is answered in ten minutes. [1]",
            f"{QUOTE}**Rota:** 五月はアナが当番です。 [2]",
        ]
    )
    again = f"{QUOTE}**Rota:** 五月はアナが当番です。 [3]"

    assert unrepeated([overview, section, again]) == [
        overview,
        f"The duty engineer answers within ten minutes [1].\n{QUOTE}**Paging policy:** Pages go by SMS. [1]\n"
        f"{QUOTE}**Rota:** 五月はアナが当番です。 [2]",
        "",  # a line left with no sentence is dropped
    ]


def test_answers_are_not_quotes_even_when_they_repeat_a_sentence() -> None:
    first = f"- **Severity:** SEV-2. [1]\n{QUOTE}**Incidents:** SEV-2. [1]"
    second = "- **Severity:** SEV-2. [2]"  # another item's answer: kept

    assert unrepeated([first, second]) == [first, second]
    assert apart(first) == ("- **Severity:** SEV-2. [1]", [f"{QUOTE}**Incidents:** SEV-2. [1]"])

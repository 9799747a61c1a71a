"""The one notion of "verified" and "confirmed" (sentient.context.grounding), and the text code
under it, which must work for any language."""

from __future__ import annotations

import pytest

from sentient.context.grounding import (
    Grounded,
    accepted,
    agrees,
    confirmed,
    judged,
    rejudged,
    strip_markers,
    to_judge,
)
from sentient.context.wording import codes, holds, normalize, questions
from sentient.graph.node import Source

SOURCES = [Source(ref="a.md", snippet="A."), Source(ref="b.md", snippet="B."), Source(ref="c.md", snippet="C.")]


def test_a_supported_answer_cites_its_passage_and_only_that_one_is_verified() -> None:
    grounded = judged("Die Schleife führt sie aus.", SOURCES, [2], supports=True)
    assert grounded.text == "Die Schleife führt sie aus. [2]"
    assert [s.verified for s in grounded.sources] == [None, True, None]
    assert grounded.confirmed


def test_an_unsupported_answer_cites_nothing_and_its_passage_is_marked_unverified() -> None:
    grounded = judged("It runs them [2].", SOURCES, [2], supports=False)
    assert grounded.text == "It runs them."  # the model's own marker goes too
    assert [s.verified for s in grounded.sources] == [None, False, None]
    assert not grounded.confirmed
    assert grounded.notes == ["the verifier found that source(s) [2] do not support the answer"]


@pytest.mark.parametrize(
    ("passage", "words", "held"),
    [
        ("Retention: GPS traces are kept for 90 days.", "90 days", True),
        ("Retention: GPS traces are kept for 190 days.", "90 days", False),  # whole words only
        ("Die Aufbewahrung beträgt 90 Tage.", "BETRÄGT 90 tage", True),  # case and accents folded
        ("Owner: María-José Núñez (on call)", "Maria Jose Nunez", True),  # punctuation is spacing
        ("保留期限为九十天。", "九十天", True),  # a script written without spaces
        ("The loop runs tasks.", "", False),  # no words: nothing to find
        ("Floor division: x // y rounds down.", "//", True),  # only symbols: found as written
        ("True division: x / y.", "//", False),
    ],
)
def test_a_passage_holds_an_answers_words_in_any_script(passage: str, words: str, held: bool) -> None:
    assert holds(passage, words) is held
    assert holds(passage, "not in it", words) is held  # any of several


def test_a_named_passage_is_cited_only_if_it_holds_the_answers_words_and_reads_the_same() -> None:
    question = "Who gets paged first?"
    sources = [Source(ref="a.md", title="Paging", snippet="Pages go to the primary on call.")]
    cited = accepted(question, "The primary on call is paged.", "primary on call", sources, 1, "the primary on call")
    assert cited.text == "The primary on call is paged. [1]" and cited.confirmed and cited.settled

    # The answer itself is held; read alone, the passage gives words its short form holds.
    copied = accepted(question, "Pages go to the primary on call.", "the primary on call", sources, 1, "primary")
    assert copied.confirmed

    uncited = accepted(question, "The secondary is paged [1].", "the secondary", sources, 1, "the secondary")
    assert uncited.text == "The secondary is paged." and not uncited.confirmed
    # Supported by the verifier: no more research (the answer may be worded otherwise in the
    # passage), but nothing shown as evidence.
    assert uncited.settled and not uncited.contradicted
    assert uncited.sources[0].verified is None

    # Read alone, the passage gives another answer, or words of the question, which answer nothing:
    # supported (it stands if research finds nothing better), but that doubt is researched.
    for reading in ("the secondary", "paged", ""):
        read_otherwise = accepted(question, "The primary on call is paged.", "primary on call", sources, 1, reading)
        assert not read_otherwise.confirmed and read_otherwise.supported and read_otherwise.contradicted
        assert not read_otherwise.settled
        assert read_otherwise.reading == ("the secondary" if reading == "the secondary" else "")  # another answer
        assert read_otherwise.notes == [f"source 1, read for the question alone, gives {reading!r}: not cited"]


def test_a_passage_that_does_not_name_the_code_the_question_names_is_not_cited_and_is_researched() -> None:
    question = "Who was the incident commander of OPS-117?"
    other = [Source(ref="ops-109.md", title="OPS-109", snippet="Incident commander: Ola Berg.")]
    wrong = accepted(question, "Ola Berg", "Ola Berg", other, 1, "Ola Berg")
    assert not wrong.confirmed and wrong.contradicted and not wrong.settled
    assert wrong.reading == "Ola Berg"  # what stands if research finds nothing better
    assert wrong.notes == ["source 1 does not name OPS-117: not cited"]

    unread = accepted(question, "Ola Berg", "Ola Berg", other, 1, "")
    assert unread.contradicted and unread.reading == "Ola Berg"  # read in another passage, maybe

    own = [Source(ref="ops-117.md", title="Post-mortem OPS 117", snippet="Incident commander: Ada Brandt.")]
    assert accepted(question, "Ada Brandt", "Ada Brandt", own, 1, "Ada Brandt").confirmed  # spacing folded


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("Who was on call when OPS-117 happened?", ["OPS-117"]),
        ("What is our Q1 2025 target, and the 2024 one?", ["Q1"]),  # numbers alone are not codes
        ("In Python 3.11, which module has b64encode?", ["b64encode"]),
        ("Wer leitet INC-2024-031? Und ТВ-9?", ["INC-2024-031", "ТВ-9"]),
        ("事件OPS-117的负责人是谁？", ["OPS-117"]),  # a code ends where a script without spaces begins
    ],
)
def test_codes_are_words_that_mix_letters_and_digits_in_any_script(question: str, named: list[str]) -> None:
    assert codes(question) == named


@pytest.mark.parametrize(
    ("reading", "answer", "short", "same"),
    [
        ("Tannery Yard", "She is based at Tannery Yard.", "Tannery Yard", True),
        ("object.__getitem__", "It is __getitem__.", "__getitem__", True),  # one holds the other
        ("Dagny Holloway", "Gideon Farrow", "Finance manager", False),
        ("九十天", "保留期限为九十天", "九十天", True),
        ("Tallyman", "The team behind Tallyman is Finance.", "Finance", False),  # in the question
        ("unittest.mock.MagicMock", "MagicMock", "A Mock with magic methods.", True),  # the reading holds the answer
        ("Tallyman Finance", "Tallyman", "", False),  # ... not when the question holds the answer
    ],
)
def test_a_reading_agrees_with_an_answer_when_one_holds_the_other(
    reading: str, answer: str, short: str, same: bool
) -> None:
    assert agrees(reading, "Who is behind Tallyman?", answer, short) is same


def test_an_answer_is_confirmed_only_by_a_verified_source_it_cites() -> None:
    assert confirmed("Yes [1].", {1})
    assert not confirmed("Yes [2].", {1})
    assert not confirmed("Yes.", {1})
    assert not confirmed("`xs[1]` is the second item.", {1})  # an index in code is no citation


def test_an_aggregate_the_verifier_rejects_loses_its_verified_badges() -> None:
    verified = [s.model_copy(update={"verified": True}) for s in SOURCES]
    answer = Grounded("A and C [1][3].", verified)
    assert to_judge(answer) == [1, 3]
    assert rejudged(answer, supports=True) is answer
    rejected = rejudged(answer, supports=False)
    assert [s.verified for s in rejected.sources] == [False, True, False]
    assert not rejected.confirmed


def test_markers_are_stripped_but_code_keeps_its_brackets() -> None:
    assert strip_markers("Use `xs[0]` here [1], [2].") == "Use `xs[0]` here,."
    assert strip_markers("[3]") == ""


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Что такое Python?", "что такое python"),
        ("Qu'est-ce qu'un générateur ?", "qu est ce qu un generateur"),
        ("Straße und GROSS", "strasse und gross"),
        ("__floordiv__() 09:00–10:30", "floordiv 09 00 10 30"),
        ("什么是生成器？", "什么是生成器"),
    ],
)
def test_normalize_keeps_the_words_of_every_script(text: str, words: str) -> None:
    assert normalize(text) == words


@pytest.mark.parametrize(
    ("goal", "asks"),
    [
        ("What is a generator?", True),
        ("Was ist ein Generator? Bitte kurz.", True),
        ("什么是生成器？", True),
        ("ما هو المولد؟", True),
        ("Τι είναι μια γεννήτρια;", True),
        ("Write an overview of generators.", False),
        ("x = a; b", False),
    ],
)
def test_a_question_is_recognised_in_any_script(goal: str, asks: bool) -> None:
    assert bool(questions(goal)) is asks

from sentient.eval.grading import answer_body, citation_markers, contains_answer, looks_not_attempted, normalize


def test_normalize_folds_case_accents_and_punctuation():
    assert normalize("  Café-Crème: asyncio.sleep()! ") == "cafe creme asyncio sleep"


def test_answer_matches_whole_words_only():
    assert contains_answer("It waits 30 seconds.", ["30"])
    assert not contains_answer("It waits 30 seconds.", ["3"])
    assert contains_answer("Use `asyncio.sleep()` here", ["asyncio.sleep"])
    assert not contains_answer("nothing relevant", ["asyncio.sleep", "loop"])


def test_answer_in_a_script_without_spaces_matches_inside_a_sentence():
    assert contains_answer("保留期限为九十天。", ["九十天"])
    assert contains_answer("データは九十日間保存されます", ["九十日"])
    assert not contains_answer("保留期限为三十天。", ["九十天"])


def test_empty_answers_never_match():
    assert not contains_answer("anything", ["", "  "])


def test_answer_body_drops_references():
    report = "The answer is Ada Lovelace [1].\n\n## References\n\n1. Ada Lovelace biography — `a.md`\n"
    assert answer_body(report) == "The answer is Ada Lovelace [1]."
    assert contains_answer(answer_body("Not here.\n\n## References\n\n1. Ada Lovelace"), ["Ada Lovelace"]) is False


def test_non_ascii_punctuation_separates_words():
    assert normalize("09:00–10:30, résumé") == "09 00 10 30 resume"
    assert contains_answer("open Wednesdays 09:00–10:30", ["Wednesdays 09:00"])


def test_declining_answers_look_not_attempted() -> None:

    for answer in (
        "",
        "I don't know.",
        "The sources do not contain the answer.",
        "The provided documents don't say which pier it is.",
        "The installer is not mentioned in the passages.",
        "There is no information about that [1].",
        "Unable to determine the year.",
    ):
        assert looks_not_attempted(answer), answer
    for answer in ("The beacon is teal [1].", "It was installed in 2019.", "Knowledge is not free"):
        assert not looks_not_attempted(answer), answer


def test_citation_markers_count_every_number_outside_code() -> None:

    assert citation_markers("Teal [1], in 2019 [2, 3]; again [1]. Code: `xs[0]`\n```\nys[4]\n```") == [1, 2, 3, 1]
    assert citation_markers("No citations here.") == []

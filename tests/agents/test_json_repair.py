import json

import pytest

from sentient.agents.json_repair import close_truncated, extract_json


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"answer": "plain"}', {"answer": "plain"}),
        ('Sure! Here it is: {"answer": "x"} Hope that helps.', {"answer": "x"}),
        ('```json\n{"answer": "fenced"}\n```', {"answer": "fenced"}),
        ('{"answer": "line one\nline two"}', {"answer": "line one\nline two"}),
    ],
)
def test_complete_json_is_extracted_without_a_repair(raw: str, expected: dict) -> None:
    text, repaired = extract_json(raw)
    assert json.loads(text) == expected
    assert repaired is False


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"answer": "cut off in the midd', {"answer": "cut off in the midd"}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"a": 1, "b":', {"a": 1}),
        ('{"a": 1, "partial_ke', {"a": 1}),
        ('{"a": "ends with an escape \\', {"a": "ends with an escape "}),
        ('{"subtasks": [{"goal": "x"}, {"goal": "y", ', {"subtasks": [{"goal": "x"}, {"goal": "y"}]}),
    ],
)
def test_json_cut_off_by_a_token_limit_is_closed_and_flagged(raw: str, expected: dict) -> None:
    text, repaired = extract_json(raw)
    assert json.loads(text) == expected
    assert repaired is True


def test_text_without_json_is_returned_unrepaired_for_the_validator_to_reject() -> None:
    assert extract_json("I cannot answer that.") == ("I cannot answer that.", False)


def test_brackets_inside_strings_do_not_count_as_structure() -> None:
    assert json.loads(close_truncated('{"a": "has } and ] inside')) == {"a": "has } and ] inside"}


@pytest.mark.parametrize(
    "raw",
    [
        '{"answer": "Run it:\\n```python\\nprint(1)\\n```\\ndone"}',
        'Here it is: {"answer": "```sh\\nls\\n```"} — enjoy.',
        '```json\n{"answer": "quote ```inner``` fence"}\n```',
    ],
)
def test_a_valid_answer_quoting_a_code_fence_parses_whole(raw: str) -> None:
    text, repaired = extract_json(raw)
    assert "```" in json.loads(text)["answer"]
    assert repaired is False

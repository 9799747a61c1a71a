"""Dataset loading: Sentient's JSONL, SimpleQA's CSV and FRAMES (CSV or JSONL); bad input names file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentient.eval.dataset import load_dataset, select
from sentient.exceptions import EvalError, SentientError


def write_jsonl(path: Path, *rows: dict[str, object] | str) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_jsonl_questions_keep_split_hops_and_extra_fields(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "qa.jsonl",
        {"id": "a", "question": "Q1?", "answers": ["x", "y"], "hops": 2, "docs": ["pier.md"], "topic": "ports"},
        "",  # blank lines are allowed
        {"id": 7, "question": "Q2?", "answers": ["z"], "split": "heldout"},
    )
    first, second = load_dataset(path)
    assert (first.id, first.answers, first.split, first.hops, first.docs) == ("a", ["x", "y"], "dev", 2, ["pier.md"])
    assert first.model_extra == {"topic": "ports"}
    assert (second.id, second.split, second.hops) == ("7", "heldout", None)


def test_a_question_asking_several_things_lists_every_part(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "qa.jsonl", {"id": "a", "question": "A and B?", "answers": ["x"], "also": [["y", "z"]]}
    )
    (question,) = load_dataset(path)
    assert question.parts == [["x"], ["y", "z"]]
    assert question.model_extra == {}


def test_simpleqa_csv_layout(tmp_path: Path) -> None:
    path = tmp_path / "simple_qa_test_set.csv"
    path.write_text(
        'metadata,problem,answer\n"{\'topic\': \'Art\'}","Who painted ""The Harbour""?",Ada Lovelace\n'
        "{},In which year?,1987\n"
    )
    questions = load_dataset(path)
    assert [(q.id, q.question, q.answers) for q in questions] == [
        ("2", 'Who painted "The Harbour"?', ["Ada Lovelace"]),
        ("3", "In which year?", ["1987"]),
    ]
    assert questions[0].model_extra == {"metadata": "{'topic': 'Art'}"}


def test_frames_layout_in_csv_and_jsonl(tmp_path: Path) -> None:
    csv_path = tmp_path / "frames.csv"
    csv_path.write_text(",Prompt,Answer,reasoning_types\n0,Which river?,The Thames,Multiple constraints\n")
    (from_csv,) = load_dataset(csv_path)
    assert (from_csv.question, from_csv.answers) == ("Which river?", ["The Thames"])
    assert from_csv.model_extra == {"reasoning_types": "Multiple constraints"}  # the unnamed index column is dropped
    jsonl = write_jsonl(tmp_path / "frames.jsonl", {"Prompt": "Which river?", "Answer": "The Thames"})
    (from_jsonl,) = load_dataset(jsonl)
    assert (from_jsonl.id, from_jsonl.answers) == ("1", ["The Thames"])


def test_select_takes_the_split_then_the_limit(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "qa.jsonl",
        *({"id": f"q{i}", "question": "?", "answers": ["a"], "split": "heldout" if i % 2 else "dev"} for i in range(6)),
    )
    questions = load_dataset(path)
    assert [q.id for q in select(questions, "dev")] == ["q0", "q2", "q4"]
    assert [q.id for q in select(questions, "heldout", 2)] == ["q1", "q3"]
    assert len(select(questions, "all")) == 6


def test_select_takes_the_ids_asked_in_dataset_order_and_names_an_id_the_split_lacks(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "qa.jsonl",
        *({"id": f"q{i}", "question": "?", "answers": ["a"], "split": "heldout" if i % 2 else "dev"} for i in range(6)),
    )
    questions = load_dataset(path)
    assert [q.id for q in select(questions, "dev", ids=["q4", "q0"])] == ["q0", "q4"]
    assert [q.id for q in select(questions, "all", 1, ids=["q3", "q1"])] == ["q1"]
    with pytest.raises(EvalError, match=r"no 'q1', 'q9' in the dev split"):
        select(questions, "dev", ids=["q0", "q1", "q9"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "b", "question": "Q?", "answers": ["x"]', "not valid JSON"),
        ('["a list"]', "expected a JSON object, got list"),
        ('{"id": "b", "text": "Q?"}', "no question field"),
        ('{"id": "b", "question": "Q?"}', "no 'answers' field"),
        ('{"id": "b", "question": "Q?", "answers": []}', "answers"),
        ('{"id": "b", "question": "Q?", "answers": ["  "]}', "blank"),
        ('{"id": "b", "question": "Q?", "answers": ["x"], "split": "test"}', "split"),
        ('{"id": "b", "question": "Q?", "answers": ["x"], "hops": 3}', "hops"),
        ('{"id": "b", "question": "Q?", "answers": ["x"], "also": [[]]}', "part"),
        ('{"id": "b", "question": "Q?", "answers": ["x"], "also": [["y", " "]]}', "part"),
        ('{"id": "a", "question": "Q?", "answers": ["x"]}', "duplicate id 'a' (first on line 1)"),
    ],
)
def test_a_bad_line_is_an_eval_error_naming_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = write_jsonl(tmp_path / "qa.jsonl", {"id": "a", "question": "Q?", "answers": ["x"]}, line)
    with pytest.raises(EvalError) as caught:
        load_dataset(path)
    assert isinstance(caught.value, SentientError)
    assert str(caught.value).startswith(f"{path}, line 2: ")
    assert message in str(caught.value)
    assert caught.value.line == 2


def test_missing_and_empty_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="does not exist"):
        load_dataset(tmp_path / "none.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(EvalError, match="no questions"):
        load_dataset(tmp_path / "empty.jsonl")


def test_a_bad_csv_row_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "qa.csv"
    path.write_text("problem,answer\nQ1?,a\nQ2?,\n")
    with pytest.raises(EvalError, match=r"qa\.csv, line 3: .*blank"):
        load_dataset(path)

"""The evaluation datasets in bench/datasets are well formed and answerable from their corpora.

Each line is ``{"id", "question", "answers", "split", "hops", "evidence"}``. The first accepted
answer is the canonical one: it must occur (``contains_answer``: normalised, whole words) in
the passages the search tool indexes for the question's evidence, so a miss in an eval is
the system's, never the dataset's. Held-out questions live in their own ``*_heldout_qa.jsonl``
files, every row held out; every row of every other question file is dev.
``private_docs_multipart_qa.jsonl`` asks two to four things a question (``also``: the other parts'
answers) about the same private documents; every part must occur in its evidence.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from sentient.eval.grading import contains_answer, normalize
from sentient.tools.docs_search import DocsIndex

DATASETS = Path(__file__).resolve().parents[2] / "bench" / "datasets"
PRIVATE_DOCS = DATASETS / "private_docs"
PRIVATE_QA = DATASETS / "private_docs_qa.jsonl"
PYTHON_QA = DATASETS / "python_docs_qa.jsonl"
NATURAL_QA = DATASETS / "python_natural_qa.jsonl"
NATURAL_HELDOUT_QA = DATASETS / "python_natural_heldout_qa.jsonl"
MULTIPART_QA = DATASETS / "private_docs_multipart_qa.jsonl"
COMPANY_DOCS = DATASETS / "company_docs"
COMPANY_QA = DATASETS / "company_docs_qa.jsonl"
COMPANY_BRIDGED_QA = DATASETS / "company_docs_bridged_qa.jsonl"
COMPANY_CROSSLANG_QA = DATASETS / "company_docs_crosslang_qa.jsonl"
WIND_DOCS = DATASETS / "wind_docs"
WIND_QA = DATASETS / "wind_docs_qa.jsonl"
FERRY_DOCS = DATASETS / "ferry_docs"
FERRY_HELDOUT_QA = DATASETS / "ferry_docs_heldout_qa.jsonl"
FIELDS = {"id", "question", "answers", "split", "hops", "evidence"}


def _load(path: Path) -> list[dict[str, Any]]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [json.loads(line) for line in lines]


PRIVATE = _load(PRIVATE_QA)
PYTHON = _load(PYTHON_QA)
NATURAL = _load(NATURAL_QA)
NATURAL_HELDOUT = _load(NATURAL_HELDOUT_QA)
MULTIPART = _load(MULTIPART_QA)
COMPANY = _load(COMPANY_QA)
COMPANY_BRIDGED = _load(COMPANY_BRIDGED_QA)
COMPANY_CROSSLANG = _load(COMPANY_CROSSLANG_QA)
WIND = _load(WIND_QA)
FERRY_HELDOUT = _load(FERRY_HELDOUT_QA)


def _passages(db_file: Path) -> list[tuple[str, str, str]]:
    """(source, title, body) of every passage in an index file."""
    conn = sqlite3.connect(f"{db_file.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return list(conn.execute("SELECT source, title, body FROM passages"))
    finally:
        conn.close()


def _python_evidence_key(title: str) -> str:
    """The evidence name of a Python-docs passage: topics#NAME, module NAME or module.member."""
    if title.startswith("Python reference: "):
        return "topics#" + title.removeprefix("Python reference: ")
    if title.startswith("Python module "):
        return "module " + title.removeprefix("Python module ")
    return title


@pytest.fixture(scope="module")
def python_passages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Passage bodies of the default Python-docs index, by evidence name (built once)."""
    cache = tmp_path_factory.mktemp("pydocs")
    DocsIndex.python_docs(cache).close()
    (db_file,) = cache.glob("pydocs-*.sqlite")
    by_key: dict[str, list[str]] = defaultdict(list)
    for _source, title, body in _passages(db_file):
        by_key[_python_evidence_key(title)].append(body)
    return dict(by_key)


def _folder_passages(folder: Path, db_file: Path) -> dict[str, list[str]]:
    """Passage bodies of ``folder`` as DocsIndex.from_folder indexes it, by file name."""
    DocsIndex.from_folder(folder, db_file).close()
    by_file: dict[str, list[str]] = defaultdict(list)
    for source, _title, body in _passages(db_file):
        by_file[Path(source).name].append(body)
    return dict(by_file)


@pytest.fixture(scope="module")
def private_passages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Passage bodies of the private-docs folder as DocsIndex.from_folder indexes it, by file name."""
    return _folder_passages(PRIVATE_DOCS, tmp_path_factory.mktemp("private") / "index.sqlite")


@pytest.fixture(scope="module")
def company_passages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Passage bodies of the company-docs folder as DocsIndex.from_folder indexes it, by file name."""
    return _folder_passages(COMPANY_DOCS, tmp_path_factory.mktemp("company") / "index.sqlite")


@pytest.fixture(scope="module")
def wind_passages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Passage bodies of the wind-docs folder as DocsIndex.from_folder indexes it, by file name."""
    return _folder_passages(WIND_DOCS, tmp_path_factory.mktemp("wind") / "index.sqlite")


@pytest.fixture(scope="module")
def ferry_passages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Passage bodies of the ferry-docs folder as DocsIndex.from_folder indexes it, by file name."""
    return _folder_passages(FERRY_DOCS, tmp_path_factory.mktemp("ferry") / "index.sqlite")


@pytest.mark.parametrize(
    ("rows", "prefix", "minimum"),
    [
        (PRIVATE, "pd-", 40),
        (PYTHON, "py-", 60),
        (NATURAL, ("pn-", "ph-"), 65),  # ph-001..155: held out until their one run (3 and 4 Dec 2026)
        (NATURAL_HELDOUT, "ph-", 30),
        (COMPANY, ("cd-", "ch-"), 45),  # ch-001..053: held out until their one run (3 and 4 Dec 2026)
        (COMPANY_BRIDGED, "cb-", 19),
        (COMPANY_CROSSLANG, "cx-", 12),
        (WIND, "wh-", 40),  # held out until their one run (4 Dec 2026)
        (FERRY_HELDOUT, "fh-", 40),
    ],
    ids=[
        "private",
        "python",
        "python-natural",
        "python-natural-heldout",
        "company",
        "bridged",
        "crosslang",
        "wind",
        "ferry-heldout",
    ],
)
def test_dataset_is_well_formed(rows: list[dict[str, Any]], prefix: str | tuple[str, ...], minimum: int) -> None:
    assert len(rows) >= minimum
    ids = [row["id"] for row in rows]
    assert len(set(ids)) == len(ids), "ids must be unique"
    for row in rows:
        assert set(row) == FIELDS, row["id"]
        assert isinstance(row["id"], str) and row["id"].startswith(prefix)
        assert isinstance(row["question"], str) and row["question"].strip().endswith("?"), row["id"]
        answers = row["answers"]
        assert isinstance(answers, list) and answers, row["id"]
        assert all(isinstance(a, str) and a.strip() for a in answers), row["id"]
        assert normalize(answers[0]), f"{row['id']}: the canonical answer has no words"
        assert len(set(answers)) == len(answers), f"{row['id']}: duplicate answers"
        assert row["split"] in {"dev", "heldout"}, row["id"]
        assert row["hops"] in {1, 2}, row["id"]
        evidence = row["evidence"]
        assert isinstance(evidence, list) and evidence and all(isinstance(e, str) for e in evidence), row["id"]
        assert len(set(evidence)) == len(evidence), row["id"]
        if row["hops"] == 2:
            assert len(evidence) >= 2, f"{row['id']}: a two-hop question needs two evidence sources"
        # A question that already contains its answer measures nothing.
        assert not contains_answer(row["question"], answers[:1]), row["id"]


@pytest.mark.parametrize(
    "path", sorted(p for p in DATASETS.glob("*_qa.jsonl") if "multipart" not in p.name), ids=lambda p: p.name
)
def test_held_out_files_are_all_held_out_and_the_others_all_dev(path: Path) -> None:
    # A held-out split is written fresh and run once; rows that any system has run on are dev.
    expected = "heldout" if path.name.endswith("_heldout_qa.jsonl") else "dev"
    wrong = [row["id"] for row in _load(path) if row["split"] != expected]
    assert not wrong, f"{path.name}: rows not {expected}: {wrong}"


@pytest.mark.parametrize(
    "rows",
    [NATURAL + NATURAL_HELDOUT, COMPANY, WIND, FERRY_HELDOUT],
    ids=["natural", "company", "wind", "ferry-heldout"],
)
def test_dev_and_held_out_questions_are_distinct(rows: list[dict[str, Any]]) -> None:
    questions = [" ".join(row["question"].casefold().split()) for row in rows]  # "<" and "==" differ
    assert len(set(questions)) == len(questions)


@pytest.mark.parametrize("rows", [NATURAL, NATURAL_HELDOUT], ids=["natural", "natural-heldout"])
def test_natural_questions_do_not_contain_an_accepted_answer_or_its_inflection(rows: list[dict[str, Any]]) -> None:
    # "Which method joins strings?" hints its answer, and a wrong reply that echoes the question
    # ("... enters the block" for __enter__) would be graded correct on the echoed word.
    for row in rows:
        question = f" {normalize(row['question'])} "
        for answer in map(normalize, row["answers"]):
            forms = {answer + ending for ending in ("", "s", "es", "d", "ed", "ing")} | {
                answer.removesuffix("e") + "ing"
            }
            assert not any(f" {form} " in question for form in forms), (row["id"], answer)


def test_private_hops_are_balanced() -> None:
    two_hop = sum(row["hops"] == 2 for row in PRIVATE)
    assert abs(2 * two_hop - len(PRIVATE)) <= len(PRIVATE) // 5  # about half one-hop, half two-hop


def test_private_docs_folder_is_a_fictional_corpus_of_the_agreed_size() -> None:
    files = sorted(p for p in PRIVATE_DOCS.iterdir() if p.is_file())
    assert 15 <= len(files) <= 25
    assert {p.suffix for p in files} == {".md", ".txt"}
    for path in files:
        words = len(path.read_text(encoding="utf-8").split())
        assert 150 <= words <= 600, f"{path.name}: {words} words"


def test_private_answers_occur_in_their_evidence(private_passages: dict[str, list[str]]) -> None:
    for row in PRIVATE:
        canonical = row["answers"][:1]
        missing = [name for name in row["evidence"] if name not in private_passages]
        assert not missing, f"{row['id']}: evidence files not indexed: {missing}"
        texts = [(PRIVATE_DOCS / name).read_text(encoding="utf-8") for name in row["evidence"]]
        assert contains_answer("\n\n".join(texts), canonical), row["id"]
        # ... and inside one indexed passage, so retrieval can actually return it.
        passages = [body for name in row["evidence"] for body in private_passages[name]]
        assert any(contains_answer(body, canonical) for body in passages), row["id"]


def test_every_part_of_a_multipart_question_occurs_in_an_indexed_passage(
    private_passages: dict[str, list[str]],
) -> None:
    assert len(MULTIPART) >= 10
    assert len({row["id"] for row in MULTIPART}) == len(MULTIPART)
    for row in MULTIPART:
        assert set(row) == {"id", "question", "answers", "also", "evidence"}, row["id"]
        assert row["question"].endswith(("?", ".")) and " and " in row["question"], row["id"]
        passages = [body for name in row["evidence"] for body in private_passages[name]]
        for part in [row["answers"], *row["also"]]:
            assert any(contains_answer(body, part[:1]) for body in passages), (row["id"], part[0])
            assert not contains_answer(row["question"], part[:1]), (row["id"], part[0])


def test_private_two_hop_answers_need_the_second_document() -> None:
    # The first evidence file names the question's subject (an incident, a service); the answer
    # lives in another file, so one passage about the subject cannot answer it alone.
    for row in PRIVATE:
        if row["hops"] == 2:
            first = (PRIVATE_DOCS / row["evidence"][0]).read_text(encoding="utf-8")
            assert not contains_answer(first, row["answers"][:1]), row["id"]


@pytest.mark.parametrize("rows", [PYTHON, NATURAL, NATURAL_HELDOUT], ids=["python", "natural", "natural-heldout"])
def test_python_answers_occur_in_the_default_corpus(
    rows: list[dict[str, Any]], python_passages: dict[str, list[str]]
) -> None:
    for row in rows:
        missing = [key for key in row["evidence"] if key not in python_passages]
        assert not missing, f"{row['id']}: evidence not in the Python docs index: {missing}"
        passages = [body for key in row["evidence"] for body in python_passages[key]]
        assert any(contains_answer(body, row["answers"][:1]) for body in passages), row["id"]


def test_company_two_hop_share_is_about_forty_percent() -> None:
    two_hop = sum(row["hops"] == 2 for row in COMPANY)
    assert 0.35 <= two_hop / len(COMPANY) <= 0.45, f"{two_hop} of {len(COMPANY)} two-hop"


@pytest.mark.parametrize(
    "rows",
    [COMPANY, COMPANY_BRIDGED, COMPANY_CROSSLANG],
    ids=["company", "bridged", "crosslang"],
)
def test_company_answers_occur_in_an_indexed_passage_of_their_evidence(
    rows: list[dict[str, Any]], company_passages: dict[str, list[str]]
) -> None:
    _answers_occur_in_their_evidence(rows, company_passages)


def test_wind_answers_occur_in_an_indexed_passage_of_their_evidence(wind_passages: dict[str, list[str]]) -> None:
    _answers_occur_in_their_evidence(WIND, wind_passages)


def test_ferry_answers_occur_in_an_indexed_passage_of_their_evidence(ferry_passages: dict[str, list[str]]) -> None:
    _answers_occur_in_their_evidence(FERRY_HELDOUT, ferry_passages)


def _answers_occur_in_their_evidence(rows: list[dict[str, Any]], passages: dict[str, list[str]]) -> None:
    for row in rows:
        canonical = row["answers"][:1]
        missing = [name for name in row["evidence"] if name not in passages]
        assert not missing, f"{row['id']}: evidence files not indexed: {missing}"
        # A two-hop answer lives in a document after the one naming the question's subject.
        sources = row["evidence"][1:] if row["hops"] == 2 else row["evidence"]
        bodies = [body for name in sources for body in passages[name]]
        assert any(contains_answer(body, canonical) for body in bodies), row["id"]


def test_a_bridged_question_is_a_two_hop_dev_question_with_its_bridge_resolved() -> None:
    two_hop = {row["id"]: row for row in COMPANY if row["hops"] == 2}
    for row in COMPANY_BRIDGED:
        original = two_hop.get(f"cd-{row['id'][3:]}")
        assert original is not None, f"{row['id']}: no two-hop company question cd-{row['id'][3:]}"
        assert row["hops"] == 1 and row["answers"] == original["answers"], row["id"]

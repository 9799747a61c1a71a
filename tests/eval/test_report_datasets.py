"""The report goal sets in bench/datasets load, follow their rules, and are answerable from their corpora.

``company_docs_reports.jsonl`` (dev; its ``rh-`` goals were held out until their one run) asks for
reports over ``company_docs/``, and ``wind_docs_reports.jsonl`` (dev; held out until its one run,
4 Dec 2026) over ``wind_docs/``: each goal names the documents its points come from (at least 4)
and has at least 10 points, each stated (in one of its accepted strings) in those documents.
``ferry_docs_reports.jsonl`` (dev; written blind from the brief of ``ferry_docs/``, then looked
up, and held out until its one run, 4 Dec 2026) and ``private_docs_reports_heldout.jsonl`` (held
out: written blind from the brief of ``private_docs/``, then looked up, before any run) follow the
same rules. ``python_docs_reports.jsonl`` asks for reports over the Python docs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sentient.eval.grading import contains_answer
from sentient.eval.reports import default_report_docs, load_report_goals

DATASETS = Path(__file__).resolve().parents[2] / "bench" / "datasets"
COMPANY_DOCS = DATASETS / "company_docs"
COMPANY_DEV = DATASETS / "company_docs_reports.jsonl"
WIND_DOCS = DATASETS / "wind_docs"
WIND = DATASETS / "wind_docs_reports.jsonl"
FERRY_DOCS = DATASETS / "ferry_docs"
FERRY = DATASETS / "ferry_docs_reports.jsonl"
PRIVATE_DOCS = DATASETS / "private_docs"
PRIVATE = DATASETS / "private_docs_reports_heldout.jsonl"
PYTHON = DATASETS / "python_docs_reports.jsonl"


def test_the_report_sets_have_their_size_and_split() -> None:
    dev, wind, ferry, private, python = (load_report_goals(p) for p in (COMPANY_DEV, WIND, FERRY, PRIVATE, PYTHON))
    assert len(dev) >= 10 and {g.split for g in dev} == {"dev"}
    assert len(wind) >= 6 and {g.split for g in wind} == {"dev"}
    assert len(ferry) >= 6 and {g.split for g in ferry} == {"dev"}
    assert len(private) >= 6 and {g.split for g in private} == {"heldout"}
    assert len(python) >= 5 and {g.split for g in python} == {"dev"}
    for goals in (dev, wind, ferry, private):
        assert len({g.id for g in goals}) == len(goals)
        # Some goals fan out over items ("for each ...").
        assert sum("each" in g.goal.split() for g in goals) >= 3
    assert default_report_docs(COMPANY_DEV) == COMPANY_DOCS
    assert default_report_docs(WIND) == WIND_DOCS
    assert default_report_docs(DATASETS / "wind_docs_reports_heldout.jsonl") == WIND_DOCS
    assert default_report_docs(FERRY) == FERRY_DOCS
    assert default_report_docs(PRIVATE) == PRIVATE_DOCS
    assert default_report_docs(PYTHON) is None  # the default corpus: Python's documentation


@pytest.mark.parametrize(
    ("path", "docs"),
    [(COMPANY_DEV, COMPANY_DOCS), (WIND, WIND_DOCS), (FERRY, FERRY_DOCS), (PRIVATE, PRIVATE_DOCS)],
    ids=["company", "wind", "ferry", "private"],
)
def test_every_point_is_stated_in_the_goals_documents(path: Path, docs: Path) -> None:
    corpus = "\n".join(p.read_text(encoding="utf-8") for p in sorted(docs.iterdir()))
    for goal in load_report_goals(path):
        assert len(goal.docs) >= 4 and len(goal.points) >= 10, goal.id
        text = "\n".join((docs / doc).read_text(encoding="utf-8") for doc in goal.docs)
        missing = [p.id for p in goal.points if not contains_answer(text, p.any)]
        assert not missing, f"{goal.id}: points in none of its documents: {missing}"
        # A distractor is a value the corpus does state (an old or look-alike one).
        assert all(contains_answer(corpus, [d]) for d in goal.distractors), goal.id

"""A tiny fictional corpus beside its question set, following the ``X_qa.jsonl`` + ``X/`` convention."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

QUESTIONS = [
    {"id": "colour", "question": "What colour is the Zorblax beacon?", "answers": ["teal"], "hops": 1},
    {"id": "installer", "question": "Who installed the beacon on Pier 7?", "answers": ["Mira Okafor"], "hops": 2},
    {"id": "pilot", "question": "Above what length does a ship need a pilot?", "answers": ["240 metres"], "hops": 1},
    {"id": "late", "question": "Which pier has the fog horn?", "answers": ["Pier 3"], "split": "heldout"},
]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """``harbour_qa.jsonl`` (3 dev questions, 1 held out) and its documents in ``harbour/``."""
    docs = tmp_path / "harbour"
    docs.mkdir()
    (docs / "beacons.md").write_text(
        "# Zorblax beacons\n\nThe Zorblax beacon on Pier 7 is painted teal. Mira Okafor installed it in 2019.\n"
    )
    (docs / "limits.md").write_text("# Harbour limits\n\nShips longer than 240 metres need a pilot.\n")
    (docs / "fog.md").write_text("# Fog\n\nThe fog horn stands on Pier 3.\n")
    path = tmp_path / "harbour_qa.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return path

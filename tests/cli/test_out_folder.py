"""Where ``sentient run --out`` may write (sentient.cli.out_folder), checked without running anything."""

from __future__ import annotations

from pathlib import Path

from sentient.cli.out_folder import out_folder_problem


def test_a_folder_with_files_is_refused_unless_forced(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    problem = out_folder_problem(tmp_path, tmp_path / "results")
    assert problem is not None and problem.startswith("is not empty")
    assert out_folder_problem(tmp_path, tmp_path / "results", force=True) is None
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]

"""Whether ``sentient run --out FOLDER`` may write there, decided before the run starts.

A run writes ``report.md``, ``report.html``, ``graph.json`` and ``traces/`` into its folder,
replacing files of those names. A folder is refused when:

- it exists and is not a folder, or a file stands where it would be created;
- it is not empty, or it is a project's folder in the results folder, unless ``force``: another
  run's report and graph would be overwritten without a word;
- it is not writable (or, for a new folder, the folder it would be made in is not).
"""

from __future__ import annotations

import os
from pathlib import Path


def out_folder_problem(folder: Path, results_dir: Path, *, force: bool = False) -> str | None:
    """Why the run's files cannot go to ``folder``, in one sentence; None when they can.

    Nothing is created. ``results_dir`` holds the projects' own folders.
    """
    if folder.exists() and not folder.is_dir():
        return "exists and is not a folder; give a new or empty folder"
    existing = folder.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"'{existing}' is not a folder"
    if existing == folder.absolute() and not force:
        if folder.resolve().parent == results_dir.resolve():
            return (
                f"is a project's folder in {results_dir}: choose another folder, or pass --force to replace its files"
            )
        if any(folder.iterdir()):
            return (
                "is not empty: choose a new or empty folder, or pass --force to write report.md, report.html,"
                " graph.json and traces/ into it (files of those names are replaced)"
            )
    if not os.access(existing, os.W_OK | os.X_OK):
        return (
            "this folder is not writable"
            if existing == folder.absolute()
            else f"cannot create it: '{existing}' is not writable"
        )
    return None

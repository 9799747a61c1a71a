"""Which files of a docs folder are documents (sentient.tools.documents), through a real index in a temp dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from loguru import logger

from sentient.exceptions import DocsFolderError
from sentient.tools import DocsIndex


def test_files_and_folders_whose_names_are_not_utf8_are_skipped_with_a_warning_naming_them(tmp_path: Path) -> None:
    folder = os.fsencode(tmp_path)
    with open(folder + b"/caf\xe9.md", "wb") as f:
        f.write(b"# C\n\nGenerators yield the fennelquark.\n")
    os.mkdir(folder + b"/d\xffir")
    with open(folder + b"/d\xffir/inner.md", "wb") as f:
        f.write(b"The fennelquark hides here too.\n")
    (tmp_path / "good.md").write_text("The fennelquark is ordinary.\n")
    warnings: list[str] = []
    sink = logger.add(warnings.append, level="WARNING", format="{message}")
    try:
        index = DocsIndex.from_folder(tmp_path)
    finally:
        logger.remove(sink)
    assert [Path(hit.source).name for hit in index.search("fennelquark", limit=10)] == ["good.md"]
    assert f"skipping {tmp_path}/caf\\xe9.md: its name is not valid UTF-8\n" in warnings
    assert f"skipping {tmp_path}/d\\xffir: its name is not valid UTF-8\n" in warnings


def test_binary_files_with_a_document_suffix_are_skipped_with_a_warning_naming_them(tmp_path: Path) -> None:
    (tmp_path / "image.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR pebblequartz")
    (tmp_path / "archive.md").write_bytes(b"PK\x03\x04\x14\x00\x00\x00 pebblequartz")
    (tmp_path / "page.html").write_bytes(b"<p>pebblequartz</p>" + b"\x00" * 16)
    (tmp_path / "latin1.txt").write_bytes("Caf\u00e9 pebblequartz in Latin-1.".encode("latin-1"))
    warnings: list[str] = []
    sink = logger.add(warnings.append, level="WARNING", format="{message}")
    try:
        index = DocsIndex.from_folder(tmp_path)
    finally:
        logger.remove(sink)
    assert [Path(hit.source).name for hit in index.search("pebblequartz", limit=10)] == ["latin1.txt"]
    for name in ("image.py", "archive.md", "page.html"):
        assert f"skipping {tmp_path / name}: a binary file (a NUL byte in its first 8 KB), not text\n" in warnings


def test_a_docs_folder_whose_own_name_is_not_utf8_is_refused_naming_it(tmp_path: Path) -> None:
    folder = os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9")
    os.mkdir(folder)
    Path(folder, "a.md").write_text("Text.\n")
    with pytest.raises(DocsFolderError, match=r"docs folder '.*caf\\xe9' has a name that is not valid UTF-8"):
        DocsIndex.from_folder(folder)

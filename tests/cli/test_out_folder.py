"""Where ``sentient run --out`` may write (sentient.cli.out_folder), checked without running anything."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sentient.cli.out_folder import VIRTUAL_FILESYSTEMS, filesystem_type, out_folder_problem

MOUNTS = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,mode=755
25 24 0:23 / /dev/shm rw,relatime shared:3 - tmpfs tmpfs rw
40 27 0:40 / /mnt/my\\040disk rw - xfs /dev/vdb rw
41 27 0:41 / /mnt/my\\040disk rw - btrfs /dev/vdc rw
"""


@pytest.fixture
def mountinfo(tmp_path: Path) -> Path:
    path = tmp_path / "mountinfo"
    path.write_text(MOUNTS)
    return path


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/proc/self", "proc"),
        ("/dev/null", "devtmpfs"),
        ("/dev/shm/x", "tmpfs"),  # the longest mount point holding the path wins
        ("/devices", "ext4"),  # a prefix of the name is not a parent folder
        ("/mnt/my disk/a", "btrfs"),  # escaped spaces; of two mounts on one point, the last
        ("/", "ext4"),
    ],
)
def test_the_filesystem_type_is_read_from_the_mount_table(mountinfo: Path, path: str, kind: str) -> None:
    assert filesystem_type(Path(path), mountinfo) == kind


def test_without_a_mount_table_the_type_is_unknown(tmp_path: Path) -> None:
    assert filesystem_type(tmp_path, tmp_path / "missing") is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux mount table")
def test_this_machines_proc_is_virtual_and_a_temp_folder_is_not(tmp_path: Path) -> None:
    assert filesystem_type(Path("/proc/self")) == "proc"
    assert filesystem_type(tmp_path) not in VIRTUAL_FILESYSTEMS
    problem = out_folder_problem(Path("/proc/new-folder"), tmp_path / "results")
    assert problem is not None and "'/proc' is on the proc filesystem" in problem


def test_a_new_or_empty_folder_is_accepted_and_the_probe_leaves_nothing(tmp_path: Path) -> None:
    assert out_folder_problem(tmp_path / "new" / "deeper", tmp_path / "results") is None
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "empty").mkdir()
    assert out_folder_problem(tmp_path / "empty", tmp_path / "results") is None
    assert list((tmp_path / "empty").iterdir()) == []


def test_a_folder_with_files_is_refused_unless_forced(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    problem = out_folder_problem(tmp_path, tmp_path / "results")
    assert problem is not None and problem.startswith("is not empty")
    assert out_folder_problem(tmp_path, tmp_path / "results", force=True) is None
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]

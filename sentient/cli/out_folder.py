"""Whether ``sentient run --out FOLDER`` may write there, decided before the run starts.

A run writes ``report.md``, ``report.html``, ``graph.json`` and ``traces/`` into its folder,
replacing files of those names. A folder is refused when:

- it exists and is not a folder, or a file stands where it would be created;
- it lies on a virtual filesystem (``/proc``, ``/sys``, ``/dev``…): their files are the kernel's,
  and a run that wrote there ended in a traceback after all its model calls;
- it is not empty, or it is a project's folder in the results folder, unless ``force``: another
  run's report and graph would be overwritten without a word;
- a file cannot be created in it (or, for a new folder, in the folder it would be made in): a
  probe file is created and removed, since ``os.access`` answers from permission bits, which
  root passes everywhere, and knows nothing of what the filesystem itself refuses.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

# Filesystems whose files are kernel interfaces, not storage (from /proc/filesystems' "nodev" ones).
VIRTUAL_FILESYSTEMS = frozenset(
    {
        "autofs",
        "binfmt_misc",
        "bpf",
        "cgroup",
        "cgroup2",
        "configfs",
        "debugfs",
        "devpts",
        "devtmpfs",
        "efivarfs",
        "fusectl",
        "hugetlbfs",
        "mqueue",
        "nsfs",
        "proc",
        "pstore",
        "rpc_pipefs",
        "securityfs",
        "selinuxfs",
        "sysfs",
        "tracefs",
    }
)
_MOUNTINFO = Path("/proc/self/mountinfo")
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")  # mountinfo writes a space in a path as \040


def out_folder_problem(folder: Path, results_dir: Path, *, force: bool = False) -> str | None:
    """Why the run's files cannot go to ``folder``, in one sentence; None when they can.

    Nothing is created, but a probe file in ``folder`` (or its nearest existing parent) is
    created and removed. ``results_dir`` holds the projects' own folders.
    """
    if folder.exists() and not folder.is_dir():
        return "exists and is not a folder; give a new or empty folder"
    existing = folder.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"'{existing}' is not a folder"
    kind = filesystem_type(existing)
    if kind in VIRTUAL_FILESYSTEMS:
        return f"'{existing}' is on the {kind} filesystem, which holds the kernel's files: choose a folder on a disk"
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
    try:
        fd, probe = tempfile.mkstemp(prefix=".sentient-probe-", dir=existing)
    except OSError as exc:
        where = "this folder" if existing == folder.absolute() else f"'{existing}'"
        return f"cannot write in {where}: {exc.strerror or exc}"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def filesystem_type(path: Path, mountinfo: Path = _MOUNTINFO) -> str | None:
    """The type of the filesystem ``path`` is on (``ext4``, ``proc``…), from the mount table
    ``mountinfo``; None where there is none to read (not Linux)."""
    try:
        lines = mountinfo.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    except OSError:
        return None
    target = os.path.realpath(path)
    best, kind = -1, None
    for line in lines:
        # "36 35 98:0 /root /mnt/point rw,noatime shared:1 - ext4 /dev/sda1 rw": the mount point is
        # the fifth field, the type the first after the lone "-".
        fields, _, tail = line.partition(" - ")
        parts = fields.split(" ")
        if len(parts) < 5 or not tail:
            continue
        mount = _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), parts[4])
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        # The longest mount point holding the path wins; of mounts stacked on one point, the last.
        if inside and len(mount) >= best:
            best, kind = len(mount), tail.split(" ")[0]
    return kind

"""The user documentation stays true: every ``sentient`` command and flag it shows exists, and
every relative link in it leads to a file of the repository, and to a heading of that file when it
names one.

Images are left to the change that makes them (screenshots are taken from a running dashboard).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from sentient.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "bench" / "README.md", *(ROOT / "docs").rglob("*.md")])

_CODE = re.compile(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", re.DOTALL)
# A command: `sentient` (or `.venv/bin/sentient`) first on a line, after `VAR=value` assignments or
# after `&&`, then its words up to the end of the line, a comment, or a shell separator.
_COMMAND = re.compile(r"(?:^(?:[A-Z_]+=(?:\$\([^)]*\)|\S+)\s+)*|&&\s*)(?:\S*/)?sentient((?:[ \t]+[^\s#&|;]+)+)")
# A Markdown link (not an image) whose target is not a URL.
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?!https?://|mailto:)([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.MULTILINE)
_FENCED = re.compile(r"```.*?```", re.DOTALL)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _commands(page: Path) -> Iterator[tuple[str, list[str]]]:
    """Each ``sentient …`` command shown in a code block or span of ``page``: the line, its words."""
    for match in _CODE.finditer(page.read_text(encoding="utf-8")):
        code = match.group(1) if match.group(1) is not None else match.group(2)
        for line in (line.strip() for line in code.splitlines()):
            for command in _COMMAND.finditer(line):
                yield line, command.group(1).split()


def _problems(words: list[str]) -> list[str]:
    """What in ``sentient WORDS`` the CLI does not know: a subcommand or a flag."""
    parser = build_parser()
    known_flags = {flag for action in parser._actions for flag in action.option_strings}
    words = list(words)
    subcommands = _subcommands(parser)
    while words and subcommands and not words[0].startswith("-"):
        if words[0] not in subcommands:
            return [f"no subcommand {words[0]!r}"]
        parser = subcommands[words.pop(0)]
        known_flags |= {flag for action in parser._actions for flag in action.option_strings}
        subcommands = _subcommands(parser)
    flags = {word.split("=", 1)[0] for word in words if word.startswith("--") or re.fullmatch(r"-[a-z]", word)}
    return [f"no option {flag!r}" for flag in sorted(flags - known_flags)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_sentient_command_and_flag_shown_exists(page: Path) -> None:
    problems = [f"{line}: {problem}" for line, words in _commands(page) for problem in _problems(words)]
    assert not problems, f"{page.relative_to(ROOT)} shows commands the CLI does not have:\n" + "\n".join(problems)


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown page (lower case, punctuation dropped)."""
    text = _FENCED.sub("", page.read_text(encoding="utf-8"))
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in _HEADING.findall(text)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in _LINK.findall(_FENCED.sub("", page.read_text(encoding="utf-8"))):
        path, _, anchor = target.partition("#")
        linked = page.parent / path if path else page
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in _anchors(linked)):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} has links to no file or no heading: {broken}"


def test_the_check_finds_an_unknown_flag_and_subcommand() -> None:
    assert _problems(["run", "GOAL", "--offline", "--max-depth", "2"]) == []
    assert _problems(["projects", "export", "ID", "--format", "html"]) == []
    assert _problems(["run", "GOAL", "--no-such-flag"]) == ["no option '--no-such-flag'"]
    assert _problems(["projects", "export", "ID", "--max-depth", "2"]) == ["no option '--max-depth'"]
    assert _problems(["launch", "GOAL"]) == ["no subcommand 'launch'"]

"""Documents read as the docs index stores them: titled sections cut into passages.

A folder's documents are its .md, .txt, .rst, .html/.htm and .py files (hidden files and
folders, caches, files that link outside it, binary files and names that are not UTF-8 left out,
the last two with a warning naming them). Each is split into (heading, text)
sections by its format: Markdown headings, reStructuredText underlines, HTML turned into
Markdown-style text, a Python file's docstrings. Short consecutive sections are packed
together, and long ones cut into passages of about ``PASSAGE_CHARS`` characters, at blank lines,
then at sentence ends. The default offline corpus is the documentation that ships with Python
(:func:`python_documents`).
"""

from __future__ import annotations

import ast
import os
import re
import sys
import sysconfig
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

from loguru import logger

from sentient.exceptions import DocsFolderError

_EXTENSIONS = frozenset({".md", ".txt", ".rst", ".html", ".htm", ".py"})
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", ".git"})
MAX_FILE_BYTES = 2 * 1024 * 1024
_SNIFF_BYTES = 8192  # how much of a file is read to tell text from binary
PASSAGE_CHARS = 1_200
_MIN_MEMBER_DOC_CHARS = 200
# Stdlib packages whose submodules are tests, demos or tooling rather than library docs.
_SKIP_STDLIB_PACKAGES = frozenset({"test", "idlelib", "lib2to3", "turtledemo", "ensurepip"})
_MD_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")
_BLANK_LINES = re.compile(r"\n\s*\n")
# Where a long paragraph is best cut: after a sentence end (CJK full stops need no space after them).
_SENTENCE_GAP = re.compile(r"(?<=[.!?])\s|(?<=[。！？])")


def printable_path(path: Path | str) -> str:
    """``path`` as text that can be printed and stored: bytes that are not UTF-8 shown as ``\\xe9``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def is_text_name(name: str) -> bool:
    """Whether a file or folder name is valid UTF-8 (Python keeps other bytes as lone surrogates,
    which neither SQLite nor a terminal can take)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _walk_documents(root: Path) -> Iterator[Path]:
    """The documents under ``root`` (resolved), symlinks that leave it and names that are not UTF-8
    left out."""
    # os.walk does not descend into symlinked folders; a symlinked file is checked by its target.
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in [d for d in dirnames if not is_text_name(d)]:
            logger.warning("skipping {}: its name is not valid UTF-8", printable_path(Path(dirpath) / name))
            dirnames.remove(name)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if name.startswith(".") or path.suffix.lower() not in _EXTENSIONS:
                continue
            if not is_text_name(name):
                logger.warning("skipping {}: its name is not valid UTF-8", printable_path(path))
                continue
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                logger.warning("skipping {}: a link to a file outside the docs folder", path)
                continue
            if not path.is_file():
                continue
            if _is_binary(path):
                logger.warning("skipping {}: a binary file (a NUL byte in its first 8 KB), not text", path)
                continue
            yield path


def _is_binary(path: Path) -> bool:
    """Whether the file holds a NUL byte in its first 8 KB: git's test, which text in UTF-8 and the
    other 8-bit encodings never fails and images, archives and compiled files do not pass."""
    try:
        with path.open("rb") as file:
            return b"\0" in file.read(_SNIFF_BYTES)
    except OSError:
        return False  # reading it again to index it says what is wrong


def bounded_documents(
    root: Path, label: str, max_files: int | None, max_bytes: int | None, cancel: threading.Event | None
) -> list[Path]:
    """The folder's documents, refusing a folder over the limits before any of it is read."""
    if not is_text_name(str(root)):
        raise DocsFolderError(f"docs folder '{printable_path(label)}' has a name that is not valid UTF-8: rename it")
    files: list[Path] = []
    total = 0
    for path in _walk_documents(root):
        check_cancel(cancel, label)
        files.append(path)
        total += path.stat().st_size
        if max_files is not None and len(files) > max_files:
            raise DocsFolderError(
                f"docs folder '{label}' holds more than {max_files} documents: choose a smaller folder"
            )
        if max_bytes is not None and total > max_bytes:
            raise DocsFolderError(
                f"docs folder '{label}' holds more than {max_bytes // (1024 * 1024)} MB of documents: "
                "choose a smaller folder"
            )
    return files


def check_cancel(cancel: threading.Event | None, label: str) -> None:
    if cancel is not None and cancel.is_set():
        raise DocsFolderError(f"indexing docs folder '{label}' was cancelled")


def document_sections(suffix: str, text: str) -> list[tuple[str | None, str]]:
    """Split a document into (heading, text) sections according to its format."""
    if suffix in {".html", ".htm"}:
        # Headings come out Markdown style, so the Markdown splitter does the rest.
        return _markdown_sections(html_to_text(text))
    splitters = {".md": _markdown_sections, ".rst": _rst_sections, ".py": _python_sections}
    return splitters[suffix](text) if suffix in splitters else [(None, text)]


def document_title(sections: list[tuple[str | None, str]]) -> str | None:
    """The heading the document opens with (its title), or None when it opens with text."""
    for heading, body in sections:
        if heading is not None:
            return heading
        if body.strip():
            return None
    return None


def packed_sections(sections: list[tuple[str | None, str]]) -> list[tuple[list[str], str]]:
    """Join consecutive short sections into passage-sized groups: (their headings, text).

    A postmortem's "Summary" of three lines alone is a poor passage: search returns one
    passage per file, and the file's title section would hide it. Packed, one passage holds
    the summary with its context, and the snippet picks the matching sentences out of it.
    """
    groups: list[tuple[list[str], str]] = []
    size = 0
    for heading, body in sections:
        length = len(" ".join(body.split()))
        if groups and size + 1 + length <= PASSAGE_CHARS:
            headings, text = groups[-1]
            groups[-1] = ([*headings, heading] if heading else headings, f"{text}\n\n{body}")
            size += 1 + length
        else:
            groups.append(([heading] if heading else [], body))
            size = length
    return groups


def _markdown_sections(text: str) -> list[tuple[str | None, str]]:
    sections: list[tuple[str | None, str]] = []
    heading: str | None = None
    lines: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence  # a '#' inside a code block is a comment, not a heading
        found = None if in_fence else _MD_HEADING.match(line)
        if found:
            sections.append((heading, "\n".join(lines)))
            heading, lines = found.group(1), [found.group(1)]
        else:
            lines.append(line)
    sections.append((heading, "\n".join(lines)))
    return [(h, body) for h, body in sections if body.strip()]


def _rst_sections(text: str) -> list[tuple[str | None, str]]:
    # Rewrite RST titles (optionally overlined) as Markdown headings and reuse that splitter.
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if _is_rst_title(lines, i):
            out.append(f"# {lines[i].strip()}")
            i += 2
        elif _RST_UNDERLINE.match(lines[i]) and _is_rst_title(lines, i + 1):
            out.append(f"# {lines[i + 1].strip()}")
            i += 3
        else:
            out.append(lines[i])
            i += 1
    return _markdown_sections("\n".join(out))


def _is_rst_title(lines: list[str], i: int) -> bool:
    """Whether line `i` is a title: text over an underline at least as long."""
    if i + 1 >= len(lines) or not lines[i].strip() or _RST_UNDERLINE.match(lines[i]):
        return False
    return bool(_RST_UNDERLINE.match(lines[i + 1])) and len(lines[i + 1].rstrip()) >= len(lines[i].strip())


def _python_sections(text: str) -> list[tuple[str | None, str]]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return [(None, text)]
    docstring = ast.get_docstring(tree)
    if not docstring:
        return [(None, text)]
    # The docstring gets a passage of its own so the module's summary ranks on its own terms.
    rest = "\n".join(text.splitlines()[tree.body[0].end_lineno or 0 :])
    return [(None, docstring), (None, rest)]


class _TextExtractor(HTMLParser):
    """Collect the visible text of an HTML page, with headings marked Markdown style."""

    # Not "head": HTML lets a page omit </head>, which would then hide the whole body.
    _HIDDEN = frozenset({"script", "style", "noscript", "template"})
    _BLOCKS = frozenset({"p", "div", "br", "li", "tr", "table", "section", "article", "pre", "blockquote"})
    _HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._HIDDEN:
            self._hidden_depth += 1
        elif tag in self._HEADINGS:
            self.parts.append("\n\n# ")
        elif tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._HIDDEN:
            self._hidden_depth = max(0, self._hidden_depth - 1)
        elif tag in self._HEADINGS or tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._hidden_depth:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


def split_passages(text: str) -> list[str]:
    """Pack paragraphs into passages of about `PASSAGE_CHARS`, whitespace collapsed.

    A longer paragraph is cut at its last sentence end that leaves the passage at least half
    full, else at a space.
    """
    passages: list[str] = []
    current = ""
    for raw in _BLANK_LINES.split(text):
        paragraph = " ".join(raw.split())
        while len(paragraph) > PASSAGE_CHARS:  # one huge paragraph: cut it
            ends = [m.start() for m in _SENTENCE_GAP.finditer(paragraph, PASSAGE_CHARS // 2, PASSAGE_CHARS)]
            cut = ends[-1] if ends else paragraph.rfind(" ", 0, PASSAGE_CHARS)
            cut = cut if cut > 0 else PASSAGE_CHARS
            passages.extend(p for p in (current, paragraph[:cut]) if p)
            current, paragraph = "", paragraph[cut:].lstrip()
        if current and len(current) + len(paragraph) + 1 > PASSAGE_CHARS:
            passages.append(current)
            current = ""
        current = f"{current} {paragraph}".strip()
    if current:
        passages.append(current)
    return passages


def python_documents() -> Iterator[tuple[str, str, str]]:
    """Yield (source, title, text) for the reference topics and stdlib docstrings."""
    from pydoc_data import topics  # data only; no side effects on import

    topics_file = str(Path(topics.__file__).resolve())
    for topic, text in sorted(topics.topics.items()):
        yield f"{topics_file}#{topic}", f"Python reference: {topic}", text
    for module, path in _stdlib_sources():
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        docstring = ast.get_docstring(tree)
        if docstring:
            yield str(path), f"Python module {module}", docstring
        for node in tree.body:
            if not isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            doc = ast.get_docstring(node)
            if node.name.startswith("_") or not doc or len(doc) < _MIN_MEMBER_DOC_CHARS:
                continue
            yield f"{path}#{node.name}", f"{module}.{node.name}", f"{node.name}\n\n{doc}"


def _stdlib_sources() -> Iterator[tuple[str, Path]]:
    """Yield (dotted module name, .py path) for the public pure-Python stdlib modules.

    Files are located on disk rather than imported: importing `antigravity` or `this` has
    side effects. Public submodules of packages (asyncio.events, ...) are included because
    a package's own docstring is often one line.
    """
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    for name in sorted(sys.stdlib_module_names):
        if name.startswith("_") or name in _SKIP_STDLIB_PACKAGES:
            continue
        if (stdlib / f"{name}.py").is_file():
            yield name, stdlib / f"{name}.py"
        elif (stdlib / name / "__init__.py").is_file():
            for path in sorted((stdlib / name).rglob("*.py")):
                parts = path.relative_to(stdlib).with_suffix("").parts
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                if any(p.startswith("_") or p in {"test", "tests"} for p in parts):
                    continue
                yield ".".join(parts), path

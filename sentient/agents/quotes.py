"""Quotes: the sentences of a report's passages, word for word, one line per passage under its
headings, citing it, as a Markdown block quote (so they read apart from the answers)::

    > - **Paging policy:** The duty engineer is paged for an outage. … A page is answered in ten minutes. [2]

The overview quotes a search for the whole goal, and each search of a section quotes its own
passages below its answers, so one sentence can be chosen twice; a report keeps it where it is
first quoted (:func:`unrepeated`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from sentient.context.wording import sentences
from sentient.graph.node import Source
from sentient.tools.docs_search import title_headings

GAP = " … "  # between two sentences of one passage that are not next to each other in it
QUOTE = "> - "  # how a line of quotes begins
_LINE = re.compile(rf"^({re.escape(QUOTE)}\*\*.+?:\*\* )(.+)( \[\d+\])$")


def to_quote(found: Sequence[Source]) -> list[tuple[int, str]]:
    """The sentences of ``found`` that may be quoted, each with its passage's number (from 1)."""
    return [(n, sentence) for n, source in enumerate(found, 1) for sentence in sentences(_body(source))]


def quoted_lines(found: Sequence[Source], said: Sequence[tuple[int, str]], picked: Iterable[int]) -> list[str]:
    """The sentences ``picked`` (indices into ``said``, in order) quoted: one line per passage of
    ``found``, its sentences joined (by :data:`GAP` where some are left out between them)."""
    quoted: dict[int, str] = {}
    previous = None
    for i in picked:
        n, sentence = said[i]
        gap = "" if n not in quoted else " " if previous == i - 1 else GAP
        quoted[n] = f"{quoted.get(n, '')}{gap}{sentence}"
        previous = i
    return [f"{QUOTE}**{_heading(found[n - 1])}:** {text} [{n}]" for n, text in quoted.items()]


def below(text: str, lines: Sequence[str]) -> str:
    """``text`` with the quote ``lines`` below it, a blank line between (either may be empty)."""
    return "\n\n".join(t for t in [text, "\n".join(lines)] if t)


def apart(text: str) -> tuple[str, list[str]]:
    """``text`` without its lines of quotes, and those lines (the inverse of :func:`below`)."""
    lines = text.split("\n")
    return "\n".join(line for line in lines if not line.startswith(QUOTE)).strip(), [
        line for line in lines if line.startswith(QUOTE)
    ]


def unrepeated(texts: Sequence[str]) -> list[str]:
    """``texts`` in order with each quoted sentence kept only where it is first quoted (a line
    left with none is dropped)."""
    seen: set[str] = set()
    kept = []
    for text in texts:
        out = []
        for line in text.split("\n"):
            match = _LINE.match(line)
            if match is None:
                out.append(line)
                continue
            head, quote, marker = match.groups()
            runs = []  # the sentences kept, in runs of sentences next to each other
            for piece in quote.split(GAP):
                run: list[str] = []
                for sentence in sentences(piece):
                    if sentence in seen:
                        runs.append(" ".join(run))
                        run = []
                    else:
                        seen.add(sentence)
                        run.append(sentence)
                runs.append(" ".join(run))
            if runs := [r for r in runs if r]:
                out.append(f"{head}{GAP.join(runs)}{marker}")
        kept.append("\n".join(out))
    return kept


def _heading(source: Source) -> str:
    """What a quote of ``source`` stands under: its passage's headings, else its document."""
    return title_headings(source.ref, source.title) or source.ref


def _body(source: Source) -> str:
    """``source``'s passage without the headings it begins with (a passage's text begins with those
    of its headings it holds, and a quote stands under them already)."""
    text = " ".join(source.snippet.split())
    for heading in (" ".join(h.split()) for h in title_headings(source.ref, source.title).split(" / ")):
        if heading and text.startswith(f"{heading} "):
            text = text.removeprefix(heading).lstrip()
    return text

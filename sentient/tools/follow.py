"""Following references: the second hop of a documents search.

A question often names one thing and asks about another that a document only links to. "The
chat channel of the team that owns Cobblestone" finds Cobblestone's page, which says Team
Bittern owns it; the channel is in the team directory, in Bittern's row. The first search
cannot reach that row, because nothing in the question says "Bittern". So the search is
repeated with the names the passage about the question's subject mentions and the question
does not: the bridge terms, those its relation words lead to first ("owns" and "Owner: Team
Bittern"). What the second search finds in their light is shown next to the first search's
best passages; one of those cut off just after naming a term is cut again around it.

A bridge term is a name, not an ordinary word: a capitalised word that does not start a
sentence, or an identifier (digits, inner capitals, or a hyphen with capitals: ``Sev1``,
``ChainMap``, ``KESTREL-ingest``). It must also occur in another document (a name nothing else
mentions leads nowhere); after those the relation leads to, rarer names go first: they say more
about where to look.

No model call is spent: this is plain retrieval, so a one-hop question pays a few
milliseconds. Measured in bench/README.md ("following reads the page the question names").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

BRIDGE_TERMS = 2  # names added to the second query
KEEP = 3  # the first search's best hits that stay ahead of what following adds
ADDED = 2  # most sources following adds
_CANDIDATES = 12  # names looked up per search, so following stays cheap on a large index
RELATED_WITHIN = 4  # words before a name that may say how it relates to the question ("Owner: Team Gannet")
CUT_AFTER = 80  # characters: a snippet whose last term is nearer its cut than this says little of it

_WORD = re.compile(r"[A-Za-z][\w-]*\w|\d\w*[A-Za-z]\w*")
# What precedes a word at a sentence start: nothing, an end mark, a list or record separator.
_STARTS_SENTENCE = re.compile(r"(?:^|[.!?…;:(]|\s-)[\s*`\"']*$")
_DIGIT = re.compile(r"\d")
# Capitalised, but a date, not a name: "Launched: 30 June 2022" leads to every document dated in June.
_CALENDAR = re.compile(
    r"january|february|march|april|may|june|july|august|september|october|november|december"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
)


class Hit(Protocol):
    """What following reads of a search hit (:class:`~sentient.tools.docs_search.SearchHit`)."""

    @property
    def source(self) -> str: ...

    @property
    def snippet(self) -> str: ...


H = TypeVar("H", bound=Hit)
# (word, source) -> (other sources that contain the word, passages that contain it)
Frequency = Callable[[str, str], tuple[int, int]]


def subject(hits: Sequence[H], question: str) -> H:
    """Which of the first search's best hits (the first ``KEEP``) is about what ``question`` names:
    the one whose source and snippet hold most of its names, the best one when none holds any.

    A question's generic words can rank a directory first ("the chat channel of the team that
    owns Marrowgate Lite" ranks the team directory above Marrowgate Lite's page); its rows name
    everyone, while the page of the thing asked about names what it leads to (its owner).
    """
    names = [w.lower() for w in question_names(question)]
    texts = [f"{hit.source} {hit.snippet}".lower() for hit in hits[:KEEP]]
    held = [sum(n in text for n in names) for text in texts]
    return hits[max(range(len(held)), key=lambda i: (held[i], -i))]


def question_names(question: str) -> list[str]:
    """The names ``question`` gives (see :func:`_is_name`), once each."""
    words = (m.group(0) for m in _WORD.finditer(question) if _is_name(m.group(0), question[: m.start()]))
    return list(dict.fromkeys(words))


def bridge_terms(
    hit: Hit, ignore: Callable[[str], bool], frequency: Frequency, asked: Callable[[str], bool]
) -> list[str]:
    """The names in ``hit``'s snippet that lead elsewhere.

    Names that closely follow one of the question's words come first: they are what the
    question's relation leads to ("the team that owns Marrowgate Lite" and "**Owner:** Team
    Gannet"; "approved by the Data Steward"). Then rarer names first.

    Args:
        hit: the first search's hit about the question's subject (:func:`subject`).
        ignore: whether a (lower-case) word says nothing new: one of the query's words, or a stop word.
        frequency: how common a word is, as seen by the index.
        asked: whether a (lower-case) word is one of the question's ordinary words, in any form
            ("owner" of "owns"); not one of its names ("Lanternfish" in a list of teams says
            nothing of the next team in it).
    """
    found: dict[str, tuple[bool, int, str]] = {}
    looked_up = 0
    text = hit.snippet
    for match in _WORD.finditer(text):
        word = match.group(0)
        key = word.lower()
        if (
            key in found
            or _CALENDAR.fullmatch(key)
            or ignore(key)
            or not _is_name(word, text[max(0, match.start() - 6) : match.start()])
        ):
            continue
        if looked_up == _CANDIDATES:
            break
        looked_up += 1
        elsewhere, passages = frequency(key, hit.source)
        if elsewhere:
            found[key] = (not _follows_asked(text[: match.start()], asked), passages, word)
    ranked = sorted(found.values(), key=lambda entry: entry[:2])
    return [word for *_, word in ranked[:BRIDGE_TERMS]]


def merge(
    first: Sequence[H], followed: Sequence[H], terms: Sequence[str], read: H, limit: int, *, fill: bool = True
) -> list[H]:
    """The first search's best hits, then what following found elsewhere, then (``fill``) the
    rest of the first.

    Only followed hits whose snippet mentions a bridge term count. One from a source that the
    first search's best hits already show replaces that hit when the shown snippet mentions no
    term (the people directory's row of the person named, not its introduction), or was cut
    mid-sentence just after one (the team table's row cut before its channel); the hit the
    terms were read from (``read``) keeps its snippet. From other sources, up to ``ADDED`` are
    added after them.
    """
    names = [t.lower() for t in terms]

    def names_a_term(hit: H) -> bool:
        return any(n in hit.snippet.lower() for n in names)

    kept = list(first[:KEEP])
    shown = {hit.source for hit in kept}
    again = {hit.source: hit for hit in reversed(followed) if hit.source in shown and names_a_term(hit)}
    # The hit the terms were read from (``read``) is not cut again around its own names.
    kept = [
        again.get(hit.source, hit)
        if not names_a_term(hit) or (hit.source != read.source and _cut_after_a_term(hit, names))
        else hit
        for hit in kept
    ]
    added: list[H] = []
    for hit in followed:
        if len(added) < ADDED and hit.source not in shown and names_a_term(hit):
            added.append(hit)
            shown.add(hit.source)
    rest = [hit for hit in first[KEEP:] if hit.source not in shown] if fill else []
    return [*kept, *added, *rest][:limit]


def _follows_asked(before: str, asked: Callable[[str], bool]) -> bool:
    """Whether one of the last ``RELATED_WITHIN`` words of ``before`` is one of the question's, as
    an ordinary word ("approved by the") or a label ("**Owner:** Team"), not as a name in a list
    ("Classes: Pickler Unpickler")."""
    near = list(_WORD.finditer(before))[-RELATED_WITHIN:]
    return any(
        asked(m.group(0).lower()) and (m.group(0)[0].islower() or before[m.end() : m.end() + 1] == ":") for m in near
    )


def _cut_after_a_term(hit: Hit, names: Sequence[str]) -> bool:
    """Whether ``hit``'s snippet was cut mid-sentence just after it names a term: what the
    document says of the term is left out ("Team: Gannet; Team lead: Solveig Ashdown; On-call lead:…")."""
    text = hit.snippet.lower()
    if not text.endswith("…") or text[:-1].rstrip().endswith((".", "!", "?")):
        return False
    return max(text.rfind(n) for n in names) >= len(text) - CUT_AFTER


def _is_name(word: str, before: str) -> bool:
    """Whether ``word`` (preceded by ``before``) looks like a name rather than an ordinary word."""
    if _DIGIT.search(word) or any(c.isupper() for c in word[1:]):
        return True  # Sev1, TW-9, ChainMap, KESTREL-ingest
    return word[0].isupper() and not _STARTS_SENTENCE.search(before)

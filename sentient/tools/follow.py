"""Following references: the second hop of a documents search.

A question often names one thing and asks about another that a document only links to. "The
chat channel of the team that owns Cobblestone" finds Cobblestone's page, which says Team
Bittern owns it; the channel is in the team directory, in Bittern's row. The first search
cannot reach that row, because nothing in the question says "Bittern". So the search is
repeated with the names the best passage mentions and the question does not: the bridge
terms. What the second search finds in their light is shown next to the first search's best
passages.

A bridge term is a name, not an ordinary word: a capitalised word that does not start a
sentence, or an identifier (digits, inner capitals, or a hyphen with capitals: ``Sev1``,
``ChainMap``, ``KESTREL-ingest``). It must also occur in another document (a name nothing else
mentions leads nowhere), and rarer names go first: they say more about where to look.

No model call is spent: this is plain retrieval, so a one-hop question pays a few
milliseconds. Measured in bench/README.md ("Following references").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

BRIDGE_TERMS = 2  # names added to the second query
# The first search's best hits whose snippets are read for names. Only the best: the second is often a
# directory whose rows name everyone ("Grieve-Nakamura"), not what the best hit leads to ("Bittern").
FROM_HITS = 1
KEEP = 3  # the first search's best hits that stay ahead of what following adds
ADDED = 2  # most sources following adds
_CANDIDATES = 12  # names looked up per search, so following stays cheap on a large index

_WORD = re.compile(r"[A-Za-z][\w-]*\w|\d\w*[A-Za-z]\w*")
# What precedes a word at a sentence start: nothing, an end mark, a list or record separator.
_STARTS_SENTENCE = re.compile(r"(?:^|[.!?…;:(]|\s-)[\s*`\"']*$")
_DIGIT = re.compile(r"\d")


class Hit(Protocol):
    """What following reads of a search hit (:class:`~sentient.tools.docs_search.SearchHit`)."""

    @property
    def source(self) -> str: ...

    @property
    def snippet(self) -> str: ...


H = TypeVar("H", bound=Hit)
# (word, source) -> (other sources that contain the word, passages that contain it)
Frequency = Callable[[str, str], tuple[int, int]]


def bridge_terms(hits: Sequence[Hit], ignore: Callable[[str], bool], frequency: Frequency) -> list[str]:
    """The names in the best hits' snippets (the first ``FROM_HITS``) that lead elsewhere, rarest first.

    Args:
        hits: the first search's hits, best first.
        ignore: whether a (lower-case) word says nothing new: one of the query's words, or a stop word.
        frequency: how common a word is, as seen by the index.
    """
    found: dict[str, tuple[int, str]] = {}
    looked_up = 0
    for hit in hits[:FROM_HITS]:
        text = hit.snippet
        for match in _WORD.finditer(text):
            word = match.group(0)
            key = word.lower()
            if key in found or ignore(key) or not _is_name(word, text[max(0, match.start() - 6) : match.start()]):
                continue
            if looked_up == _CANDIDATES:
                break
            looked_up += 1
            elsewhere, passages = frequency(key, hit.source)
            if elsewhere:
                found[key] = (passages, word)
    ranked = sorted(found.values(), key=lambda pair: pair[0])
    return [word for _, word in ranked[:BRIDGE_TERMS]]


def merge(first: Sequence[H], followed: Sequence[H], terms: Sequence[str], limit: int, *, fill: bool = True) -> list[H]:
    """The first search's best hits, then what following found elsewhere, then (``fill``) the
    rest of the first.

    Only followed hits whose snippet mentions a bridge term count. One from a source that the
    first search's best hits already show replaces that hit when the shown snippet mentions no
    term (the people directory's row of the person named, not its introduction); from other
    sources, up to ``ADDED`` are added after them.
    """
    names = [t.lower() for t in terms]

    def names_a_term(hit: H) -> bool:
        return any(n in hit.snippet.lower() for n in names)

    kept = list(first[:KEEP])
    shown = {hit.source for hit in kept}
    again = {hit.source: hit for hit in reversed(followed) if hit.source in shown and names_a_term(hit)}
    kept = [again.get(hit.source, hit) if not names_a_term(hit) else hit for hit in kept]
    added: list[H] = []
    for hit in followed:
        if len(added) < ADDED and hit.source not in shown and names_a_term(hit):
            added.append(hit)
            shown.add(hit.source)
    rest = [hit for hit in first[KEEP:] if hit.source not in shown] if fill else []
    return [*kept, *added, *rest][:limit]


def _is_name(word: str, before: str) -> bool:
    """Whether ``word`` (preceded by ``before``) looks like a name rather than an ordinary word."""
    if _DIGIT.search(word) or any(c.isupper() for c in word[1:]):
        return True  # Sev1, TW-9, ChainMap, KESTREL-ingest
    return word[0].isupper() and not _STARTS_SENTENCE.search(before)

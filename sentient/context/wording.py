"""Words and sentences of a text, in any language.

Texts are compared as case-folded Unicode words with accents folded (:func:`normalize`); a goal
asks a question when one of its sentences ends in a question mark of any script (:func:`questions`).
Searches leave out :data:`STOPWORDS`.
"""

from __future__ import annotations

import re
import unicodedata

_NON_WORD = re.compile(r"[\W_]+")
# Sentence ends of Latin, CJK, Arabic and Devanagari scripts, followed by space or not (CJK).
_SENTENCE_END = re.compile(r"(?<=[.!?。！？؟।])\s+|(?<=[。！？])")
_JOINED_WORDS = re.compile(r"\w+(?:[-./:]\w+)*")
_QUESTION_MARKS = ("?", "？", "؟")
# Words that say nothing of what a question asks about, left out of searches (the docs index's and
# the knowledge store's). English only: in other languages every word is searched, which BM25's
# weights make cheap; the list was measured for the docs search (bench/retrieval_bench.py).
STOPWORDS = frozenset(
    "a about an and are as at be but by can do does for from had has have how i if in into is it its me "  # noqa: SIM905
    "my no not of on or our should so than that the their them then there these they this those to was "
    "we were what when where which who why will with would you your".split()
)


def normalize(text: str) -> str:
    """Case-folded words separated by single spaces (accents folded, punctuation dropped).

    Any non-word character separates words: "09:00–10:30" stays four numbers.
    """
    if text.isascii():  # nothing to decompose, and ASCII case-folds as it lower-cases: 10x faster
        folded = text.lower()
    else:
        decomposed = unicodedata.normalize("NFKD", text)
        folded = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return _NON_WORD.sub(" ", folded).strip()


def holds(text: str, *words: str) -> bool:
    """Whether ``text`` contains any of ``words`` (an answer, its few words), whatever the case,
    accents, punctuation and spacing: at word boundaries, or anywhere in scripts written without
    spaces ("90" is not found in "190"; "九十天" is found in "保留期限为九十天"). Words that are
    only symbols (an operator: "//", ":=") have no words to compare, so their symbols are found
    as written."""
    normalized = normalize(text)
    for word in words:
        wanted = normalize(word)
        if not wanted:
            if word.strip() and word.strip() in text:
                return True
        elif any(map(_wide, wanted)):
            if wanted.replace(" ", "") in normalized.replace(" ", ""):
                return True
        elif f" {wanted} " in f" {normalized} ":
            return True
    return False


def codes(text: str) -> list[str]:
    """The codes ``text`` names: words, or words joined by "-", ".", "/" or ":", that mix letters
    and digits in any script ("OPS-117", "Q1", "b64encode"; not "2025" or "3.11"). Scripts written
    without spaces end a code where they begin ("事件OPS-117的" names "OPS-117")."""
    spaced = "".join(" " if _wide(c) else c for c in text)
    found = _JOINED_WORDS.findall(spaced)
    return list(dict.fromkeys(w for w in found if any(c.isdigit() for c in w) and any(c.isalpha() for c in w)))


def _wide(char: str) -> bool:
    """Whether ``char`` is of a script written without spaces between words (CJK: wide or full-width)."""
    return unicodedata.east_asian_width(char) in "WF"


def sentences(text: str) -> list[str]:
    """``text``'s sentences, split after sentence-ending punctuation and at line breaks."""
    return [s.strip() for line in text.splitlines() for s in _SENTENCE_END.split(line) if s.strip()]


def questions(text: str) -> list[str]:
    """The sentences of ``text`` that end in a question mark."""
    return [s for s in sentences(text) if s.endswith(_QUESTION_MARKS) or _greek_question(s)]


def _greek_question(sentence: str) -> bool:
    """A Greek sentence ends in ";" (the Greek question mark, U+037E, normalises to it)."""
    return sentence.endswith((";", "\u037e")) and any("GREEK" in unicodedata.name(c, "") for c in sentence)

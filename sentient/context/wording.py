"""Words and sentences of a text, as the grounding code compares them.

Texts are compared as lower-case ASCII words (:func:`normalize`), each word without its
inflection (:func:`stem`), the common words that state nothing left out (:func:`own_words`);
names written with underscores count as one word (:func:`names`). Sentences keep the citation
markers that follow their full stop (:func:`sentences`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from sentient.context.citations import cited_numbers

_NON_WORD = re.compile(r"[^0-9a-z]+")
_NAME = re.compile(r"\b_*([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)_*\b")


# A sentence ends at . ! ? or a line break, but citations after its full stop ("... them. [2]",
# as ground() appends them) still belong to it, and an initial or an abbreviation ("by J. Postel",
# "e.g. lists") ends none.
_SENTENCE_BREAK = re.compile(r"((?<=[.!?])(?<!\b[A-Z]\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)[ \t]+(?!\[\d)|\n+)")
_COMMON = (
    "a also an and are as at be been by can could did do does for from had has have how in is it its many may might much "
    "no nor not of on or "
    "that the their them there these they this those to under was were what when where which who whom whose "
    "since why with"
)


# Words an answer uses to point at its sources ("as stated in [2]") state nothing either, nor do the
# words a question uses to say where to look ("according to the random module's docstring").
ATTRIBUTION_WORDS = (
    "according cite cited cites citing confirm confirmed confirms docstring docstrings document documentation "
    "documents found indicated information mentioned passage passages per provided shown source sources stated states"
)
STOP_WORDS = frozenset((_COMMON + " " + ATTRIBUTION_WORDS).split())  # words that state nothing an answer adds


def normalize(text: str) -> str:
    """Lower-case ASCII words separated by single spaces (accents folded, punctuation dropped)."""
    # Accents are dropped, but any other non-ASCII character separates words: "09:00–10:30"
    # must stay four numbers, not glue into "09 0010 30".
    decomposed = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    return _NON_WORD.sub(" ", folded).strip()


# Past forms of common irregular verbs, to their base form: "held by Vinay Sajip" answers "Who
# holds the copyright?" with nothing of its own but the name. Forms that are also other words
# ("left", "bound", "found") are not listed.
_IRREGULAR = {
    form: base
    for base, forms in {
        "begin": "began begun",
        "break": "broke broken",
        "bring": "brought",
        "build": "built",
        "choose": "chose chosen",
        "draw": "drew drawn",
        "drive": "drove driven",
        "freeze": "froze frozen",
        "get": "got gotten",
        "give": "gave given",
        "grow": "grew grown",
        "hide": "hid hidden",
        "hold": "held",
        "keep": "kept",
        "know": "knew known",
        "lead": "led",
        "lose": "lost",
        "make": "made",
        "mean": "meant",
        "run": "ran",
        "say": "said",
        "send": "sent",
        "spend": "spent",
        "take": "took taken",
        "tell": "told",
        "think": "thought",
        "throw": "threw thrown",
        "write": "wrote written",
    }.items()
    for form in forms.split()
}


def stem(word: str) -> str:
    """``word`` without its inflection, so "wrapping them in futures" meets "wrapped in a future".

    A few suffix rules in the manner of Porter's first step (plural, -ed, -ing, final -e, a
    doubled final consonant), enough to match one word's forms, after the past forms of common
    irregular verbs are read as their base ("held" as "hold") and an adverb as its adjective
    ("treated specially" meets "special meanings"); not a linguistic stemmer. Numbers and
    words of two letters are kept as they are.
    """
    word = _IRREGULAR.get(word, word)
    if len(word) <= 2 or word.isdigit():
        return word
    if word.endswith("ly") and len(word) > 5:  # "only", "early", "daily" are words of their own
        word = word[:-2]
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and not word.endswith("eed") and len(word) > 3:
        word = word[:-2]
    if word.endswith("e") and len(word) > 2:
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]
    return word


# Numbers written as words, stemmed as claims are: "y is evaluated only once" gives a number as
# "3.3" does. ("one" is left out: it is a pronoun as often as a number.)
_COUNT_WORDS = "zero two three four five six seven eight nine ten eleven twelve once twice"
NUMBER_WORDS = frozenset(stem(w) for w in _COUNT_WORDS.split())


def word_stems(text: str) -> set[str]:
    return {stem(w) for w in normalize(text).split()} | set(names(text))


def names(text: str) -> list[str]:
    """The names written with underscores in ``text`` (``__suppress_context__``, ``policy_acp7``),
    lower-cased without their outer underscores. Each is one word of what a text states: split,
    its parts are often the question's own words ("suppresses ... the exception context"), and
    the answer that names it would seem to add nothing."""
    return [name.lower() for name in _NAME.findall(text)]


def own_words(text: str) -> list[str]:
    """The words of ``text`` that say what it is about, once each: common words and single
    letters (the "s" of "Python's") left out, numbers kept."""
    words = dict.fromkeys(normalize(text).split())
    return [w for w in words if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())]


def sentence_parts(text: str) -> list[str]:
    """``text`` split into its sentences and the breaks between them: even items are the
    sentences (each with the citations after its full stop), odd ones the breaks; joined, they
    give ``text`` back."""
    return _SENTENCE_BREAK.split(text)


def sentences(text: str) -> list[str]:
    """``text``'s sentences, each with the citations that follow its full stop."""
    return [part for part in sentence_parts(text)[::2] if part.strip()]


def questions(text: str) -> list[str]:
    """The sentences of ``text`` that end in a question mark."""
    return [s for s in sentences(text) if s.rstrip().endswith("?")]


def opening(text: str) -> str:
    """The first sentence of ``text``: an answer's direct answer ("" for an empty text)."""
    return next(iter(sentences(text)), "")


def cited_sentences(texts: Sequence[str]) -> list[tuple[str, list[int]]]:
    """The sentences of ``texts`` that cite, each with its citation numbers."""
    return [
        (sentence, numbers) for text in texts for sentence in sentences(text) if (numbers := cited_numbers(sentence))
    ]

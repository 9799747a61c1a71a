"""Grounded citations: a citation stands only if its supporting quote is really in the source.

An executor answers with, for each source it cites, a short quote copied from that source.
The quote is checked in code against the text the model was shown (the source's snippet),
ignoring case, accents, punctuation and spacing:

1. the quote occurs in the cited source: verified;
2. it occurs in another source the model was shown (small models mix up numbers): verified,
   and the answer's marker is moved to that source;
3. at least ``MIN_OVERLAP`` of the quote's words occur, in a window about the quote's length, in
   one source (a lightly paraphrased quote, or table cells quoted as a line): verified, noted.

A citation that passes none of these is dropped from the answer and noted on the node; a
verified one marks its source ``verified`` with the quote, so the report can show the
evidence behind every reference.

An aggregator's sentence that cites nothing is given the citation of a cited subtask sentence
it restates (``carry_citations``), or of a shown source sentence that states its facts: every
number, and most of the words it adds to the task; or every number and name it gives, in a
sentence that holds most of the task's words (``cite_statements``). A sentence stated only in
part (a fact padded with words of the model's own) has its stated clauses cited. The
name of a source's document ("according to policy_acp7.md") counts as stated by that source.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from sentient.context.citations import cited_numbers, renumber
from sentient.graph.node import Source

_NON_WORD = re.compile(r"[^0-9a-z]+")
_NAME = re.compile(r"\b_*([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)_*\b")
_ELLIPSIS = re.compile(r"\.\.\.|…")
MIN_QUOTE_WORDS = 2  # one word ("30") proves nothing about the sentence it came from
MIN_OVERLAP = 0.8  # share of a loosely matched quote's words found together in the source
MIN_LOOSE_WORDS = 4  # a loose match needs a quote of at least this many words
MIN_RESTATED = 0.6  # share of a cited sentence's words a restating sentence must hold
# A sentence ends at . ! ? or a line break, but citations after its full stop ("... them. [2]",
# as ground() appends them) still belong to it, and an initial or an abbreviation ("by J. Postel",
# "e.g. lists") ends none.
_SENTENCE_BREAK = re.compile(r"((?<=[.!?])(?<!\b[A-Z]\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)[ \t]+(?!\[\d)|\n+)")
# "The RFC that telnetlib is based on is [2]." A marker standing where the answer belongs ends its
# sentence right after a verb that names or equates; "as stated in [2]" points at a source, fine,
# and so does a sentence about the source ("The source of this information is [2].").
_MARKER_AS_ANSWER = re.compile(
    r"\b(?:is|are|was|were|be|called|named)\s+(?:\[\d+(?:\s*,\s*\d+)*\]\s*)+[.;!?]*\s*$", re.IGNORECASE
)
_ABOUT_A_SOURCE = re.compile(r"\b(?:sources?|references?|citations?|documents?)\b", re.IGNORECASE)
MAX_QUOTE_WORDS = 30  # a longer sentence is offered as quotes of QUOTE_PIECE_WORDS words
QUOTE_PIECE_WORDS = 25
# A sentence read whole when checking what the sources state: the docs' long sentences put the
# topic and the value 30 words apart ("Comparisons can be chained ... except that y is evaluated
# only once").
MAX_STATEMENT_WORDS = 60
_TRAILING = re.compile(r"[.!?:;]*\s*$")
_CITED_CLAUSE = re.compile(r"((?:\s*\[\d+(?:\s*,\s*\d+)*\])+)")  # a run of citation markers
MIN_SUPPORT = 0.6  # share of an answer's own words (and every number) a sentence must hold to state it
MIN_SUPPORTED_WORDS = 4  # ... and at least this many of them (all of a shorter claim)
MIN_ASKED = 0.6  # or: share of the task's own words a sentence holding every number and name of the answer must hold
# A clause of a sentence a source does not state as a whole: it ends at , ; : or a dash, and is
# cited on its own when it holds a number or at least MIN_CLAUSE_CLAIM words of its own, or when
# it is the task's question answered in one word and a shown sentence states all of it.
_CLAUSE_BREAK = re.compile(r"([,;:]\s+|\s+[-–—]\s+)")
MIN_CLAUSE_CLAIM = 2
MIN_ANSWER_CLAUSE_WORDS = 3  # words of its own a one-word answer's clause must hold ("originally distributed as Optik")
_COMMON = (
    "a also an and are as at be been by can could did do does for from had has have how in is it its many may might much "
    "no nor not of on or "
    "that the their them there these they this those to under was were what when where which who whom whose "
    "since why with"
)
# Words an answer uses to point at its sources ("as stated in [2]") state nothing either, nor do the
# words a question uses to say where to look ("according to the random module's docstring").
_ATTRIBUTION = (
    "according cite cited cites citing confirm confirmed confirms docstring docstrings document documentation "
    "documents found indicated information mentioned passage passages per provided shown source sources stated states"
)
_STOP_WORDS = frozenset((_COMMON + " " + _ATTRIBUTION).split())  # words that state nothing an answer adds
# A phrase that says where a statement comes from ("as per Python's documentation", "according to
# the asyncio docs", "as stated in the postmortem_INC-2025-012.md source"): its words are not part of
# what the sentence states (the file's name would be stated by every sentence of that file).
_SAYS_WHERE = re.compile(
    r"\b(?:as\s+)?(?:per|according\s+to|based\s+on|in|from)\s+(?:the\s+)?"
    r"(?:(?:[\w.-]+(?:'s|’s)?\s+){0,2}?(?:documentation|docs|docstrings?|sources?|passages?|reference)\b"
    r"|[\w-]+\.(?:md|txt|rst|html?)\b)",
    re.IGNORECASE,
)
# The words before a citation that only point at it ("…, as stated in [2]", "This can be found
# in [3]"), removed with it.
_POINTING = re.compile(
    r"[\s,;]*(?:\b(?:as|and|or|in|by|to|see|the|this|is|are|be|can|could|may|also|"
    + _ATTRIBUTION.replace(" ", "|")
    + r")\b[\s,;]*)*$",
    re.IGNORECASE,
)


# The words of a question that ask for a measure; the answer states the measure, not the words.
_MEASURE = re.compile(r"\bhow\s+(?:long|often|many\s+times|much)\b", re.IGNORECASE)
_COUNTED = re.compile(r"\bhow\s+many((?:\s+[A-Za-z]+){1,3})", re.IGNORECASE)  # "how many ensemble members"
COUNT_REACH = 3  # words before or after a number within which the thing it counts is named

# A sentence that opens by saying the sources do not confirm (contain, state…) the answer.
_DISCLAIMER = re.compile(
    r"\W*(?:however,?\s+)?(?:the\s+|these\s+)?(?:provided\s+|given\s+)?(?:sources?|passages?|documents?)"
    r"(?:\s+provided|\s+given|\s+above)?\s+(?:do|does)\s+not\b",
    re.IGNORECASE,
)
# The last words of a sentence cut off mid-way ("It is stored in the", "used as items such as",
# "shown on the Gullet dashboard ("): a word that needs another after it, or an open bracket.
_UNFINISHED = re.compile(
    r"(?:\b(?:a|an|the|of|in|on|at|to|for|with|by|from|as|like|and|or|but|nor|than|into|under|over|about|"
    r"between|is|are|was|were|be|been|its|their|his|her|this|these|those|which|whose|including)|[(\[{,:;])\s*$",
    re.IGNORECASE,
)
_TRAILING_MARKERS = re.compile(r"(?:[\s,;]*\[\d+(?:\s*,\s*\d+)*\])+\s*$")  # "… the file. [1], [2]"
# A disclaimer's sequel, dropped with it: "They also do not confirm that …".
_DISCLAIMER_GOES_ON = re.compile(
    r"\W*(?:they|it)\s+(?:also\s+)?(?:do|does)\s+not\s+(?:confirm|state|say|mention|specify)\b", re.IGNORECASE
)


class Quoted(Protocol):
    """A citation as an agent returns it: the source number and a quote from that source."""

    source: int
    quote: str


@dataclass(frozen=True)
class Grounded:
    """An answer after its citations were checked."""

    text: str
    sources: list[Source]
    notes: list[str]


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
_COUNTS = frozenset(stem(w) for w in _COUNT_WORDS.split())


def _stems(text: str) -> set[str]:
    return {stem(w) for w in normalize(text).split()} | set(_names(text))


def _names(text: str) -> list[str]:
    """The names written with underscores in ``text`` (``__suppress_context__``, ``policy_acp7``),
    lower-cased without their outer underscores. Each is one word of what a text states: split,
    its parts are often the question's own words ("suppresses ... the exception context"), and
    the answer that names it would seem to add nothing."""
    return [name.lower() for name in _NAME.findall(text)]


def quote_occurs(quote: str, text: str) -> bool:
    """Whether ``quote`` (pieces around an ellipsis, in order) occurs in ``text``, normalised."""
    pieces = [normalize(p) for p in _ELLIPSIS.split(quote)]
    pieces = [p for p in pieces if p]
    if sum(len(p.split()) for p in pieces) < MIN_QUOTE_WORDS:
        return False
    haystack, at = f" {normalize(text)} ", 0
    for piece in pieces:
        found = haystack.find(f" {piece} ", at)
        if found < 0:
            return False
        at = found + len(piece) + 1
    return True


def loose_overlap(quote: str, text: str) -> float:
    """The largest share of the quote's distinct words found in one window of ``text`` about
    the quote's length (half again as long), in any order."""
    wanted = set(normalize(quote).split())
    words = normalize(text).split()
    if not wanted or not words:
        return 0.0
    size = max(len(wanted), round(len(normalize(quote).split()) * 1.5))
    best = 0
    for start in range(max(1, len(words) - size + 1)):
        best = max(best, len(wanted.intersection(words[start : start + size])))
    return best / len(wanted)


def ground(answer: str, citations: Sequence[Quoted], sources: Sequence[Source]) -> Grounded:
    """Keep the citations of ``answer`` that are verified, by a quote here or upstream.

    A marker ``[n]`` stays when this call quoted source n (see the module docstring for how a
    quote is matched, and moved to the source it really came from), or when source n was
    verified before (a dependency's or child's result carried it). A verified source the
    answer quotes but never marks is cited at the end, so a supported answer always cites.
    """
    notes: list[str] = []
    quotes: dict[int, str] = {}
    moved: dict[int, int] = {}
    for citation in citations:
        n, quote = citation.source, citation.quote.strip()
        found = _locate(quote, n, sources)
        if found is None:
            where = (
                f"there is no source {n}" if not 1 <= n <= len(sources) else "its quote does not occur in the source"
            )
            notes.append(f"citation [{n}] dropped: {where}: {quote[:80]!r}")
            continue
        m, how = found
        quotes.setdefault(m, quote)
        if m != n:
            moved.setdefault(n, m)
            notes.append(f"citation [{n}] moved to [{m}]: the quote is from source {m}")
        if how:
            notes.append(f"citation [{m}] verified loosely: {how}")
    grounded = [
        source.model_copy(update={"verified": True, "quote": quotes[n]}) if n in quotes else source
        for n, source in enumerate(sources, start=1)
    ]
    keep = {n: n for n, source in enumerate(grounded, start=1) if source.verified}
    keep.update(moved)
    marked = [n for n in cited_numbers(answer) if 1 <= n <= len(sources)]
    for n in marked:
        if n not in keep:
            notes.append(f"citation [{n}] dropped: no verified quote from that source")
    text = renumber(answer, keep).strip()
    marked_now = {keep.get(m) for m in marked}
    unmarked = [n for n in quotes if n not in marked_now]
    if unmarked:
        text += " " + "".join(f"[{n}]" for n in sorted(unmarked))
    return Grounded(text, grounded, list(dict.fromkeys(notes)))


@dataclass(frozen=True)
class Statement:
    """Where a shown source states a claim: the source (1-based), its sentence, and how fully."""

    source: int
    sentence: str
    share: float


def evidence(answer: str, task: str, sources: Sequence[Source]) -> Statement | None:
    """The shown sentence that states ``answer`` best, or None.

    What an answer states is the words it adds to its task: numbers, names, values. A sentence
    states it when it holds every such number, at least ``MIN_SUPPORT`` of the other words, and
    at least ``MIN_SUPPORTED_WORDS`` of them (all, for a shorter claim): three words shared with
    an unrelated sentence of a neighbouring docstring must not verify a five-word clause. A
    value is stated in the source's own words too: a sentence that holds every number and name
    (``cache_info``) of the answer and ``MIN_ASKED`` of the task's own words answers the task
    with them ("Changed in version 3.3: Hash randomization is enabled by default." states
    "Python 3.3 introduced hash randomization"). Asked "how many X", a sentence whose number
    counts something else states no count of X (:func:`_counts_the_same`). Among several, the
    one holding most of the claim wins, then the one sharing most words with the task (a table
    row names the thing asked about). None when the answer adds nothing to the task, or no
    sentence states it.
    Sentences of up to ``MAX_STATEMENT_WORDS`` words are read whole, not in quote pieces.
    """
    claim = _claim(answer, task)
    if not claim:
        return None
    counts = _counts(answer, task)
    asked = _stems(task)
    own = {stem(w) for w in own_words(task)}
    values = [w for w in claim if w.isdigit() or w in _COUNTS or "_" in w]  # the numbers and names it gives
    needed = max(MIN_SUPPORT * len(claim), min(MIN_SUPPORTED_WORDS, len(claim)))
    best: tuple[float, int, int, str] | None = None
    for n, source in enumerate(sources, start=1):
        named = _stems(_document_label(source))  # "the current policy, policy_acp9.md": the document says so
        for sentence in quotable([source], MAX_STATEMENT_WORDS):
            if counts and not _counts_the_same(sentence, counts):
                continue
            words = _stems(sentence) | named
            share = _states(words, claim)
            answers = (
                bool(values and own) and all(v in words for v in values) and len(own & words) >= MIN_ASKED * len(own)
            )
            if share * len(claim) >= needed or answers:
                rank = (share, len(asked & words), -n, sentence)
                best = max(best, rank) if best else rank
    return Statement(-best[2], best[3], best[0]) if best else None


def cite_statements(answer: str, task: str, sources: Sequence[Source]) -> tuple[str, list[Source], int]:
    """Cite the sentences of ``answer`` that cite nothing but state what a shown sentence states.

    An aggregator often restates a fact and drops its ``[n]``; :func:`carry_citations` gives it
    back from the subtask's cited sentence, this from the source itself (:func:`evidence` per
    sentence; the source is marked verified with that sentence unless it was already).
    Returns the text, the sources and how many sentences were given a citation.
    """
    grounded = list(sources)

    def cite(text: str, stated: Statement) -> str:
        n = stated.source
        if not grounded[n - 1].verified:
            grounded[n - 1] = grounded[n - 1].model_copy(update={"verified": True, "quote": stated.sentence})
        tail = _TRAILING.search(text)
        at = tail.start() if tail else len(text)
        return f"{text[:at]} [{n}]{text[at:]}"

    parts = _SENTENCE_BREAK.split(answer)
    cited = 0
    for i in range(0, len(parts), 2):  # even items are sentences, odd ones the breaks between them
        sentence = parts[i]
        if not sentence.strip() or cited_numbers(sentence):
            continue
        stated = evidence(sentence, task, grounded)
        if stated is not None:
            parts[i] = cite(sentence, stated)
            cited += 1
            continue
        # A small model pads a stated fact with words of its own ("..., to ensure it is handled
        # promptly"): the clauses a source states are cited, the padding is not.
        clauses = _CLAUSE_BREAK.split(sentence)
        for j in range(0, len(clauses), 2):
            own = _claim(clauses[j], task)
            if len(own) < MIN_CLAUSE_CLAIM and not any(w.isdigit() for w in own):
                stated = _answered_in_one_word(clauses[j], task, grounded)
            else:
                stated = evidence(clauses[j], task, grounded)
            if stated is not None:
                clauses[j] = cite(clauses[j], stated)
        if "".join(clauses) != sentence:
            parts[i] = "".join(clauses)
            cited += 1
    return "".join(parts), grounded, cited


def _answered_in_one_word(clause: str, task: str, sources: Sequence[Source]) -> Statement | None:
    """The shown sentence that states ``clause``, when the clause answers ``task`` in one word.

    "The standard json module is derived from the externally maintained simplejson library"
    adds one word to its question: the answer. One word alone proves nothing (any sentence
    that says "fast" would state "which is fast"), so the clause as a whole must be stated
    (:func:`evidence` of its own words, at least ``MIN_ANSWER_CLAUSE_WORDS`` of them), by a
    sentence that holds the answer word.
    """
    added = _claim(clause, task)
    if len(added) != 1 or len(_claim(clause, "")) < MIN_ANSWER_CLAUSE_WORDS:
        return None
    stated = evidence(clause, "", sources)
    return stated if stated is not None and added[0] in _stems(stated.sentence) else None


def cite_by_evidence(answer: str, task: str, sources: Sequence[Source]) -> Grounded:
    """Check the citations of an answer that came without quotes against what the sources state.

    Each clause that ends in citations (the text since the previous citation or sentence start)
    keeps a citation ``[n]`` when source n was verified upstream, or one of its shown sentences
    states the clause (:func:`evidence`) and no other shown source states more of it; else it
    cites the source that states it best, if one does, and otherwise nothing (noted). A clause that only points at its sources ("This is
    stated in [2].") keeps a citation this answer verified elsewhere, or whose source states what
    was said just before it. Words left pointing at
    a dropped citation ("as stated in") go, and so does a sentence left stating nothing. A
    sentence that cites nothing is cited as :func:`cite_statements` does. The sources stated are
    marked verified with their sentence.
    """
    grounded = list(sources)
    upstream = {n for n, source in enumerate(sources, start=1) if source.verified}
    verified = set(upstream)  # and the sources this answer's clauses are found in
    notes: list[str] = []

    def verify(clause: str, n: int, best: Statement | None) -> bool:
        """Whether source n states the clause, and no other shown source states more of it
        (``best``: the shown sentence that states most of it)."""
        if n in upstream:
            return True
        stated = evidence(clause, task, [sources[n - 1]]) if 1 <= n <= len(sources) else None
        if stated is None or (best is not None and best.share > stated.share):
            return False
        grounded[n - 1] = sources[n - 1].model_copy(update={"verified": True, "quote": stated.sentence})
        verified.add(n)
        return True

    def check(clause: str, marked: list[int]) -> list[int]:
        best = evidence(clause, task, sources)
        kept = [n for n in marked if verify(clause, n, best)]
        if not kept and best is not None and verify(clause, best.source, best):
            kept = [best.source]
        return kept

    parts = _SENTENCE_BREAK.split(answer)
    clauses = {i: _CITED_CLAUSE.split(parts[i]) for i in range(0, len(parts), 2) if cited_numbers(parts[i])}
    decided: dict[tuple[int, int], list[int]] = {}
    for pointing in (False, True):  # clauses that state something first, then those that only point
        for i, pieces in clauses.items():
            for j in range(1, len(pieces), 2):
                clause = pieces[j - 1]
                if bool(_claim(clause, task)) is pointing:
                    continue
                marked = cited_numbers(pieces[j])
                if pointing:  # it points at what was said just before it
                    before = renumber(pieces[j - 3] if j > 1 else (parts[i - 2] if i else ""), {})
                    best = evidence(before, task, sources) if before.strip() else None
                    kept = [n for n in marked if n in verified or (best is not None and verify(before, n, best))]
                else:
                    kept = check(clause, marked)
                decided[i, j] = kept
                dropped = [n for n in marked if n not in kept]
                if dropped:
                    cited = "".join(f"[{n}]" for n in dropped)
                    notes.append(f"citation {cited} dropped: the source does not state {clause.strip()[:80]!r}")
    cleaned = list(parts)  # every sentence, its dropped citations and the words pointing at them removed
    for i, pieces in clauses.items():
        emptied = False
        for j in range(1, len(pieces), 2):
            kept = decided[i, j]
            pieces[j] = " " + "".join(f"[{n}]" for n in kept) if kept else ""
            if not kept:
                pieces[j - 1] = _POINTING.sub("", pieces[j - 1])
                emptied = True
        sentence = cleaned[i] = "".join(pieces)
        parts[i] = "" if emptied and not _claim(sentence, task) and not cited_numbers(sentence) else sentence
    if not "".join(parts).strip():
        # Every sentence lost its citation and adds no counted word to the task: the answer is a
        # code word or a letter ("... is `not` [2]", "The I and Q components ... [3]"). Nothing
        # would be left of it; it is kept, uncited.
        parts = cleaned
        notes.append("no sentence of the answer kept a citation: kept without them")
    text, grounded, _ = cite_statements("".join(parts), task, grounded)
    return Grounded(text.strip(), grounded, list(dict.fromkeys(notes)))


def questions(text: str) -> list[str]:
    """The sentences of ``text`` that end in a question mark."""
    return [s for s in sentences(text) if s.rstrip().endswith("?")]


def sentences(text: str) -> list[str]:
    """``text``'s sentences, each with the citations that follow its full stop."""
    return [part for part in _SENTENCE_BREAK.split(text)[::2] if part.strip()]


def opening(text: str) -> str:
    """The first sentence of ``text``: an answer's direct answer ("" for an empty text)."""
    return next(iter(sentences(text)), "")


def written_as_report(text: str) -> bool:
    """Whether ``text`` is more than one line: a report (headings, paragraphs, lists), not an
    answer of one paragraph whose first sentence is the direct answer."""
    return "\n" in text.strip()


def opens_cited(text: str, numbers: Collection[int]) -> bool:
    """Whether the first sentence of ``text``, the direct answer, cites one of ``numbers``."""
    return any(n in numbers for n in cited_numbers(opening(text)))


def drop_unfinished(answer: str) -> tuple[str, str | None]:
    """``answer`` without a last sentence that stops mid-way, and that sentence (None if kept).

    The small model sometimes closes its answer in the middle of a sentence ("… in the variable
    `_`. It is stored in the"), and a later step copies the fragment or guesses how it goes on
    ("such as `__builtins__`"). Only a last sentence that ends on a word that needs another
    after it ("the", "such as", "is") or on an open bracket goes, and only after a sentence that
    stays: a short answer ("47 seconds") has no full stop and is whole.
    """
    parts = sentences(answer)
    if len(parts) < 2 or not _UNFINISHED.search(_TRAILING_MARKERS.sub("", parts[-1])):
        return answer, None
    last = parts[-1].strip()
    return answer[: answer.rindex(last)].rstrip(), last


def marker_as_answer(answer: str) -> str | None:
    """The first sentence of ``answer`` whose answer is only a citation marker ("... is [2]."), if any.

    A small model sometimes takes a source's number for the thing asked about. Such an answer
    says nothing, and a later step copies the number as a name ("[RFC 854]", from memory).
    """
    return next((sentence.strip() for sentence in sentences(answer) if _gives_a_marker(sentence)), None)


def state_markers(answer: str, cited_texts: Sequence[str]) -> tuple[str, int]:
    """Replace each sentence of ``answer`` that gives only a citation marker as its answer
    (:func:`marker_as_answer`) by the first sentence of ``cited_texts`` (the results it was
    given, numbered as the answer's sources) that cites the same source: the marker says which
    source, the result says what that source states. Returns the text and how many sentences
    were replaced.
    """
    stating = [
        (sentence.strip(), set(numbers))
        for sentence, numbers in _cited_sentences(cited_texts)
        if not _gives_a_marker(sentence)
    ]
    parts = _SENTENCE_BREAK.split(answer)
    replaced = 0
    for i in range(0, len(parts), 2):  # even items are sentences, odd ones the breaks between them
        if not _gives_a_marker(parts[i]):
            continue
        wanted = set(cited_numbers(parts[i]))
        found = next((sentence for sentence, numbers in stating if numbers & wanted), None)
        if found is not None:
            parts[i] = found
            replaced += 1
    return "".join(parts), replaced


def _cited_sentences(texts: Sequence[str]) -> list[tuple[str, list[int]]]:
    """The sentences of ``texts`` that cite, each with its citation numbers."""
    return [
        (sentence, numbers) for text in texts for sentence in sentences(text) if (numbers := cited_numbers(sentence))
    ]


def _gives_a_marker(sentence: str) -> bool:
    return bool(_MARKER_AS_ANSWER.search(sentence)) and not _ABOUT_A_SOURCE.search(sentence)


def drop_disclaimers(answer: str, sources: Sequence[Source]) -> tuple[str, int]:
    """``answer`` without its sentences that say the sources do not confirm it, when it cites a
    verified source; and how many went.

    The small model is told to say so when it answers from memory, and often says it after an
    answer whose citation the code has just checked: "… is 18 KiB [1]. The sources do not
    confirm this answer." Only sentences that open with such a disclaimer (or go on with one:
    "They also do not confirm …") and cite nothing go; an answer with no verified citation
    keeps them, since there they are true.
    """
    verified = {n for n, source in enumerate(sources, start=1) if source.verified}
    if not verified.intersection(cited_numbers(answer)):
        return answer, 0
    parts = [*_SENTENCE_BREAK.split(answer), ""]  # sentence, the break after it, sentence, …
    kept: list[str] = []
    dropped = 0
    after_disclaimer = False
    for i in range(0, len(parts) - 1, 2):
        sentence = parts[i]
        disclaims = _DISCLAIMER.match(sentence) or (after_disclaimer and _DISCLAIMER_GOES_ON.match(sentence))
        after_disclaimer = bool(disclaims) and not cited_numbers(sentence)
        if after_disclaimer:
            dropped += 1
        else:
            kept.append(sentence + parts[i + 1])
    return ("".join(kept).strip(), dropped) if dropped else (answer, 0)


def _counts(answer: str, task: str) -> tuple[set[str], set[str]] | None:
    """What ``task`` asks how many of (the stemmed words of its name: "ensemble members") and
    the numbers ``answer`` gives for it: those within ``COUNT_REACH`` words of one of them
    ("41,200 buoys"); None if it asks no count."""
    asked = _COUNTED.search(task)
    if asked is None:
        return None
    counted = {stem(w) for w in asked.group(1).lower().split() if w not in _STOP_WORDS}
    words = _counted_words(answer)
    numbers = {w for at, w in enumerate(words) if w.isdigit() and counted.intersection(_around(words, at))}
    return (counted, numbers) if numbers else None


def _counts_the_same(sentence: str, counts: tuple[set[str], set[str]]) -> bool:
    """Whether ``sentence`` may give ``counts``' numbers as counts of the same thing: it does not
    where each of them counts something else, named right after it ("41,200 readings were lost"
    does not state "41,200 buoys"). A number near the name of what is counted, or followed by
    no word of its own (a table's "Plover 94 the Vester Banks"), may count it."""
    counted, numbers = counts
    raw = normalize(renumber(sentence, {})).split()
    words = [stem(w) for w in raw]

    def counts_it(at: int) -> bool:
        after = raw[at + 1] if at + 1 < len(raw) else ""
        return bool(counted.intersection(_around(words, at))) or not after.isalpha() or after in _STOP_WORDS

    for number in numbers:
        places = [at for at, w in enumerate(words) if w == number]
        if places and not any(counts_it(at) for at in places):
            return False
    return True


def _counted_words(text: str) -> list[str]:
    return [stem(w) for w in normalize(renumber(text, {})).split()]


def _around(words: list[str], at: int) -> list[str]:
    return words[max(0, at - COUNT_REACH) : at + COUNT_REACH + 1]


def _claim(answer: str, task: str) -> list[str]:
    """The words ``answer`` adds to ``task``, stemmed (citation markers and common words left out)."""
    asked = _stems(task)
    text = _SAYS_WHERE.sub(" ", renumber(answer, {}))
    words = [stem(w) for w in own_words(text)] + _names(text)
    return [w for w in dict.fromkeys(words) if w not in asked]


def coverage(question: str, source: Source, weight: Callable[[str], float] | None = None) -> float:
    """The share of ``question``'s own words (common words left out) that ``source``'s title and
    snippet hold, each word counted by ``weight`` (e.g. its rarity in the documents; default 1).

    A passage that holds nearly all of them answers a lookup; a question whose words only meet
    across passages asks for something to be found first. Rarity weighing keeps a word that
    most passages lack anyway ("Python" in Python's own docstrings) from counting as much as
    a name. The words that ask for a measure ("how long", "how many times") are not looked
    for: the passage that answers says "for 30 days", "only once".
    """
    words = own_words(_MEASURE.sub("how", question))
    held = _stems(f"{source.title} {source.snippet}")
    weights = [weight(w) if weight else 1.0 for w in words]
    total = sum(weights)
    return sum(wt for w, wt in zip(words, weights, strict=True) if stem(w) in held) / total if total else 0.0


def own_words(text: str) -> list[str]:
    """The words of ``text`` that say what it is about, once each: common words and single
    letters (the "s" of "Python's") left out, numbers kept."""
    words = dict.fromkeys(normalize(text).split())
    return [w for w in words if w not in _STOP_WORDS and (len(w) > 1 or w.isdigit())]


def _document_label(source: Source) -> str:
    """What a source says the whole document is: the last part of its path or address (a file
    name such as ``policy_acp9.md``) and the document's title as it was shown ("Access Policy
    ACP-9 (CURRENT)" of ``policy_acp9.md - Access Policy ACP-9 (CURRENT) / Sessions``; the
    passage's own headings left out). Titles in other forms (a topic's name) are not counted: "Python
    reference: import" would state "Python" for every sentence of the topic."""
    name = source.ref.rstrip("/").rsplit("/", 1)[-1]
    shown = source.title.removeprefix(f"{name} - ")
    return f"{name} {shown.split(' / ', 1)[0]}" if shown != source.title else name


def _adds_little(sentence: str, cited: str) -> bool:
    """Whether ``cited`` holds every number and ``MIN_RESTATED`` of the words ``sentence`` states."""
    said = _claim(sentence, "")
    return not said or _states(_stems(cited), said) >= MIN_RESTATED


def _states(words: set[str], claim: list[str]) -> float:
    """The share of ``claim`` in ``words``; 0 if a number of the claim is missing."""
    if any(w.isdigit() and w not in words for w in claim):
        return 0.0
    return sum(w in words for w in claim) / len(claim)


def quotable(sources: Sequence[Source], longest: int = MAX_QUOTE_WORDS) -> tuple[str, ...]:
    """The sentences of the sources' snippets, as quotes an executor may copy (in order, once each).

    A sentence of more than ``longest`` words (a code listing, a run-on table line) is offered
    in pieces of ``QUOTE_PIECE_WORDS``, so a quote stays short; pieces of fewer than
    ``MIN_QUOTE_WORDS`` + 1 words are left out, since they could not verify anything.
    """
    quotes: dict[str, None] = {}
    for source in sources:
        text = _ELLIPSIS.sub(" ", source.snippet)
        for sentence in sentences(text):
            words = sentence.split()
            step = len(words) if len(words) <= longest else QUOTE_PIECE_WORDS
            for start in range(0, len(words), step):
                piece = words[start : start + step]
                if len(piece) > MIN_QUOTE_WORDS:
                    quotes.setdefault(" ".join(piece))
    return tuple(quotes)


def _locate(quote: str, cited: int, sources: Sequence[Source]) -> tuple[int, str] | None:
    """The source (1-based) that holds ``quote``, the cited one first, and how loosely; or None."""
    others = [n for n in range(1, len(sources) + 1) if n != cited]
    order = [cited, *others] if 1 <= cited <= len(sources) else others
    for n in order:
        if quote_occurs(quote, sources[n - 1].snippet):
            return n, ""
    if len(normalize(quote).split()) < MIN_LOOSE_WORDS:
        return None
    for n in order:
        share = loose_overlap(quote, sources[n - 1].snippet)
        if share >= MIN_OVERLAP:
            return n, f"{share:.0%} of the quote's words"
    return None


def carry_citations(answer: str, cited_texts: Sequence[str]) -> tuple[str, int]:
    """Give citations back to sentences of ``answer`` that restate a cited sentence.

    Small models drop ``[n]`` when they combine results. A sentence of the answer that cites
    nothing, but holds at least ``MIN_RESTATED`` of the words of a sentence of ``cited_texts``
    (the results it was given, numbered as the answer's sources), gets that sentence's
    citations, unless it adds more than that: a number, or over ``1 - MIN_RESTATED`` of its
    own words, that the cited sentence does not hold (a citation must not lend its support to
    a claim joined onto what it supports). Returns the text and how many sentences were given
    citations.
    """
    restated = [(renumber(sentence, {}), numbers) for sentence, numbers in _cited_sentences(cited_texts)]
    if not restated:
        return answer, 0
    parts = _SENTENCE_BREAK.split(answer)
    carried = 0
    for i in range(0, len(parts), 2):  # even items are sentences, odd ones the breaks between them
        sentence = parts[i]
        if not sentence.strip() or cited_numbers(sentence) or len(normalize(sentence).split()) < MIN_QUOTE_WORDS:
            continue
        share, numbers, cited = max((loose_overlap(c, sentence), n, c) for c, n in restated)
        if share >= MIN_RESTATED and _adds_little(sentence, cited):
            tail = _TRAILING.search(sentence)
            at = tail.start() if tail else len(sentence)
            parts[i] = sentence[:at] + " " + "".join(f"[{n}]" for n in numbers) + sentence[at:]
            carried += 1
    return "".join(parts), carried

"""Citations checked against what the sources state, for answers that come without quotes.

What an answer states is the words it adds to its task: numbers, names, values. A shown
sentence states it when it holds them (:func:`evidence`). An answer's citations are kept where
the cited source states the clause they end (:func:`cite_by_evidence`). A sentence that cites
nothing is given the citation of a cited subtask sentence it restates (:func:`carry_citations`),
or of a shown source sentence that states its facts: every number, and most of the words it adds
to the task; or every number and name it gives, in a sentence that holds most of the task's
words (:func:`cite_statements`). A sentence stated only in part (a fact padded with words of the
model's own) has its stated clauses cited. The name of a source's document ("according to
policy_acp7.md") counts as stated by that source.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sentient.context.citations import cited_numbers, renumber
from sentient.context.grounding import MIN_QUOTE_WORDS, Grounded, added_words, loose_overlap, opens_confirmed, quotable
from sentient.context.wording import (
    ATTRIBUTION_WORDS,
    NUMBER_WORDS,
    STOP_WORDS,
    cited_sentences,
    names,
    normalize,
    opening,
    own_words,
    sentence_parts,
    stem,
    word_stems,
)
from sentient.graph.node import Source

MIN_RESTATED = 0.6  # share of a cited sentence's words a restating sentence must hold


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
    + ATTRIBUTION_WORDS.replace(" ", "|")
    + r")\b[\s,;]*)*$",
    re.IGNORECASE,
)


# The words of a question that ask for a measure; the answer states the measure, not the words.
_MEASURE = re.compile(r"\bhow\s+(?:long|often|many\s+times|much)\b", re.IGNORECASE)
_COUNTED = re.compile(r"\bhow\s+many((?:\s+[A-Za-z]+){1,3})", re.IGNORECASE)  # "how many ensemble members"
COUNT_REACH = 3  # words before or after a number within which the thing it counts is named


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
    asked = word_stems(task)
    own = {stem(w) for w in own_words(task)}
    values = [w for w in claim if w.isdigit() or w in NUMBER_WORDS or "_" in w]  # the numbers and names it gives
    needed = max(MIN_SUPPORT * len(claim), min(MIN_SUPPORTED_WORDS, len(claim)))
    best: tuple[float, int, int, str] | None = None
    for n, source in enumerate(sources, start=1):
        named = word_stems(_document_label(source))  # "the current policy, policy_acp9.md": the document says so
        for sentence in quotable([source], MAX_STATEMENT_WORDS):
            if counts and not _counts_the_same(sentence, counts):
                continue
            words = word_stems(sentence) | named
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
        return _cited(text, [n])

    parts = sentence_parts(answer)
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
    return stated if stated is not None and added[0] in word_stems(stated.sentence) else None


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

    parts = sentence_parts(answer)
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


def _counts(answer: str, task: str) -> tuple[set[str], set[str]] | None:
    """What ``task`` asks how many of (the stemmed words of its name: "ensemble members") and
    the numbers ``answer`` gives for it: those within ``COUNT_REACH`` words of one of them
    ("41,200 buoys"); None if it asks no count."""
    asked = _COUNTED.search(task)
    if asked is None:
        return None
    counted = {stem(w) for w in asked.group(1).lower().split() if w not in STOP_WORDS}
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
        return bool(counted.intersection(_around(words, at))) or not after.isalpha() or after in STOP_WORDS

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
    asked = word_stems(task)
    text = _SAYS_WHERE.sub(" ", renumber(answer, {}))
    words = [stem(w) for w in own_words(text)] + names(text)
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
    held = word_stems(f"{source.title} {source.snippet}")
    weights = [weight(w) if weight else 1.0 for w in words]
    total = sum(weights)
    return sum(wt for w, wt in zip(words, weights, strict=True) if stem(w) in held) / total if total else 0.0


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
    return not said or _states(word_stems(cited), said) >= MIN_RESTATED


def _states(words: set[str], claim: list[str]) -> float:
    """The share of ``claim`` in ``words``; 0 if a number of the claim is missing."""
    if any(w.isdigit() and w not in words for w in claim):
        return 0.0
    return sum(w in words for w in claim) / len(claim)


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
    restated = [(renumber(sentence, {}), numbers) for sentence, numbers in cited_sentences(cited_texts)]
    if not restated:
        return answer, 0
    parts = sentence_parts(answer)
    carried = 0
    for i in range(0, len(parts), 2):  # even items are sentences, odd ones the breaks between them
        sentence = parts[i]
        if not sentence.strip() or cited_numbers(sentence) or len(normalize(sentence).split()) < MIN_QUOTE_WORDS:
            continue
        share, numbers, cited = max((loose_overlap(c, sentence), n, c) for c, n in restated)
        if share >= MIN_RESTATED and _adds_little(sentence, cited):
            parts[i] = _cited(sentence, numbers)
            carried += 1
    return "".join(parts), carried


def confirmed_by_evidence(answer: Grounded, goal: str) -> Grounded | None:
    """``answer`` (a second look's, which its quotes do not confirm) cited where its sources
    state it (:func:`cite_by_evidence`, its quotes' own citations not trusted), if they state its
    first sentence and that adds to ``goal``; else None.

    Under a grammar the embedded model must copy a sentence before it answers, and may copy one
    that does not state its answer: "switched off on December 17, 2025" came after a sentence
    about paging the owning team, while the planning notes shown say "17 December 2025".
    """
    if not added_words(answer.text, goal):
        return None
    unchecked = [source.model_copy(update={"verified": None, "quote": None}) for source in answer.sources]
    stated = cite_by_evidence(renumber(answer.text, {}), goal, unchecked)
    return stated if opens_confirmed(stated) else None


def confirmed_in(answer: Grounded, goal: str, passages: Sequence[Source]) -> Grounded | None:
    """``answer`` with its first sentence cited by the one of ``passages`` that states it best
    (:func:`evidence`), if one does; else None. Its other sentences and citations stay as they are.

    ``passages`` are more than the answer was checked against: those a search with the
    answer's own words found (a second look's). A passage whose source the answer lists already
    replaces it, its snippet being the one that holds the sentence.
    """
    first = opening(answer.text)
    if not first or not answer.text.startswith(first):
        return None
    stated = evidence(renumber(first, {}), goal, passages)
    if stated is None:
        return None
    passage = passages[stated.source - 1].model_copy(update={"verified": True, "quote": stated.sentence})
    sources = list(answer.sources)
    refs = [source.ref for source in sources]
    if passage.ref in refs:
        n = refs.index(passage.ref) + 1
        sources[n - 1] = passage
    else:
        sources.append(passage)
        n = len(sources)
    return Grounded(_cited(first, [n]) + answer.text[len(first) :], sources, answer.notes)


def _cited(text: str, numbers: Sequence[int]) -> str:
    """``text`` with the citations ``numbers`` before its closing punctuation ("a fact [2].")."""
    tail = _TRAILING.search(text)
    at = tail.start() if tail else len(text)
    return f"{text[:at]} {''.join(f'[{n}]' for n in numbers)}{text[at:]}"

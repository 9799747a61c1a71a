import re
from dataclasses import dataclass

import pytest

from sentient.context.answer_text import drop_disclaimers, drop_unfinished, marker_as_answer, state_markers
from sentient.context.evidence import (
    carry_citations,
    cite_by_evidence,
    cite_statements,
    confirmed_by_evidence,
    confirmed_in,
    coverage,
    evidence,
)
from sentient.context.grounding import Grounded, confirmed_by_quote, ground, quotable, quote_occurs
from sentient.context.wording import stem
from sentient.graph.node import Source

LISTS = Source(ref="/docs/lists.md", title="Lists", snippet="A list is a mutable sequence: lists grow with append().")
TUPLES = Source(ref="/docs/tuples.md", title="Tuples", snippet="A tuple is an immutable sequence; tuples can be keys.")


@dataclass
class Cite:
    source: int
    quote: str


def test_quote_matches_ignoring_case_punctuation_and_spacing():
    assert quote_occurs("lists GROW with   append", LISTS.snippet)
    assert quote_occurs("A list is … grow with append()", LISTS.snippet)
    assert not quote_occurs("lists shrink with pop", LISTS.snippet)
    assert not quote_occurs("grow with append … A list is", LISTS.snippet)  # pieces must come in order


def test_a_one_word_quote_proves_nothing():
    assert not quote_occurs("lists", LISTS.snippet)


def test_verified_citations_stay_and_mark_their_source():
    grounded = ground(
        "Lists grow [1]; tuples are keys [2].",
        [Cite(1, "lists grow with append"), Cite(2, "can be keys")],
        [LISTS, TUPLES],
    )
    assert grounded.text == "Lists grow [1]; tuples are keys [2]."
    assert [s.verified for s in grounded.sources] == [True, True]
    assert grounded.sources[0].quote == "lists grow with append"
    assert grounded.notes == []


def test_a_citation_whose_quote_is_not_in_the_source_is_dropped_and_noted():
    grounded = ground(
        "Lists grow [1]; tuples shrink [2].",
        [Cite(1, "lists grow with append"), Cite(2, "tuples shrink fast")],
        [LISTS, TUPLES],
    )
    assert grounded.text == "Lists grow [1]; tuples shrink."
    assert grounded.sources[1].verified is None
    assert any("[2] dropped: its quote does not occur" in n for n in grounded.notes)


def test_markers_without_any_quote_are_dropped_and_out_of_range_citations_noted():
    grounded = ground("Lists grow [1] [7].", [Cite(9, "whatever words here")], [LISTS])
    assert grounded.text == "Lists grow."
    assert any("there is no source 9" in n for n in grounded.notes)
    assert any("[1] dropped: no verified quote" in n for n in grounded.notes)


def test_a_source_verified_upstream_may_be_cited_without_a_new_quote():
    upstream = LISTS.model_copy(update={"verified": True, "quote": "lists grow with append"})
    assert ground("Lists grow [1].", [], [upstream]).text == "Lists grow [1]."


def test_a_quoted_but_unmarked_source_is_cited_at_the_end():
    grounded = ground("Lists grow with append.", [Cite(1, "lists grow with append")], [LISTS, TUPLES])
    assert grounded.text == "Lists grow with append. [1]"


CORO = Source(
    ref="/docs/coro.md",
    title="Coroutines",
    snippet="Coroutines may be suspended. It is a SyntaxError to use a yield from expression inside a coroutine.",
)
CORO_GOAL = "Which kind of expression is a SyntaxError inside a coroutine?"


def second_look(answer: str, quote: str) -> Grounded:
    return ground(answer, [Cite(1, quote)], [CORO, LISTS])


def test_a_quote_confirms_an_answer_when_it_states_a_word_the_answer_adds_to_the_question():
    stated = second_look("A yield from expression [1].", "It is a SyntaxError to use a yield from expression")
    assert confirmed_by_quote(stated, CORO_GOAL) is stated
    # The quote is in the source, but says nothing of what the answer adds ("await").
    unrelated = second_look("An await expression [1].", "Coroutines may be suspended")
    assert unrelated.sources[0].verified and confirmed_by_quote(unrelated, CORO_GOAL) is None
    assert confirmed_by_quote(second_look("An await expression.", "not in the source at all"), CORO_GOAL) is None


def test_an_answer_that_cites_nothing_takes_the_citation_of_the_quote_that_states_it_on_its_first_sentence():
    grounded = second_look("A yield from expression. It is rejected when compiled.", "to use a yield from expression")
    assert grounded.text.endswith("compiled. [1]")
    confirmed = confirmed_by_quote(grounded, CORO_GOAL)
    assert confirmed is not None and confirmed.text == "A yield from expression. [1] It is rejected when compiled."


def test_an_answer_that_only_restates_the_question_gives_way_to_the_quote_that_answers_it():
    quote = "It is a SyntaxError to use a yield from expression inside a coroutine."
    confirmed = confirmed_by_quote(second_look("A SyntaxError [1].", quote), CORO_GOAL)
    assert confirmed is not None and confirmed.text == f"{quote} [1]"
    # A quote that holds too little of the question does not answer it, nor one that adds nothing.
    assert confirmed_by_quote(second_look("A SyntaxError [1].", "Coroutines may be suspended."), CORO_GOAL) is None
    assert confirmed_by_quote(second_look("A SyntaxError [1].", "a SyntaxError to use"), CORO_GOAL) is None


def test_an_answer_its_quote_does_not_state_is_confirmed_where_a_source_states_it() -> None:
    # Held to the sentences shown, the model copied one about lists before answering.
    grounded = second_look("A yield from expression [2].", "A list is a mutable sequence")
    assert confirmed_by_quote(grounded, CORO_GOAL) is None
    confirmed = confirmed_by_evidence(grounded, CORO_GOAL)
    assert confirmed is not None and re.fullmatch(r"A yield from expression ?\[1\]\.?", confirmed.text)
    assert [s.verified for s in confirmed.sources] == [True, None]
    # Nothing states an answer that only restates the question, however a source repeats it.
    assert confirmed_by_evidence(second_look("A SyntaxError [1].", "It is a SyntaxError"), CORO_GOAL) is None


def test_an_answer_is_cited_by_the_passage_that_states_its_first_sentence_if_one_does() -> None:
    answer = Grounded("Tuples can be dictionary keys. Lists cannot.", [LISTS], [])
    keys = "A tuple is an immutable sequence; tuples can be dictionary keys."
    longer = TUPLES.model_copy(update={"snippet": keys})
    confirmed = confirmed_in(answer, "What can tuples be?", [LISTS, longer])
    assert confirmed is not None and confirmed.text == "Tuples can be dictionary keys [2]. Lists cannot."
    assert confirmed.sources[0] == LISTS and confirmed.sources[1].verified and confirmed.sources[1].quote == keys
    # A passage of a source the answer lists already takes its place there.
    listed = confirmed_in(Grounded(answer.text, [TUPLES], []), "What can tuples be?", [longer])
    assert listed is not None and listed.text.startswith("Tuples can be dictionary keys [1].")
    assert listed.sources == [longer.model_copy(update={"verified": True, "quote": keys})]
    # No passage states it: None, as for an answer that only restates the question.
    assert confirmed_in(Grounded("Tuples are fast.", [], []), "What can tuples be?", [LISTS, TUPLES]) is None
    assert confirmed_in(Grounded("Tuples can be.", [], []), "What can tuples be?", [longer]) is None


def test_a_quote_from_another_source_moves_the_citation_there():
    grounded = ground("Tuples can be keys [1].", [Cite(1, "tuples can be keys")], [LISTS, TUPLES])
    assert grounded.text == "Tuples can be keys [2]."
    assert [s.verified for s in grounded.sources] == [None, True]
    assert "citation [1] moved to [2]: the quote is from source 2" in grounded.notes


def test_a_lightly_paraphrased_quote_is_verified_loosely_and_noted():
    table = Source(
        ref="/docs/limits.md", title="Limits", snippet="| Limit | Value | | Maximum message payload | 18 KiB |"
    )
    grounded = ground(
        "The payload limit is 18 KiB [1].", [Cite(1, "Limit: maximum message payload, value 18 KiB")], [table]
    )
    assert grounded.text == "The payload limit is 18 KiB [1]."
    assert grounded.sources[0].verified is True
    assert any("verified loosely" in n for n in grounded.notes)
    unrelated = ground("It is 18 KiB [1].", [Cite(1, "the maximum upload is 40 MiB per file")], [table])
    assert unrelated.text == "It is 18 KiB."


TEAMS = Source(
    ref="/docs/teams.md",
    title="Team directory",
    snippet=(
        "The team lead sets priorities; the on-call lead runs the rotation. "
        "Team: Sandpiper; Team lead: Tomasz Okonjo; On-call lead: Dorotea Quayle; Headcount: 6. "
        "Team: Gannet; Team lead: Solveig Ashdown; On-call lead: Dorotea Brand; Headcount: 6."
    ),
)


def test_the_evidence_must_hold_every_number_and_names_what_was_asked_about():
    task = "How many people work in Team Gannet?"
    stated = evidence("Team Gannet has 6 people.", task, [TEAMS])
    assert stated is not None
    assert (stated.source, stated.sentence) == (
        1,
        "Team: Gannet; Team lead: Solveig Ashdown; On-call lead: Dorotea Brand; Headcount: 6.",
    )
    assert evidence("Team Gannet has 7 people.", task, [TEAMS]) is None  # no sentence says 7
    assert evidence("Gannet", task, [TEAMS]) is None  # the answer adds nothing to the task


def test_a_sentence_about_the_task_that_holds_the_answers_numbers_and_names_states_it():
    task = "Since which Python version is hash randomization enabled by default?"
    changed = "Changed in version 3.3: Hash randomization is enabled by default."
    source = Source(ref="python-docs#customization", title="Python reference: customization", snippet=changed)
    # "introduced" is the answer's own word, but the sentence holds its number and the task's words.
    stated = evidence("Python 3.3 introduced hash randomization by default.", task, [source])
    assert stated is not None and stated.sentence == changed
    assert evidence("Python 3.4 introduced hash randomization by default.", task, [source]) is None
    other = Source(
        ref="python-docs#sorting",
        title="Python reference: sorting",
        snippet="Changed in version 3.3: The sort is stable.",
    )
    assert evidence("Python 3.3 introduced hash randomization by default.", task, [other]) is None
    # A task with no words of its own ("How?") has nothing for a sentence to be about.
    assert evidence("It was introduced in 3.3.", "How?", [source]) is None
    # A name is such a value too: "access" and "use" are the answer's words, the name is the docstring's.
    lru = Source(
        ref="/usr/lib/python3.11/functools.py#lru_cache",
        title="functools.lru_cache",
        snippet="Arguments must be hashable. View the cache statistics named tuple (hits, misses) with f.cache_info().",
    )
    task = "Which method of a functools.lru_cache-decorated function returns the cache statistics named tuple?"
    stated = evidence("You can access them using the `cache_info()` method of the function.", task, [lru])
    assert stated is not None and stated.sentence.endswith("with f.cache_info().")
    assert evidence("You can access them using the `cache_stats()` method of the function.", task, [lru]) is None
    # A count written as a word is a number too: "once" answers "how many times", in the docs' words.
    comparisons = Source(
        ref="python-docs#comparisons",
        title="Python reference: comparisons",
        snippet='Comparisons can be chained, e.g., "x < y <= z" is equivalent to "x < y and y <= z", '
        'except that "y" is evaluated only once.',
    )
    task = "In a chained comparison such as x < y <= z, how many times is y evaluated?"
    stated = evidence("In such a chained comparison, the expression y is evaluated only once.", task, [comparisons])
    assert stated is not None and stated.sentence.endswith("evaluated only once.")
    assert evidence("In such a chained comparison, the expression y is evaluated twice.", task, [comparisons]) is None


def test_a_long_sentence_of_the_docs_is_read_whole_for_what_it_states():
    # 41 words: quotes offered to an executor are cut into pieces of 25, and the piece naming the
    # topic ("chained", "comparison") is not the piece holding the value ("only once").
    sentence = (
        'Comparisons can be chained arbitrarily, e.g., "x < y <= z" is equivalent to "x < y and y <= z", except '
        'that "y" is evaluated only once (but in both cases "z" is not evaluated at all when "x < y" is found to be false).'
    )
    comparisons = Source(ref="python-docs#comparisons", title="Python reference: comparisons", snippet=sentence)
    task = "In a chained comparison such as x < y <= z, how many times is y evaluated?"

    stated = evidence("In such a chained comparison, the expression y is evaluated only once.", task, [comparisons])

    assert stated is not None and stated.sentence == sentence
    assert sentence not in quotable([comparisons])  # an executor still quotes a piece of it


def test_an_aggregate_that_restates_a_cited_sentence_gets_its_citation_back():
    results = ["Lists grow with append [1]. Tuples are immutable [2].", "Nothing cited here."]
    answer = "Tuples are immutable, as stated. Lists grow with append!\nSomething new entirely."
    text, carried = carry_citations(answer, results)
    assert text == "Tuples are immutable, as stated [2]. Lists grow with append [1]!\nSomething new entirely."
    assert carried == 2


def test_sentences_that_already_cite_or_restate_nothing_are_left_alone():
    assert carry_citations("Lists grow [3].", ["Lists grow with append [1]."]) == ("Lists grow [3].", 0)
    assert carry_citations("Unrelated words here.", ["Lists grow with append [1]."]) == ("Unrelated words here.", 0)
    assert carry_citations("Lists grow with append.", []) == ("Lists grow with append.", 0)


def test_quotable_sentences_are_the_snippets_sentences_once_each_and_long_ones_in_pieces():
    long = " ".join(f"w{i}" for i in range(60)) + "."
    sources = [
        Source(ref="a", title="A", snippet="…of one. Team: Cormorant; Lead: Palk.\n\n\nOk then…"),
        Source(ref="c", title="C", snippet=""),
        Source(ref="b", title="B", snippet=f"Team: Cormorant; Lead: Palk. {long}"),
    ]

    quotes = quotable(sources)

    assert quotes[0] == "Team: Cormorant; Lead: Palk."
    assert quotes.count("Team: Cormorant; Lead: Palk.") == 1
    assert "Ok then" not in quotes and "of one." not in quotes  # too short to verify anything
    assert [len(q.split()) for q in quotes[1:]] == [25, 25, 10]
    assert all(quote_occurs(q, sources[2].snippet) for q in quotes)


def test_an_uncited_sentence_that_a_source_states_is_cited_and_the_source_verified():
    answer = "Team Gannet has 6 people. Its lead is Solveig Ashdown [1]. It is a fine team."
    text, sources, cited = cite_statements(answer, "How many people work in Team Gannet?", [LISTS, TEAMS])
    assert text == "Team Gannet has 6 people [2]. Its lead is Solveig Ashdown [1]. It is a fine team."
    assert cited == 1
    assert sources[1].verified is True and sources[1].quote.startswith("Team: Gannet;")
    assert sources[0].verified is None  # a marker already there is left to the citation checks


def test_a_sentence_no_source_states_stays_uncited():
    answer = "Team Gannet has 9 people."
    assert cite_statements(answer, "How many people work in Team Gannet?", [TEAMS]) == (answer, [TEAMS], 0)


def test_a_stated_clause_is_cited_when_the_model_padded_its_sentence():
    answer = "Team Gannet has 6 people, so that it can cover every shift promptly and efficiently."
    text, sources, cited = cite_statements(answer, "How many people work in Team Gannet?", [LISTS, TEAMS])
    assert text == "Team Gannet has 6 people [2], so that it can cover every shift promptly and efficiently."
    assert cited == 1 and sources[1].verified is True


@pytest.mark.parametrize(
    ("source", "task", "answer", "cited_text"),
    [
        pytest.param(
            Source(
                ref="/docs/shelve.md",
                title="Shelve",
                snippet="A shelf maps keys to values. The keys are ordinary strings.",
            ),
            "What are the keys of a shelf?",
            "The keys of a shelf are ordinary strings, as the manual for mappings explains.",
            "The keys of a shelf are ordinary strings [1], as the manual for mappings explains.",
            id="a two-word clause, when one sentence holds both words",
        ),
        pytest.param(
            Source(
                ref="/docs/policy_acp7.md", title="ACP-7", snippet="Session tokens are valid for 16 hours from login."
            ),
            "How long were session tokens valid?",
            "Session tokens were valid for 16 hours from login according to policy_acp7.md.",
            "Session tokens were valid for 16 hours from login according to policy_acp7.md [1].",
            id="a sentence naming the source's document",
        ),
        pytest.param(
            Source(
                ref="/docs/acp9.md",
                title="acp9.md - Access Policy ACP-9 (CURRENT) / Sessions",
                snippet="Session tokens are valid for 9 hours from login.",
            ),
            "How long are session tokens valid?",
            "Session tokens are valid for 9 hours from login under the current policy.",
            "Session tokens are valid for 9 hours from login under the current policy [1].",
            id="a sentence that the source's document title completes",
        ),
        pytest.param(
            Source(
                ref="/docs/raise.md",
                title="raise",
                snippet='New in version 3.3: The "__suppress_context__" attribute to suppress automatic display of the'
                " exception context.",
            ),
            "Which attribute suppresses the automatic display of the exception context?",
            "The attribute that suppresses the display of the exception context is `__suppress_context__`.",
            "The attribute that suppresses the display of the exception context is `__suppress_context__` [1].",
            id="a name made of the question's words",
        ),
        pytest.param(
            Source(
                ref="/docs/json.md",
                title="Python module json",
                snippet="JSON is a lightweight data interchange format. It is derived from a version of the"
                " externally maintained simplejson library.",
            ),
            "Which externally maintained library is the standard json module derived from?",
            "The standard json module is derived from the externally maintained simplejson library, which was"
            " written in 2015.",
            "The standard json module is derived from the externally maintained simplejson library [1], which was"
            " written in 2015.",
            id="a clause that answers in one word, stated as a whole",
        ),
        pytest.param(
            Source(ref="/docs/optparse.md", title="optparse", snippet="By Greg Ward. Originally distributed as Optik."),
            "Under which name was the older option parser originally distributed?",
            "The older parser was called optparse, originally distributed as Optik.",
            "The older parser was called optparse, originally distributed as Optik [1].",
            id="a three-word clause that answers in one word",
        ),
    ],
)
def test_a_stated_sentence_or_clause_is_cited(source: Source, task: str, answer: str, cited_text: str) -> None:
    text, _, cited = cite_statements(answer, task, [source])
    assert text == cited_text
    assert cited == 1


def test_a_clause_with_too_little_of_its_own_is_not_cited():
    answer = "Gannet has a lead, who meets the others every week for planning."  # "lead" alone proves nothing
    assert cite_statements(answer, "Who works in Team Gannet?", [TEAMS]) == (answer, [TEAMS], 0)
    # A clause that answers in one word is cited only by a sentence that also holds its other words.
    simplejson = Source(ref="/docs/json.md", title="json", snippet="The simplejson package is hosted on PyPI.")
    answer = (
        "The standard json module is derived from the externally maintained simplejson library, first released in 2005."
    )
    task = "Which externally maintained library is the standard json module derived from?"
    assert cite_statements(answer, task, [simplejson]) == (answer, [simplejson], 0)


def test_coverage_is_the_share_of_the_questions_own_words_one_passage_holds():
    assert coverage("What is the headcount of Team Gannet?", TEAMS) == 1.0  # title, snippet: every word
    # Found only by going through another document first: the lead's start date is not in this one.
    assert coverage("In which year did the on-call lead of Team Gannet join?", TEAMS) == 4 / 6  # not year, join
    assert coverage("What does a list's append do?", LISTS) == 1.0  # the "s" of "list's" is no word
    assert coverage("How?", TEAMS) == 0.0
    # Weighed by rarity, a common word the passage lacks ("python") costs little, a name a lot.
    rare = {"python": 0.1, "gannet": 3.0}.get
    assert coverage("What is the headcount of Python's Team Gannet?", TEAMS) == 3 / 4
    assert coverage("What is the headcount of Python's Team Gannet?", TEAMS, lambda w: rare(w, 1.0)) == 5 / 5.1
    assert coverage("How big is Team Kestrel?", TEAMS, lambda w: {"kestrel": 3.0}.get(w, 1.0)) == 1 / 5
    # Words that say where to look are not asked about: a docstring does not call itself one.
    assert coverage("What does a list's append do, according to its docstring?", LISTS) == 1.0
    assert coverage("Per the documentation, what is the headcount of Team Gannet?", TEAMS) == 1.0
    # "Since" asks for a time as "when" does: the passage that answers it need not say "since".
    assert coverage("Since when does Team Gannet have an on-call lead?", TEAMS) == 1.0
    # Nor does the passage that says how long, how often or how many times repeat those words.
    assert coverage("How many times is the on-call lead of Team Gannet paged?", TEAMS) == 4 / 5  # not paged
    assert coverage("How long does Team Gannet keep its on-call lead?", TEAMS) == 4 / 5  # not keep


def test_words_that_only_say_a_fact_is_cited_do_not_stop_the_source_stating_it():
    grounded = cite_by_evidence("Team Gannet: 6 people, cited in [1].", "How many people work in Team Gannet?", [TEAMS])
    assert grounded.text == "Team Gannet: 6 people, cited in [1]."
    assert grounded.notes == []


def test_a_phrase_that_says_where_a_fact_is_from_does_not_stop_the_source_stating_it():
    exit_ = Source(
        ref="/docs/exit.md",
        title="Exit",
        snippet="If the method wishes to suppress the exception, it should return a true value.",
    )
    task = "What must the exit method return to suppress an exception?"
    for answer in (
        "The method must return True to suppress the exception, as per Python's documentation.",
        "According to the context manager docs, it must return True.",
    ):
        grounded = cite_by_evidence(answer, task, [exit_])
        assert grounded.text == answer.removesuffix(".") + " [1]."
        assert grounded.sources[0].verified is True


def test_the_file_an_answer_names_as_its_source_is_not_part_of_what_it_claims():
    # The file's name is said by each of its sentences; counted as claimed, it outvoted the words
    # no sentence states ("took", "role"), and the postmortem's date line verified the answer.
    postmortem = Source(
        ref="/docs/postmortem_INC-2025-012.md",
        title="postmortem_INC-2025-012.md - Postmortem INC-2025-012",
        snippet="Date: 21 February 2025. Incident commander: Ilse Merrick.",
    )
    task = "When was Ilse Merrick named on-call lead?"
    answer = "Ilse Merrick took the on-call lead role on 21 February 2025, as stated in postmortem_INC-2025-012.md [1]."
    grounded = cite_by_evidence(answer, task, [postmortem])
    assert grounded.text == answer.replace(" [1]", "")
    assert grounded.sources[0].verified is None


def test_citations_after_a_full_stop_belong_to_the_sentence_before_them():
    results = ["The loop wraps coroutines in futures. It schedules them in the event loop. [2]"]
    answer = "It schedules them in the event loop."
    assert carry_citations(answer, results) == ("It schedules them in the event loop [2].", 1)


def test_an_answer_without_quotes_keeps_the_citations_its_sources_state():
    grounded = cite_by_evidence(
        "Lists grow with append [1], and tuples can be keys [2].", "lists and tuples", [LISTS, TUPLES]
    )
    assert grounded.text == "Lists grow with append [1], and tuples can be keys [2]."
    assert [s.verified for s in grounded.sources] == [True, True]
    assert grounded.sources[1].quote == "A tuple is an immutable sequence; tuples can be keys."
    assert grounded.notes == []


def test_a_citation_of_a_source_that_does_not_state_the_clause_moves_to_one_that_does():
    grounded = cite_by_evidence("Tuples can be keys [1].", "What can tuples be?", [LISTS, TUPLES])
    assert grounded.text == "Tuples can be keys [2]."
    assert [s.verified for s in grounded.sources] == [None, True]
    assert grounded.notes == ["citation [1] dropped: the source does not state 'Tuples can be keys'"]


def test_a_citation_nothing_states_is_dropped_but_one_verified_upstream_stays():
    upstream = TUPLES.model_copy(update={"verified": True, "quote": "tuples can be keys"})
    grounded = cite_by_evidence("Lists sort in 3 ms [1]. Tuples are keys [2].", "speed", [LISTS, upstream])
    assert grounded.text == "Lists sort in 3 ms. Tuples are keys [2]."
    assert grounded.sources[0].verified is None
    assert len(grounded.notes) == 1 and grounded.notes[0].startswith("citation [1] dropped")


def test_an_uncited_sentence_of_a_quoteless_answer_is_cited_where_a_source_states_it():
    grounded = cite_by_evidence("Lists grow with append().", "How does a list grow?", [TUPLES, LISTS])
    assert grounded.text == "Lists grow with append() [2]."
    assert grounded.sources[1].verified is True


def test_words_that_point_at_a_source_are_not_part_of_what_a_clause_states():
    grounded = cite_by_evidence("Tuples can be keys, as stated in [2].", "What can tuples be?", [LISTS, TUPLES])
    assert grounded.text == "Tuples can be keys, as stated in [2]."
    assert grounded.sources[1].verified is True


def test_a_clause_that_only_points_keeps_the_citations_the_answer_verified_and_dropped_pointers_go():
    task = "What can tuples be?"
    grounded = cite_by_evidence("Tuples can be keys [1]. This is stated in [2].", task, [LISTS, TUPLES])
    assert grounded.text == "Tuples can be keys [2]. This is stated in [2]."
    grounded = cite_by_evidence(
        "Tuples can be keys, as stated in [1]. The sources [1] and [1] confirm this.", task, [LISTS]
    )
    assert grounded.text == "Tuples can be keys."
    assert grounded.sources[0].verified is None


def test_a_sentence_that_only_pointed_at_a_dropped_citation_goes_whole():
    grounded = cite_by_evidence(
        "Lists grow with append() [1]. This can be found in [2].", "How do lists grow?", [LISTS, TUPLES]
    )
    assert grounded.text == "Lists grow with append() [1]."


def test_an_answer_whose_every_sentence_lost_its_citation_is_kept_uncited_not_emptied():
    # "`not`" is a common word and the rest repeats the task: the sentence adds no counted word.
    task = "Which operator has the lowest precedence in the table?"
    grounded = cite_by_evidence(
        "The operator with the lowest precedence in the table is `not` [2].", task, [LISTS, TUPLES]
    )
    assert grounded.text == "The operator with the lowest precedence in the table is `not`."
    assert "no sentence of the answer kept a citation: kept without them" in grounded.notes
    assert [s.verified for s in grounded.sources] == [None, None]


def test_a_clause_that_only_points_is_checked_against_the_sentence_before_it():
    grounded = cite_by_evidence("Tuples can be keys. This is stated in [2].", "What can tuples be?", [LISTS, TUPLES])
    assert grounded.text == "Tuples can be keys [2]. This is stated in [2]."
    assert grounded.sources[1].verified is True


def test_forms_of_one_word_share_a_stem_and_numbers_stay_as_they_are():
    for forms in (
        ("schedule", "schedules", "scheduled", "scheduling"),
        ("wrap", "wraps", "wrapped", "wrapping"),
        ("future", "futures"),
        ("policy", "policies"),
        ("class", "classes"),
        ("use", "uses", "used"),
        ("hold", "holds", "held"),
        ("write", "writes", "wrote", "written"),
        ("special", "specially"),
        ("week", "weekly"),
    ):
        assert len({stem(form) for form in forms}) == 1, forms
    assert stem("only") == "only" and stem("early") != stem("ear")
    assert stem("30") == "30" and stem("2024") == "2024"
    assert stem("status") != stem("stat")  # -us is not a plural
    assert stem("need") == "need"  # -eed is not a past tense


@pytest.mark.parametrize(
    ("source", "task", "answer"),
    [
        pytest.param(
            Source(
                ref="asyncio/tasks.py#gather",
                title="asyncio.tasks.gather",
                snippet="Coroutines will be wrapped in a future and scheduled in the event loop.",
            ),
            "How does asyncio schedule coroutines?",
            "The event loop schedules coroutines by wrapping them in futures",
            id="other forms of the source's words",
        ),
        pytest.param(
            Source(
                ref="logging/__init__.py",
                title="Python module logging",
                snippet="Logging package for Python. Copyright (C) 2001-2019 Vinay Sajip. All Rights Reserved.",
            ),
            "Who holds the copyright on Python's logging package?",
            "The copyright on Python's logging package is held by Vinay Sajip",  # 'held' is 'hold' of the task
            id="an irregular past form of the task's verb",
        ),
    ],
)
def test_a_paraphrase_in_other_forms_of_the_words_is_cited(source: Source, task: str, answer: str) -> None:
    grounded = cite_by_evidence(f"{answer}.", task, [LISTS, source])
    assert grounded.text == f"{answer} [2]."
    assert grounded.sources[1].verified is True


def test_a_sentence_that_only_denies_or_points_is_not_given_a_citation():
    found = Source(ref="/docs/history.md", title="History", snippet="It was founded in 2011, not in 2010.")
    answer = "The sources do not confirm it. This information is found in [1]."
    grounded = cite_by_evidence(answer, "When was the team formed?", [found])
    assert grounded.text == "The sources do not confirm it."
    assert grounded.sources[0].verified is None


def test_a_clause_is_cited_to_the_source_that_states_most_of_it():
    # The marked source states 5 of the clause's 7 added words (enough alone); the other all 7.
    task = "How does asyncio run a coroutine?"
    partly = Source(ref="/docs/loop.md", title="Loop", snippet="The event loop creates a new task and executes it.")
    fully = Source(
        ref="/docs/run.md",
        title="run",
        snippet="This function creates a new event loop, executes the coroutine and closes the loop at the end.",
    )
    clause = "asyncio.run creates a new event loop, executes the coroutine and closes the loop at the end [1]."

    grounded = cite_by_evidence(clause, task, [partly, fully])

    assert grounded.text == clause.replace("[1]", "[2]")
    assert [s.verified for s in grounded.sources] == [None, True]


COUNT_TASK = "How many buoys are in the sector whose buoys went silent during the Grey Tuesday incident?"
GREY_TUESDAY = Source(
    ref="/docs/postmortem.md",
    title="postmortem.md - Postmortem: Grey Tuesday",
    snippet="The buoys kept their readings for 90 minutes, so 41,200 readings were lost for good.",
)


def test_a_number_that_counts_something_else_does_not_state_a_count():
    # Every word and number of the answer is in the sentence (the title names the incident), but
    # the sentence counts readings, not buoys.
    answer = "41,200 buoys are in the sector whose buoys went silent during the Grey Tuesday incident [1]."
    assert evidence(answer, COUNT_TASK, [GREY_TUESDAY]) is None
    grounded = cite_by_evidence(answer, COUNT_TASK, [GREY_TUESDAY])
    assert "[1]" not in grounded.text and grounded.sources[0].verified is None


@pytest.mark.parametrize(
    "sentence",
    [
        "The Heron sector has 58 moored buoys.",  # the counted word near the number
        "Sector: Heron; Buoys: 58; Station: Corran Point.",  # a table row, the column's name before it
        "Sector Buoys Waters Heron 58 the Corran banks",  # a plain-text table: no word of its own after it
    ],
)
def test_a_count_is_stated_near_what_it_counts_or_in_a_table(sentence: str):
    source = Source(ref="/docs/sectors.md", title="sectors.md - Sectors", snippet=sentence)
    assert evidence("58 buoys are in the Heron sector [1].", COUNT_TASK, [source]) is not None


def test_a_count_of_a_thing_named_in_several_words_is_stated_by_its_last_one():
    task = "How many ensemble members does the fallback model have?"
    source = Source(ref="/docs/model.md", title="model.md - Model", snippet="The previous model, TW-8, had 19 members.")
    assert evidence("The fallback model TW-8 has 19 ensemble members [1].", task, [source]) is not None


def test_a_short_clause_needs_four_of_its_words_stated():
    source = Source(ref="/docs/a.md", title="A", snippet="The gateway drains the buffer of each buoy group.")
    task = "What does the archive do?"
    # Five added words; the sentence holds three of them (drain, buffer, group): 0.6, not enough.
    grounded = cite_by_evidence("The archive drains a shared buffer per sensor group [1].", task, [source])
    assert grounded.sources[0].verified is None
    assert "[1]" not in grounded.text


def test_a_carried_citation_does_not_cover_a_sentence_that_adds_to_what_it_cites():
    results = ["Lists grow with append [1]."]
    assert carry_citations("Lists grow with append!", results) == ("Lists grow with append [1]!", 1)
    joined = "Lists grow with append, sort in 3 ms and never shrink."
    assert carry_citations(joined, results) == (joined, 0)


def test_an_initial_or_an_abbreviation_does_not_end_a_sentence() -> None:
    telnetlib = Source(
        ref="/lib/telnetlib.py",
        title="Python module telnetlib",
        snippet="TELNET client class. Based on RFC 854: TELNET Protocol Specification, by J. Postel and J. Reynolds.",
    )
    answer = "telnetlib is based on RFC 854: TELNET Protocol Specification, by J. Postel and J. Reynolds."
    grounded = cite_by_evidence(answer, "Which RFC is telnetlib based on?", [telnetlib])
    assert grounded.text == answer[:-1] + " [1]."  # not "by J [1]. Postel and J [1]. Reynolds [1]."


def test_a_cited_answer_loses_the_sentences_saying_the_sources_do_not_confirm_it() -> None:
    verified = [LISTS.model_copy(update={"verified": True}), TUPLES]
    answer = "Lists grow with append() [1]. The sources do not confirm this answer. Tuples can be keys [1]."
    assert drop_disclaimers(answer, verified) == ("Lists grow with append() [1]. Tuples can be keys [1].", 1)
    hedged = "Lists grow [1].\nHowever, the provided sources do not state it directly, but it is widely known."
    assert drop_disclaimers(hedged, verified) == ("Lists grow [1].", 1)
    # A disclaimer's sequel goes with it; the same words after a fact stay (there "it" is the fact).
    sequel = "Lists grow [1]. The sources do not confirm that they shrink. They also do not confirm that they sort."
    assert drop_disclaimers(sequel, verified) == ("Lists grow [1].", 2)
    alone = "Lists grow [1]. It does not say how fast."
    assert drop_disclaimers(alone, verified) == (alone, 0)


def test_a_disclaimer_stays_where_no_verified_source_is_cited() -> None:
    from_memory = "It is __matmul__. The sources do not confirm this answer."
    assert drop_disclaimers(from_memory, [LISTS.model_copy(update={"verified": True})]) == (from_memory, 0)
    unverified = "Tuples are keys [2]. The sources do not confirm this."
    assert drop_disclaimers(unverified, [LISTS.model_copy(update={"verified": True}), TUPLES]) == (unverified, 0)
    # A sentence that cites, or only mentions sources further on, is not a disclaimer.
    kept = "Lists grow [1]. The sources do not agree on tuples [1]. Each of the sources does say so."
    assert drop_disclaimers(kept, [LISTS.model_copy(update={"verified": True})]) == (kept, 0)


def test_a_marker_standing_where_the_answer_belongs_is_found() -> None:
    text = "The RFC by J. Postel and J. Reynolds that telnetlib is based on is [2]. It dates from 1983."
    assert marker_as_answer(text) == "The RFC by J. Postel and J. Reynolds that telnetlib is based on is [2]."
    assert marker_as_answer("Its channel is called [1][3]") == "Its channel is called [1][3]"


def test_markers_that_cite_an_answer_or_name_a_source_are_not_taken_for_the_answer() -> None:
    assert marker_as_answer("The timeout is 12 seconds [2].") is None
    assert marker_as_answer("The timeout is 12 seconds, as stated in [2].") is None
    assert marker_as_answer("It is 12 seconds. The source of this information is [2].") is None
    assert marker_as_answer("The first item is `xs[1]`.") is None


def test_a_marker_given_as_the_answer_is_replaced_by_the_result_that_cites_its_source() -> None:
    results = ["Based on RFC 959, by J. Postel [1].", "Based on RFC 854, by J. Postel [2]. It is old [2]."]
    answer = "The RFC telnetlib is based on is [2]. Both are by J. Postel [1][2]."
    assert state_markers(answer, results) == ("Based on RFC 854, by J. Postel [2]. Both are by J. Postel [1][2].", 1)
    # Nothing cites the marker's source: the sentence is left as it is.
    assert state_markers("The RFC is [3].", results) == ("The RFC is [3].", 0)


@pytest.mark.parametrize(
    ("answer", "kept", "dropped"),
    [
        ("It is `_` [1]. It is stored in the", "It is `_` [1].", "It is stored in the"),
        (
            "Names are not imported. They are used as items such as",
            "Names are not imported.",
            "They are used as items such as",
        ),
        (
            "Lead: Odile [2]. It is shown on the Gullet dashboard (",
            "Lead: Odile [2].",
            "It is shown on the Gullet dashboard (",
        ),
        ("It is fast [1]. It is the [2]", "It is fast [1].", "It is the [2]"),
    ],
)
def test_a_last_sentence_that_stops_mid_way_is_dropped(answer: str, kept: str, dropped: str) -> None:
    assert drop_unfinished(answer) == (kept, dropped)


@pytest.mark.parametrize(
    "answer",
    [
        "47 seconds",  # a short answer has no full stop and is whole
        "It is shown on the",  # nothing would be left
        "The timeout is 47 seconds [3].",
        "It is fast. The channel is #tide-ops",  # ends on a word that ends a sentence
        "It is fast. It reads the file. [1], [2]",  # citations after the full stop, separated by a comma
        "It is fast. It reads the file [1], [2]",
    ],
)
def test_an_answer_that_ends_whole_is_kept(answer: str) -> None:
    assert drop_unfinished(answer) == (answer, None)

"""An LLM judge with SimpleQA's three-way grading: CORRECT, INCORRECT or NOT_ATTEMPTED.

The prompt adapts the grader template published with OpenAI's SimpleQA (simple-evals,
MIT licence): the same three grades, the same rules (semantic match with the gold target,
hedging allowed when the answer is committed, a contradiction is INCORRECT, declining is
NOT_ATTEMPTED), fewer worked examples, and several accepted targets instead of one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from sentient.agents.models.factory import ModelHandle
from sentient.eval.chat import ChatReply, chat
from sentient.eval.grading import answer_body


class Grade(StrEnum):
    CORRECT = "CORRECT"  # the answer states an accepted answer and contradicts none
    INCORRECT = "INCORRECT"  # the answer states something that contradicts the accepted answers
    NOT_ATTEMPTED = "NOT_ATTEMPTED"  # the answer declines or does not commit to an answer


JUDGE_SYSTEM = "You grade answers to questions against gold targets. Reply with one letter."

JUDGE_TEMPLATE = """\
Your job is to look at a question, its gold target(s), and a predicted answer, and grade the
predicted answer as CORRECT, INCORRECT or NOT_ATTEMPTED.

- CORRECT: the predicted answer contains the meaning of a gold target (any one of them) and
  contradicts none. Capitalisation, punctuation, word order and extra detail do not matter;
  hedging ("I think", "probably") is fine as long as a gold target is stated. A number counts
  when it matches the gold target to its last significant figure.
- INCORRECT: the predicted answer states something that contradicts the gold targets, even
  when hedged, or lists several candidates of which some are wrong.
- NOT_ATTEMPTED: the predicted answer does not state a gold target and does not contradict one:
  it says it does not know, that the sources do not say, or talks around the question.

Examples (question / gold target / predicted answer -> grade):
- What are the names of Barack Obama's children? / Malia and Sasha / "Malia and Sasha" -> A
- (same) / Malia and Sasha / "I think it's Malia and Sasha, or maybe Malia and Jackie" -> B
- (same) / Malia and Sasha / "I don't know; the sources do not say." -> C
- How many citations does the paper have? / 120k / "About 120,000 citations" -> A

Question: {question}
Gold target(s): {targets}
Predicted answer: {answer}

Grade the predicted answer as one of: A: CORRECT, B: INCORRECT, C: NOT_ATTEMPTED.
Just return the letter "A", "B" or "C", with no text around it."""

_LETTERS = {"A": Grade.CORRECT, "B": Grade.INCORRECT, "C": Grade.NOT_ATTEMPTED}
_LEADING_LETTER = re.compile(r"^\W*([ABC])\s*(?:$|[:.),-])")
_LABEL = re.compile(r"\b(NOT[ _]ATTEMPTED|INCORRECT|CORRECT)\b")


def parse_grade(text: str) -> Grade | None:
    """The grade a judge's reply gives, or None when it gives none.

    The letter the prompt asks for wins when the reply starts with it; otherwise the first
    label named (a chatty judge writes "The answer is INCORRECT").
    """
    upper = text.strip().upper()
    if letter := _LEADING_LETTER.match(upper):
        return _LETTERS[letter.group(1)]
    if label := _LABEL.search(upper):
        return Grade(label.group(1).replace(" ", "_"))
    return None


async def judge(
    handle: ModelHandle, question: str, parts: Sequence[Sequence[str]], answer: str, *, timeout_s: float
) -> tuple[Grade | None, ChatReply]:
    """Grade ``answer`` (its body, References cut) with the judge model; None if the reply has no grade.

    ``parts``: each part's accepted answers (:attr:`EvalQuestion.parts`); a question that asks
    several things is correct only when every part is stated."""
    body = answer_body(answer) or "(empty answer)"
    prompt = JUDGE_TEMPLATE.format(question=question, targets=_targets(parts), answer=body)
    reply = await chat(handle, JUDGE_SYSTEM, prompt, role="judge", goal=question, timeout_s=timeout_s)
    return parse_grade(reply.text), reply


def _targets(parts: Sequence[Sequence[str]]) -> str:
    """The gold targets as the judge reads them: "a | b" for one part (any one counts), every
    part spelled out for several ("all of these: (a or b) AND (c)")."""
    if len(parts) == 1:
        return " | ".join(parts[0])
    return "all of these: " + " AND ".join(f"({' or '.join(part)})" for part in parts)


CITATION_SYSTEM = "You check whether a passage supports an answer. Reply with one letter."

CITATION_TEMPLATE = """\
A question was answered, and the answer cites the passage below as its evidence. Decide whether
the passage supports the answer to this question.

- A: SUPPORTED: the passage states what the answer says in reply to the question (in any words).
- B: NOT SUPPORTED: the passage is about something else, only shares words with the question,
  says something different, or states only background that does not give the answer.

Question: {question}
Answer: {answer}
Passage ({title}): {passage}

Just return the letter "A" or "B", with no text around it."""

_AB_LETTER = re.compile(r"^\W*([AB])\s*(?:$|[:.),-])")
_SUPPORT_LABEL = re.compile(r"\b(NOT SUPPORTED|SUPPORTED)\b")


def _a_or_b(text: str, labels: re.Pattern[str], a_label: str) -> bool | None:
    """Whether a two-way judge's reply chooses A: the letter it starts with, else the first of
    ``labels`` it names (``a_label`` is A's); None if it gives neither."""
    upper = text.strip().upper()
    if letter := _AB_LETTER.match(upper):
        return letter.group(1) == "A"
    if label := labels.search(upper):
        return label.group(1) == a_label
    return None


def parse_support(text: str) -> bool | None:
    """Whether a citation judge's reply says SUPPORTED; None if it says neither."""
    return _a_or_b(text, _SUPPORT_LABEL, "SUPPORTED")


async def judge_citation(
    handle: ModelHandle, question: str, answer: str, title: str, passage: str, *, timeout_s: float
) -> bool | None:
    """Whether the judge finds that ``passage`` supports ``answer`` (its body) to ``question``.

    This is the eval's own reading, with its own prompt, never the pipeline's verifier: the
    pipeline's checker must not grade itself."""
    prompt = CITATION_TEMPLATE.format(
        question=question, answer=answer_body(answer) or "(empty answer)", title=title or "untitled", passage=passage
    )
    reply = await chat(handle, CITATION_SYSTEM, prompt, role="citation-judge", goal=question, timeout_s=timeout_s)
    return parse_support(reply.text)


CURRENT_SYSTEM = "You check how a report presents a value. Reply with one letter."

CURRENT_TEMPLATE = """\
A report written for the goal below mentions the value "{value}". Decide how it presents that value.

- A: CURRENT: the report gives it as what holds now.
- B: PAST: the report gives it only as an earlier value that has since changed, or as history.

Goal: {goal}
Sentences of the report that mention "{value}":
{sentences}

Just return the letter "A" or "B", with no text around it."""

_CURRENT_LABEL = re.compile(r"\b(CURRENT|PAST)\b")


def parse_current(text: str) -> bool | None:
    """Whether a judge's reply says CURRENT; None if it says neither."""
    return _a_or_b(text, _CURRENT_LABEL, "CURRENT")


async def judge_current(
    handle: ModelHandle, goal: str, value: str, sentences: Sequence[str], *, timeout_s: float
) -> bool | None:
    """Whether the judge reads ``sentences`` of a report as giving ``value`` (a superseded or
    look-alike value of a report dataset) as what holds now, rather than as history."""
    prompt = CURRENT_TEMPLATE.format(goal=goal, value=value, sentences="\n".join(f"- {s}" for s in sentences))
    reply = await chat(handle, CURRENT_SYSTEM, prompt, role="current-judge", goal=goal, timeout_s=timeout_s)
    return parse_current(reply.text)

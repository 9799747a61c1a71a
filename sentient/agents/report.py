"""Reports: an outline of sections, each researched in its own subtree, assembled in order.

A goal that asks for a report (the atomizer says so, or the run's ``report_length`` is set) is
not answered but written. Its tree::

    root                      PLAN   the goal; its plan is the outline, drafted from a quick search
      part                    WRITE, PLAN   the overview: one thing to find, the whole goal
        search, write                       the sentences of its search closest to the goal, quoted
      part                    WRITE, PLAN   a section: its goal is its title and what it must find
        search                SEARCH, EXECUTE   one per thing to find: its passages, the
                                                question answered from them alone (one call),
                                                each passage an answer names read again for
                                                its part of the question alone (one call
                                                each), and the passages' sentences closest to
                                                the question, quoted
        write                 WRITE, EXECUTE    the section: those answers in order (no call)
      part ({item} = ...)     WRITE, PLAN   a fan-out: its items are found when it is planned
        part                  WRITE, PLAN   one section per item, asked what the fan-out asks
          search, write                     (its searches read only passages that name it)

A goal that asks the same facts of every item of a kind is one fan-out; any other goal is
sections. The small model answers one question from a few passages far better than it writes a
section from many, and it names the passages that state each answer in its output, so every
sentence of a section is cited. It still leaves out most of the facts it is shown, so each answer
is followed by the sentences of its passages closest to its question, quoted (by sentence
embeddings, no model call).

Every node's role follows from its place (a planned WRITE task under a report is a part), so a
resumed run reads the tree back as it was. A part's goal is its own small format, which the
reviewer of a plan reads and edits: the title on the first line, ``{item} = <which items>`` for
a fan-out, and one ``- <what to find>`` line per search. Parts are assembled without a model
call; the root's aggregator writes only the title and a short summary, and the sections follow
as written (a model asked for lead-in sentences repeated each section's first answer, or wrote
facts no section holds).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from sentient.agents.config import Role
from sentient.agents.json_repair import parsed_so_far
from sentient.agents.passages import RETRIEVED_SOURCES
from sentient.agents.quotes import apart, below, quoted_lines, to_quote, unrepeated
from sentient.agents.schemas import (
    CitedAnswers,
    Items,
    Outline,
    ReportFrame,
    RootAtomizerOutput,
    cited_schema,
    items_schema,
    outline_schema,
)
from sentient.context.builder import AgentContext, Section
from sentient.context.citations import SourceList
from sentient.context.grounding import agrees, cite, confirmed, stating, strip_markers, verified_numbers
from sentient.context.wording import holds, normalize
from sentient.events import PlanProposed
from sentient.exceptions import AgentError, EmbeddingModelError
from sentient.graph.node import NodeType, Source, TaskNode, TaskType
from sentient.graph.plan import PlanOutput, SubTask
from sentient.graph.status import TaskStatus
from sentient.report.build import goal_title
from sentient.tools.docs_search import title_headings
from sentient.tools.embeddings import closest

if TYPE_CHECKING:
    from sentient.agents.processor import AgentProcessor

_S = TaskStatus
ITEM = "{item}"  # a part whose goal has a line "{item} = <which items>" is a fan-out
PARTS = "; "  # between the parts of one question: the facts a fan-out asks of each item
_FIND = "- "
# After an answer no passage could be shown to state: it is the model's own, and says so.
UNCONFIRMED = "*(not confirmed by the sources)*"
# How many times deeper than its passages an item's search looks, as it keeps only those naming the item.
ITEM_POOL = 3
# What the outliner reads of each passage of its quick search: its title and how it begins
# (which documents there are matters to it, not every fact; and the small model reads a long
# prompt slowly).
BRIEF_CHARS = 200


@dataclass(frozen=True)
class Said:
    """One answer of a section's search: the part of the question it answers, its text, and the
    passages shown to hold it (by its text or its key words)."""

    question: str
    text: str
    cited: list[int]


@dataclass(frozen=True)
class Part:
    """A part of a report as its goal writes it: a title, what it must find, and for a fan-out
    which items it covers (what it must find is then asked about each)."""

    title: str
    find: list[str] = field(default_factory=list)
    items: str = ""

    @classmethod
    def parse(cls, goal: str) -> Part:
        lines = [line.strip() for line in goal.strip().splitlines() if line.strip()]
        title, items, find = (lines[0] if lines else ""), "", []
        for line in lines[1:]:
            if line.startswith(ITEM) and "=" in line:
                items = line.partition("=")[2].strip()
            elif line.startswith(_FIND):
                find.append(line.removeprefix(_FIND).strip())
            else:
                title = f"{title} {line}"  # a long title written over two lines
        return cls(title, [f for f in find if f], items)

    @property
    def goal(self) -> str:
        lines = [self.title]
        if self.items:
            lines.append(f"{ITEM} = {self.items}")
        lines += [f"{_FIND}{f}" for f in self.find]
        return "\n".join(lines)

    def for_item(self, item: str) -> Part:
        """The section of one item of this fan-out: what it must find, asked about that item (its
        searches look for it, and its writer knows which item is meant)."""
        return Part(item, [f"{item}: {f}" for f in self.find])


class ReportPhases:
    """The phases of a report's nodes, for an :class:`AgentProcessor` (whose agent calls, plan
    reviews and status moves they use)."""

    def __init__(self, processor: AgentProcessor) -> None:
        self._p = processor
        self._graph = processor.graph
        self._roots: set[str] = set()  # roots this run found to ask for a report

    # -- which nodes are a report's ----------------------------------------------------------

    def is_report(self, node: TaskNode) -> bool:
        """Whether ``node`` is a report's root: found so in this run, or (resumed) planned as one."""
        if node.parent_id is not None:
            return False
        if node.task_id in self._roots:
            return True
        children = self._graph.children(node.task_id)
        return bool(children) and all(_planned_write(c) for c in children)

    def is_part(self, node: TaskNode) -> bool:
        """Whether ``node`` is a section or a fan-out of a report."""
        parent = self._graph.parent(node.task_id)
        return _planned_write(node) and parent is not None and (self.is_report(parent) or self.is_part(parent))

    def plans(self, node: TaskNode) -> bool:
        return self.is_report(node) or self.is_part(node)

    def executes(self, node: TaskNode) -> bool:
        """A search or the writing step of a section."""
        parent = self._graph.parent(node.task_id)
        return node.task_type in (TaskType.SEARCH, TaskType.WRITE) and parent is not None and self.is_part(parent)

    def assembles(self, node: TaskNode) -> bool:
        return self.is_report(node) or self.is_part(node)

    # -- deciding ------------------------------------------------------------------------

    def forced(self, root: TaskNode) -> bool:
        """Whether the run writes a report whatever the goal (its ``report_length`` is set)."""
        if self._p._settings.report_length is None:
            return False
        self._mark(root)
        return True

    async def root_type(self, root: TaskNode) -> NodeType:
        """Ask the atomizer whether the root goal asks for a report (then it is one, planned as an
        outline), else whether it is one step."""
        settings = self._p._settings
        if settings.max_depth == 0 or settings.skip_atomization:
            return await self._p._node_type_for(root, root.goal, root.task_type, [], layer=0)
        context = self._p._context.for_atomizing(root, root.goal, [])
        task = self._p._tasks.atomize_root_task(root.goal)
        try:
            verdict = await self._p._ask(
                root, Role.ATOMIZER, self._p._profile.atomizer, task, context, RootAtomizerOutput
            )
        except AgentError as exc:
            root.warnings.append(f"atomizer failed for the goal, executing it directly: {exc}")
            return NodeType.EXECUTE
        if verdict.is_report:
            self._mark(root)
            return NodeType.PLAN
        return NodeType.EXECUTE if verdict.is_atomic else NodeType.PLAN

    def _mark(self, root: TaskNode) -> None:
        self._roots.add(root.task_id)
        root.node_type = NodeType.PLAN

    # -- planning ------------------------------------------------------------------------

    async def plan(self, node: TaskNode) -> None:
        """READY -> PLANNING -> (review) -> ATOMIZATION -> PLAN_DONE: the root's outline, a
        fan-out's items, or a section's searches and writing step."""
        self._p.move(node, _S.PLANNING)
        if self.is_report(node):
            parts = await self._outline(node)
            await self._adopt(node, [SubTask(goal=p.goal, task_type=TaskType.WRITE) for p in parts], NodeType.PLAN)
            return
        part = Part.parse(node.goal)
        if part.items:
            items = await self._discover(node, part)
            if items:
                subtasks = [SubTask(goal=part.for_item(item).goal, task_type=TaskType.WRITE) for item in items]
                await self._adopt(node, subtasks, NodeType.PLAN)
                return
            part = Part(part.title, part.find or [part.items])
        await self._adopt(node, _section_plan(part), NodeType.EXECUTE)

    async def _outline(self, root: TaskNode) -> list[Part]:
        """The report's parts: the outliner's, from a quick search of the sources (a part of the
        whole goal if it could not write one)."""
        size = self._p._tasks.size
        found = await self._search(root, root.goal, RETRIEVED_SOURCES + size.sections)
        context = self._p._context.for_planning(root)
        context = AgentContext(context.sections, sources=_brief(found), cut=context.cut)
        # Under a grammar (the embedded model) it cannot write more than the size asks for; what
        # another model writes beyond it is cut.
        grammar = self._p._runner.decodes_under_grammar(self._p._profile.outliner)
        schema = outline_schema(size.sections, size.searches) if grammar else Outline
        task = self._p._tasks.outline_task(root.goal)
        try:
            # A fan-out's sections are not used: the embedded model stops once it has written one.
            outline = await self._p._ask(
                root,
                Role.PLANNER,
                self._p._profile.outliner,
                task,
                context,
                schema,
                enough=partial(_fans_out, root.goal),
            )
        except AgentError as exc:
            root.warnings.append(f"the outline could not be written, the report has one section: {exc}")
            return [_whole_goal(root)]
        # First, unless the size asks for none: the overview, quoted from a search for the whole goal.
        overview = [Part(self._p._tasks.overview_title, [_one_line(root.goal)])] if size.overview_quotes else []
        if fan_out := _fan_out(root.goal, outline):  # the report is its items
            items, each = fan_out
            return [*overview, Part(items, _grouped(each, size.searches), items)]
        parts = []
        for section in outline.sections[: size.sections]:
            find = [f.strip() for f in section.find[: size.searches] if f.strip()] or [section.title]
            parts.append(Part(" ".join(section.title.split()), find))
        return [*overview, *parts] if parts else [_whole_goal(root)]

    async def _discover(self, node: TaskNode, part: Part) -> list[str]:
        """The items of a fan-out: a search for them, and the outliner's list of those the passages
        name (at most ``max_items``, each once; a name no passage holds is dropped)."""
        max_items = self._p._settings.max_items
        # What is asked of each item too: a table that lists the items has those facts as columns.
        query = "\n".join(dict.fromkeys([part.items, part.title, *part.find]))
        found = await self._search(node, query, max(max_items, RETRIEVED_SOURCES))
        if not found:
            node.warnings.append(f"no passage names the items ({part.items}): the part is one section")
            return []
        # Whole passages: an item is often named deep in one (a table of sites, a list of vendors).
        context = AgentContext([Section("Overall goal", self._graph.root.goal, required=True)], sources=found)
        task = self._p._tasks.discover_task(part.items, max_items)
        agent = self._p._profile.outliner
        schema = items_schema(max_items) if self._p._runner.decodes_under_grammar(agent) else Items
        try:
            listed = await self._p._ask(node, Role.PLANNER, agent, task, context, schema)
        except AgentError as exc:
            node.warnings.append(f"the items could not be listed, the part is one section: {exc}")
            return []
        node.sources = found  # each item's searches read those that name it (:meth:`_item`)
        named = [item for item in listed.items if any(_names(s, item) for s in found)]
        return _distinct(named, max_items)

    async def _adopt(self, node: TaskNode, subtasks: list[SubTask], node_type: NodeType) -> None:
        """Review ``subtasks`` like any plan, then make them ``node``'s children (no atomizer: a
        report's shape decides what is planned and what is executed)."""
        plan = PlanOutput.model_construct(subtasks=subtasks)  # a fan-out may find a single item
        self._p._bus.publish(PlanProposed(node.task_id, plan, by="planner"))
        approved = await self._p._review(node, plan)
        if approved is None:
            return
        self._p.move(node, _S.ATOMIZATION)
        children = self._graph.add_children(node.task_id, approved.subtasks, [node_type] * len(approved.subtasks))
        for child in children:
            self._p.announce(child)
        self._p.move(node, _S.PLAN_DONE)

    # -- executing -----------------------------------------------------------------------

    async def execute(self, node: TaskNode) -> None:
        """A section's search (its passages, and its question answered from them) or its
        writing step."""
        self._p.move(node, _S.EXECUTING)
        if node.task_type is TaskType.SEARCH:
            await self._answer(node)
        else:
            await self._write(node)

    async def _answer(self, node: TaskNode) -> None:
        """Search for what the section must find, and answer it from those passages only (one
        short call: the small model states more of a few passages' facts, asked one question,
        than of many, asked to write a whole section). The overview's search quotes instead."""
        if self._overview(node):
            await self._quote(node)
            return
        parent = self._graph.parent(node.task_id)
        title = Part.parse(parent.goal).title if parent is not None else ""
        passages = self._p._tasks.size.passages
        query = f"{node.goal}\n{title}"
        item, found_in = self._item(node)
        if item:
            # An item's facts are read only from passages that name it (another item's passage,
            # such as its post-mortem, states the same kinds of facts, and the small model reads
            # them as this item's), looked for deeper as most passages found do not name it, and
            # several of one document (its facts are often spread over its own document's
            # sections). The passages its item was found in come first: a table that lists the
            # items holds their facts, and a search for one item's facts often ranks it low.
            pool = await self._search(node, query, ITEM_POOL * passages, per_source=passages)
            naming = [s for s in pool if _names(s, item)]
            found = _once([*found_in[:passages], *naming[:passages]])
        else:
            found = await self._search(node, query, passages)
        if not found:
            node.warnings.append("the search found no passage")
            self._p._finish(node, "", [])
            return
        frame = [Section("Overall goal", self._graph.root.goal, required=True)]
        context = AgentContext(frame, sources=found)
        task = self._p._tasks.answer_find_task(node.goal, title)
        agent = self._p._profile.section_writer
        parts = len(node.goal.split(PARTS))
        grammar = self._p._runner.decodes_under_grammar(agent)
        schema = cited_schema(len(found), parts) if grammar else CitedAnswers
        # Its passages' sentences nearest the question, quoted after the answers: the small model
        # leaves out most of the facts of the passages it is shown, and a quote states them as written.
        quotes, quoted = await self._quotes(node, found, self._p._tasks.size.search_quotes)
        try:
            output = await self._p._ask(node, Role.EXECUTOR, agent, task, context, schema)
        except AgentError as exc:
            node.warnings.append(f"the question could not be answered from its passages: {exc}")
            self._finish_quoted(node, "", quotes, found, quoted)
            return
        # Each answer is checked against the part of the question it answers (the grammar gives
        # one answer per part, in order).
        questions = _parts(node.goal, item)
        if len(questions) != len(output.answers):
            questions = [node.goal] * len(output.answers)
        said = []
        for answer, question in zip(output.answers, questions, strict=True):
            text = strip_markers(answer.answer)
            # Left out: nothing, the question restated, or an answer no passage can be shown to state.
            if not text or holds(node.goal, text) or holds(question, text):
                continue
            if cited := _holding(node.goal, text, answer.keys, found, answer.sources):
                said.append(Said(question, text, cited))
        if not said:
            node.warnings.append("no passage found answers the question")
        written, read_same = await self._read(node, said, found)
        if item:  # one line per fact, named by the fact asked unless the answer says it
            facts = [s.question.removeprefix(f"{item}: ") for s in said]
            facts = [fact if PARTS not in fact else "" for fact in facts]  # the whole question: no one fact
            written = [f"- {_labelled(text, fact)}" for text, fact in zip(written, facts, strict=True)]
        self._finish_quoted(node, ("\n" if item else " ").join(written), quotes, found, read_same | quoted)

    def _finish_quoted(
        self, node: TaskNode, text: str, quotes: Sequence[str], found: Sequence[Source], verified: set[int]
    ) -> None:
        """Finish ``node`` with ``text`` and its ``quotes`` below, citing ``found``: those numbered
        in ``verified`` are (read to state an answer, or quoted)."""
        found = [s.model_copy(update={"verified": True}) if n in verified else s for n, s in enumerate(found, 1)]
        self._p._finish(node, below(text, quotes), found)

    def _overview(self, node: TaskNode) -> bool:
        """Whether the search ``node`` is the overview's: it looks for the report's whole goal (as
        does the one part of a report whose outline could not be used), and the size quotes."""
        return bool(self._p._tasks.size.overview_quotes) and node.goal == _one_line(self._graph.root.goal)

    async def _quote(self, node: TaskNode) -> None:
        """The overview: the sentences of a search for the whole goal closest in meaning to it,
        quoted (:meth:`_quotes`). No model call: asked to pick the sentences, the small model took
        the first ones; asked to state the facts itself, it stated few of them."""
        found = await self._search(node, node.goal, RETRIEVED_SOURCES)
        if not found:
            node.warnings.append("the search found no passage to quote")
        lines, quoted = await self._quotes(node, found, self._p._tasks.size.overview_quotes)
        self._finish_quoted(node, "", lines, found, quoted)

    async def _quotes(self, node: TaskNode, found: Sequence[Source], count: int) -> tuple[list[str], set[int]]:
        """The ``count`` sentences of ``found`` closest in meaning to ``node``'s goal, quoted word for
        word under their passage's headings ("…" between two that are not next to each other),
        one line per passage citing it (verified: a quote is its passage's own words); and the
        numbers of the passages quoted."""
        said = to_quote(found)
        try:
            picked = await asyncio.to_thread(closest, node.goal, [s for _, s in said], count)
        except EmbeddingModelError as exc:
            node.warnings.append(f"no sentence could be chosen to quote: {exc}")
            picked = []
        return quoted_lines(found, said, picked), {said[i][0] for i in picked}

    async def _read(self, node: TaskNode, said: Sequence[Said], found: Sequence[Source]) -> tuple[list[str], set[int]]:
        """The answers ``said``, each citing only the passages of ``found`` it names that the
        verifier reads the same answer in, asked its part of the question without being shown
        the answer: one holds the other (:func:`agrees`; a reading that only shares one of the
        answer's key words is as often another answer, see bench/README.md); and the
        numbers of those passages. An answer no passage is read to state stays, citing nothing
        and marked :data:`UNCONFIRMED` (noted)."""
        asked = list(dict.fromkeys((s.question, n) for s in said for n in s.cited))
        # At once: a hosted model reads them in parallel (the engine caps concurrent calls).
        readings = await asyncio.gather(*(self._p._read(node, found[n - 1], question) for question, n in asked))
        read = dict(zip(asked, readings, strict=True))
        written: list[str] = []
        read_same: set[int] = set()
        for s in said:
            same = [n for n in s.cited if agrees(read[s.question, n], s.question, s.text)]
            read_same.update(same)
            written.append(cite(s.text, same) if same else f"{s.text} {UNCONFIRMED}")
        if other := sorted({n for _, n in asked} - read_same):
            node.warnings.append(f"read for the question alone, source(s) {other} gave another answer: not cited")
        return written, read_same

    async def _write(self, node: TaskNode) -> None:
        """The section: its searches' answers in order, citing the passages the verifier read the
        same answers in (:meth:`_read`), then their quotes; no model call."""
        sources = SourceList()
        answers: list[str] = []
        quoted: list[str] = []
        for dep in self._graph.dependencies(node.task_id):
            if dep.result:
                text, lines = apart(sources.adopt(dep.result, dep.sources))
                answers += [text] if text else []
                quoted += lines
        if not answers and not quoted:
            self._p.fail(node, "none of its questions was answered from the passages found")
            return
        item, _ = self._item(node)
        text = ("\n" if item else "\n\n").join(answers)  # an item's: one list
        self._p._finish(node, below(text, quoted), sources.sources)

    def _item(self, step: TaskNode) -> tuple[str, list[Source]]:
        """The item of the section ``step`` (a search or the writing step) is in, if that section
        is one item's of a fan-out (the section's title is the item), and the passages the
        fan-out found it in (those of its search for the items that name it); else ('', [])."""
        section = self._graph.parent(step.task_id)
        fanout = self._graph.parent(section.task_id) if section is not None else None
        if section is None or fanout is None or not Part.parse(fanout.goal).items:
            return "", []
        item = Part.parse(section.goal).title
        return item, [s for s in fanout.sources if _names(s, item)]

    # -- assembling ----------------------------------------------------------------------

    async def aggregate(self, node: TaskNode) -> None:
        """PLAN_DONE -> AGGREGATING -> DONE: a part is its sections as written, under their
        headings; the root adds its title and summary (one call)."""
        children = self._graph.children(node.task_id)
        sources = SourceList()
        blocks = [(c, sources.adopt(c.result or "", c.sources)) for c in children if _written(c)]
        if not blocks:
            self._p.fail(node, f"none of its {len(children)} parts was written")
            return
        self._p.move(node, _S.AGGREGATING)
        if not self.is_report(node):
            text = "\n\n".join(_block(child, text) for child, text in blocks)
            self._p._finish(node, text, sources.sources)
            return
        # A sentence the overview or an earlier section quoted is not quoted again.
        texts = unrepeated([text for _, text in blocks])
        blocks = [(child, text) for (child, _), text in zip(blocks, texts, strict=True) if text.strip()]
        frame = await self._frame(node, blocks, verified_numbers(sources.sources))
        parts = (
            [f"# {frame.title}", strip_markers(frame.summary)] if frame is not None else [f"# {goal_title(node.goal)}"]
        )
        parts += [_block(child, text) for child, text in blocks]
        self._p._finish(node, "\n\n".join(p for p in parts if p), sources.sources)

    async def _frame(
        self, root: TaskNode, blocks: Sequence[tuple[TaskNode, str]], verified: set[int]
    ) -> ReportFrame | None:
        """The report aggregator's title and summary for the sections (None, noted, if it fails
        or none of them is confirmed, citing one of the ``verified`` sources: the summary cites
        nothing, so it would state what no source was read to support as if it were found)."""
        if not any(confirmed(text, verified) for _, text in blocks):
            root.warnings.append("no section's answer is confirmed by the sources: the report has no summary")
            return None
        sections = [
            Section(f"Section {i}: {Part.parse(child.goal).title}", strip_markers(text.replace(f" {UNCONFIRMED}", "")))
            for i, (child, text) in enumerate(blocks, start=1)
        ]
        context = AgentContext([Section("Overall goal", root.goal, required=True), *sections])
        task = self._p._tasks.assemble_task(root.goal, len(blocks))
        try:
            return await self._p._ask(
                root, Role.AGGREGATOR, self._p._profile.report_aggregator, task, context, ReportFrame
            )
        except AgentError as exc:
            root.warnings.append(f"the report's title and summary could not be written: {exc}")
            return None

    async def _search(self, node: TaskNode, query: str, limit: int, per_source: int = 1) -> list[Source]:
        tools = self._p._passages.executor_tools(TaskType.SEARCH)
        if tools is None:
            return []
        found = await tools.retrieve(query, limit, per_source)
        node.warnings.extend(found.warnings)
        return found.sources[:limit]


def _fan_out(goal: str, outline: Outline) -> tuple[str, list[str]] | None:
    """The items ``outline`` covers one by one and the facts asked of each, if ``goal`` asks the
    same facts of every item of a kind; else None. Both are the goal's words (a small model
    otherwise copies the kinds its instructions name, or invents them)."""
    items = " ".join(outline.for_each.split())
    each = [" ".join(f.split()) for f in outline.each if holds(goal, f)]
    return (items, each) if items and each and holds(goal, items) else None


def _fans_out(goal: str, reply: str) -> bool:
    """Whether an outliner's reply so far makes ``goal`` a fan-out (its sections need not be written)."""
    outline = parsed_so_far(Outline, reply)
    return outline is not None and _fan_out(goal, outline) is not None


def _brief(found: Sequence[Source]) -> list[Source]:
    """``found`` with each passage cut to its beginning (``BRIEF_CHARS``, at a word)."""
    brief = []
    for source in found:
        snippet = " ".join(source.snippet.split())
        if len(snippet) > BRIEF_CHARS:
            cut = snippet.rfind(" ", 0, BRIEF_CHARS)
            snippet = snippet[: cut if cut > 0 else BRIEF_CHARS] + " …"
        brief.append(source.model_copy(update={"snippet": snippet}))
    return brief


def _names(source: Source, item: str) -> bool:
    """Whether ``source``'s passage or its headings name ``item`` (its file name, which begins
    its title, names nothing: "system_lockbox.md" is a file, not an item)."""
    return holds(f"{title_headings(source.ref, source.title)}\n{source.snippet}", item)


def _holding(
    question: str, answer: str, keys: Sequence[str], found: Sequence[Source], named: Sequence[int]
) -> list[int]:
    """The passages of ``found`` that can be shown to state ``answer``: those it ``named`` that
    hold it or one of its ``keys`` that ``question`` does not; if none does, the other passages
    that hold them (a small model often names the wrong number). The question's own words, such
    as the item's name, show nothing: an answer that states only those states nothing."""
    own = [key for key in keys if not holds(question, key)]
    if cited := stating(answer, own, found, list(dict.fromkeys(named))):
        return cited
    return stating(answer, own, found, [n for n in range(1, len(found) + 1) if n not in named])


def _parts(goal: str, item: str) -> list[str]:
    """The questions a search's ``goal`` asks, one per part: in the section of ``item`` (if
    any), each fact asked of the item ("the east quay: when it opened")."""
    prefix = f"{item}: "
    if not item or not goal.startswith(prefix):
        return goal.split(PARTS)
    return [prefix + fact for fact in goal.removeprefix(prefix).split(PARTS)]


def _capitalized(text: str) -> str:
    """``text`` with its first letter upper-case (a no-op in scripts without case)."""
    return f"{text[:1].upper()}{text[1:]}"


def _labelled(text: str, fact: str) -> str:
    """``text``, an answer to ``fact`` ("date"), after the fact as its label ("**Date:** 3 May
    [1]"), unless the answer already says which fact it states."""
    if holds(text, fact) or not fact.strip():
        return text
    fact = fact.strip()
    return f"**{_capitalized(fact)}:** {text}"


def _once(sources: Sequence[Source]) -> list[Source]:
    """``sources`` in order, less each passage another of its document holds whole (a search shows
    a passage with the neighbours it also ranked, so two searches can show one passage with and
    without them, and the small model would read it twice; of two equal ones the first stays)."""
    texts = [" ".join(s.snippet.split()) for s in sources]

    def held(i: int, j: int) -> bool:
        return sources[i].ref == sources[j].ref and texts[i] in texts[j] and (len(texts[i]) < len(texts[j]) or j < i)

    return [s for i, s in enumerate(sources) if not any(held(i, j) for j in range(len(sources)) if j != i)]


def _planned_write(node: TaskNode) -> bool:
    return node.task_type is TaskType.WRITE and node.node_type is NodeType.PLAN


def _written(node: TaskNode) -> bool:
    """A part or a writing step that finished with a text (searches are not assembled)."""
    return node.status is _S.DONE and bool(node.result) and node.task_type is TaskType.WRITE


def _block(child: TaskNode, text: str) -> str:
    """A written child under its heading (a part's title, one level per layer), or as written."""
    if child.node_type is not NodeType.PLAN:
        return text
    part = Part.parse(child.goal)
    # A fan-out's title is the kind of its items as the goal writes it ("depot or hub").
    title = _capitalized(part.title) if part.items else part.title
    return f"{'#' * min(child.layer + 1, 6)} {title}\n\n{text}"


def _section_plan(part: Part) -> list[SubTask]:
    """A search per thing the section must find, then its writing step on all of them."""
    finds = part.find or [part.title]
    searches = [SubTask(goal=f, task_type=TaskType.SEARCH) for f in finds]
    write = SubTask(goal=part.goal, task_type=TaskType.WRITE, depends_on_indices=list(range(len(searches))))
    return [*searches, write]


def _whole_goal(root: TaskNode) -> Part:
    """A report of one part that must find the whole goal (when no outline could be used)."""
    return Part(root.goal.strip().splitlines()[0], [_one_line(root.goal)])


def _one_line(text: str) -> str:
    """``text`` on one line (a part's goal has one line per thing it must find)."""
    return " ".join(text.split())


def _grouped(facts: Sequence[str], groups: int) -> list[str]:
    """``facts`` in at most ``groups`` questions, in order (one search and one answer each)."""
    size = -(-len(facts) // groups)
    return [PARTS.join(facts[i : i + size]) for i in range(0, len(facts), size)]


def _distinct(listed: Sequence[str], limit: int) -> list[str]:
    """The listed items, each once (case, accents and punctuation aside), at most ``limit``."""
    seen: dict[str, str] = {}
    for item in listed:
        name = " ".join(item.split())
        if name and normalize(name) not in seen:
            seen[normalize(name)] = name
    return list(seen.values())[:limit]

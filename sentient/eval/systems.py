"""The systems an eval compares: ``closed-book``, ``rag`` and ``profile:NAME``.

The two baselines use the same model as the profile's SEARCH executor (resolved by the same
:class:`ModelFactory`, so per-role models and ``--model`` apply alike) and its response cache:

- ``closed-book``: one chat call, no retrieval: what the model knows on its own;
- ``rag``: one retrieval with the SEARCH executor's own tools (``ToolBox.retrieve`` over the
  same documents index, top 5, so ranking and snippet improvements count for both; without
  the agent's second search for the names the passages mention) and one call that answers
  from the numbered passages.

``profile:NAME`` runs the full agent; its files go under the eval's output folder.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agno.models.base import Model

from sentient.agents.models.factory import ModelFactory
from sentient.agents.models.gates import ProviderGates
from sentient.agents.registry import AgentRegistry, Profile
from sentient.api import ProfiledSentientAgent
from sentient.eval.chat import chat
from sentient.exceptions import AgentError, EvalError, ProfileNotFoundError
from sentient.graph.node import NodeType, Source, TaskType
from sentient.graph.task_graph import TaskGraph
from sentient.settings import Settings
from sentient.tools.base import CircuitBreaker, ToolSettings
from sentient.tools.docs_search import DocsIndex
from sentient.tools.toolbox import ToolBox

RAG_PASSAGES = 5  # as many as a SEARCH executor is given per retrieval tool

CLOSED_BOOK_SYSTEM = "Answer the question concisely, in one or two sentences."
RAG_SYSTEM = (
    "Answer the question from these numbered passages, concisely, and cite the passages you use as [n]. "
    "If the passages do not contain the answer, say so."
)

Kind = Literal["closed-book", "rag", "profile"]
BASELINES: tuple[str, ...] = ("closed-book", "rag")
DEFAULT_SYSTEMS: tuple[str, ...] = ("closed-book", "rag", "profile:general_agent")


@dataclass(frozen=True)
class System:
    """A system named on the command line: ``closed-book``, ``rag`` or ``profile:NAME``."""

    kind: Kind
    profile: str | None = None

    @classmethod
    def parse(cls, text: str) -> System:
        """Raises EvalError for anything else."""
        value = text.strip()
        if value in BASELINES:
            return cls(value)  # type: ignore[arg-type]
        prefix, _, name = value.partition(":")
        if prefix == "profile" and name:
            return cls("profile", name)
        raise EvalError(f"unknown system {text!r}: use closed-book, rag or profile:NAME")

    @property
    def name(self) -> str:
        return f"profile:{self.profile}" if self.kind == "profile" else self.kind

    @property
    def slug(self) -> str:
        """A folder name: ``closed-book``, ``rag``, ``profile-general_agent``."""
        return slug(self.name)


@dataclass
class Outcome:
    """What one system produced for one question, before grading.

    ``shown`` are the sources the model was shown (every node's for a profile run), ``cited``
    the sources the final answer's ``[n]`` refer to, ``leaves`` the results of executed steps.
    """

    answer: str = ""
    shown: list[Source] = field(default_factory=list)
    cited: list[Source] = field(default_factory=list)
    leaves: list[str] = field(default_factory=list)
    agent_calls: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    error: str | None = None


@dataclass
class EvalDeps:
    """What every system of one eval shares: settings, the model, the documents, the output folder."""

    settings: Settings
    docs: DocsIndex | None  # None when only closed-book runs
    run_dir: Path
    model: Model | None = None  # an agno model instance for every call (tests: ScriptedModel)
    model_string: str | None = None  # else a model string (--model), else the settings' model
    timeout_s: float = 300.0
    gates: ProviderGates | None = None  # shared by every system and the judge: one per provider key

    def profile(self, name: str) -> Profile:
        try:
            return AgentRegistry.load(self.settings.config_dir).profile(name)
        except ProfileNotFoundError as exc:
            raise EvalError(str(exc)) from None


class Baseline:
    """``closed-book`` and ``rag``: direct calls to the model of ``profile``'s SEARCH executor."""

    def __init__(self, deps: EvalDeps, profile: Profile, *, retrieve: bool) -> None:
        self._deps = deps
        self._retrieve = retrieve
        executor = profile.executor_for(TaskType.SEARCH)
        self._factory = ModelFactory(
            deps.settings,
            profile,
            override=deps.model,
            model=deps.model_string,
            timeout_s=deps.timeout_s,
            gates=deps.gates,
        )
        self._factory.check()
        self._executor = executor
        tool_settings = ToolSettings(offline=deps.settings.offline)
        self._tools = ToolBox.for_agent(executor.tools, tool_settings, deps.docs, breaker=CircuitBreaker("web search"))

    async def answer(self, question: str) -> Outcome:
        started = time.perf_counter()
        outcome = Outcome(agent_calls=1)
        handle = self._factory.for_agent(self._executor)
        try:
            if self._retrieve:
                found = await self._tools.retrieve(question, RAG_PASSAGES)
                outcome.shown = outcome.cited = found.sources
                prompt = rag_prompt(question, found.sources)
                reply = await chat(
                    handle, RAG_SYSTEM, prompt, role="rag", goal=question, timeout_s=self._deps.timeout_s
                )
            else:
                reply = await chat(
                    handle,
                    CLOSED_BOOK_SYSTEM,
                    question,
                    role="closed-book",
                    goal=question,
                    timeout_s=self._deps.timeout_s,
                )
        except AgentError as exc:
            outcome.error = str(exc)
        else:
            outcome.answer = reply.text.strip()
            outcome.leaves = [outcome.answer]  # one call: it is its own only step
            outcome.model_calls = reply.model_calls
            outcome.input_tokens, outcome.output_tokens = reply.input_tokens, reply.output_tokens
            outcome.cost_usd = reply.cost_usd
        outcome.wall_s = time.perf_counter() - started
        return outcome

    def close(self) -> None:
        self._factory.close()


class ProfileSystem:
    """``profile:NAME``: the full agent, one run per question, files under ``runs/<id>/``."""

    def __init__(self, deps: EvalDeps, name: str, out_dir: Path) -> None:
        deps.profile(name)  # an unknown profile fails here, with the list of valid ones
        self._out_dir = out_dir
        self._agent = ProfiledSentientAgent.create_with_profile(
            name, settings=deps.settings, model=deps.model or deps.model_string, docs=deps.docs, gates=deps.gates
        )

    async def answer(self, question: str, question_id: str) -> Outcome:
        started = time.perf_counter()
        project_id = f"eval-{slug(question_id)}"[:120]
        result = await self._agent.arun(question, project_id=project_id, output_dir=self._out_dir / project_id)
        stats = result.stats
        root = result.graph.root
        return Outcome(
            answer=result.final_answer or "",
            shown=[s for node in result.graph for s in node.sources],
            cited=list(root.sources),
            leaves=_leaf_results(result.graph),
            agent_calls=stats.agent_calls,
            model_calls=stats.model_calls,
            input_tokens=stats.input_tokens,
            output_tokens=stats.output_tokens,
            cost_usd=stats.cost_usd,
            wall_s=time.perf_counter() - started,
            error=result.error,
        )


def rag_prompt(question: str, sources: list[Source]) -> str:
    """The numbered passages, as a SEARCH executor's tools print them, then the question."""
    blocks = [
        f"[{n}] {s.title} — {s.ref}\n{s.snippet}" if s.title else f"[{n}] {s.ref}\n{s.snippet}"
        for n, s in enumerate(sources, start=1)
    ]
    passages = "\n\n".join(blocks) if blocks else "(no passages were found)"
    return f"## Passages\n{passages}\n\n## Question\n{question}"


def slug(text: str) -> str:
    """A safe folder name for ``text`` (letters, digits, ``_ . -``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "x"


def _leaf_results(graph: TaskGraph) -> list[str]:
    return [node.result for node in graph if node.node_type is NodeType.EXECUTE and node.result]

"""Question-plans benchmark: the question planner alone, on a dataset's two-hop questions.

    python bench/question_plans_bench.py DATASET [DATASET ...] [--out PLANS.jsonl] [--split dev]

Each question with ``"hops": 2`` is given to the profile's root planner as a question no passage
answered (``plan_question``: the real prompt, agent, context builder and runner, on the run's
model; ``SENTIENT_MODEL`` picks another). A plan is a first lookup (what the question refers to
without naming it) and the question again with ``X`` where that lookup's answer goes. Reported:
plans whose second question holds the slot (the engine asks the question itself when it does
not), plans whose first lookup is the question itself (the engine then plans nothing), and
seconds a plan (a repeated plan comes from the response cache: ``SENTIENT_CACHE_RESPONSES=false``
to time it). ``--out`` keeps the plans, one JSON line each, for a blind grading of whether
the first lookup asks for the bridge and the second asks the rest about it (a helper or a
person, shown two prompts' plans in random order: ``bench/README.md``, the rules table).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from sentient.agents.config import Role
from sentient.agents.models.factory import ModelFactory
from sentient.agents.plans import asks_with_slot, is_goal
from sentient.agents.registry import AgentRegistry
from sentient.agents.runner import AgentCall, AgentRunner
from sentient.agents.schemas import QuestionPlan
from sentient.context.builder import ContextBuilder
from sentient.context.knowledge import KnowledgeStore
from sentient.eval.dataset import EvalQuestion, load_dataset, select
from sentient.events import EventBus
from sentient.exceptions import EvalError
from sentient.graph.node import NodeType, TaskType
from sentient.graph.task_graph import TaskGraph
from sentient.settings import Settings


def two_hop_questions(paths: list[Path], split: str) -> list[EvalQuestion]:
    """The two-hop questions of ``split`` in the datasets, read as ``sentient eval`` reads them."""
    return [q for path in paths for q in select(load_dataset(path), split) if q.hops == 2]


async def plans(questions: list[EvalQuestion], profile_name: str) -> list[dict[str, Any]]:
    settings = Settings(offline=True)
    profile = AgentRegistry.load(settings.config_dir).profile(profile_name)
    engine = profile.settings  # the profile's engine defaults, as a run without overrides has them
    factory = ModelFactory(settings, profile)
    runner = AgentRunner(
        factory.for_agent,
        EventBus(),
        max_concurrent=1,
        timeout_s=engine.agent_timeout_s,
        max_validation_retries=engine.max_validation_retries,
        local_timeout_s=engine.local_timeout_s,
    )
    tasks = profile.prompts.for_run(None, None)
    planner = profile.planner_for(True)
    out: list[dict[str, Any]] = []
    try:
        for row in questions:
            graph = TaskGraph()
            node = graph.add_root(row.question, TaskType.SEARCH, NodeType.PLAN)
            knowledge = KnowledgeStore(None, "bench")
            builder = ContextBuilder(graph, knowledge, engine.context_token_budget, engine.knowledge_results)
            context = builder.for_planning(node)
            call = AgentCall(
                node.task_id, node.goal, Role.PLANNER, planner, tasks.plan_question_task(node.goal), context
            )
            started = time.perf_counter()
            reply = await runner.run(call, QuestionPlan)
            first, then = " ".join(reply.output.first.split()), " ".join(reply.output.then.split())
            plan: dict[str, Any] = {"id": row.id, "question": row.question, "first": first, "then": then}
            plan["slot"] = asks_with_slot(then, row.question)
            plan["first_is_question"] = is_goal(row.question, first)
            plan["s"] = round(time.perf_counter() - started, 1)
            print(json.dumps(plan), file=sys.stderr, flush=True)
            out.append(plan)
    finally:
        factory.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("datasets", type=Path, nargs="+")
    parser.add_argument("--profile", default="general_agent")
    parser.add_argument("--split", default="dev", choices=["dev", "heldout", "all"], help="default: dev")
    parser.add_argument("--out", type=Path, help="write the plans here, one JSON line each")
    args = parser.parse_args()
    try:
        questions = two_hop_questions(args.datasets, args.split)
    except EvalError as exc:
        sys.exit(str(exc))
    if not questions:
        sys.exit(f'no two-hop questions ("hops": 2) of split {args.split!r} in {", ".join(map(str, args.datasets))}')
    made = asyncio.run(plans(questions, args.profile))
    if args.out is not None:
        args.out.write_text("".join(json.dumps(plan) + "\n" for plan in made))
    n = len(made)
    slot = sum(1 for plan in made if plan["slot"])
    restating = sum(1 for plan in made if plan["first_is_question"])
    seconds = sum(plan["s"] for plan in made) / n
    print(f"{n} plans: second question with the slot {slot} ({slot / n:.0%}); first lookup is the question {restating}")
    print(f"{seconds:.1f} s a plan")


if __name__ == "__main__":
    main()

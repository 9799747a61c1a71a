"""Prompt-states benchmark: an eval run's model calls, replayed with the embedded model's saved
prompt states and without them.

    python bench/prompt_states_bench.py RUN_DIR [--limit N] [--threads T] [--json]

``RUN_DIR`` is one system's folder of a ``sentient eval`` output (the one holding ``runs/``).
Its traced calls are replayed in the order they ran, each as the agent's system prompt (from
``agent_configs/agents.yaml``) and the traced prompt, with its role's output schema. Reported
for each mode: seconds, prompt tokens, the prompt tokens the model actually read (the rest
came from a saved state), and whether both modes gave the same replies.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from loguru import logger
from pydantic import BaseModel

from sentient.agents.models.embedded import LlamaRuntime
from sentient.agents.models.weights import DEFAULT_WEIGHTS, resolve_model_path
from sentient.agents.schemas import AggregationOutput, AtomizerOutput, ExecutionOutput
from sentient.graph.plan import PlanOutput
from sentient.settings import Settings

SCHEMAS: dict[str, type[BaseModel]] = {
    "atomizer": AtomizerOutput,
    "planner": PlanOutput,
    "executor": ExecutionOutput,
    "aggregator": AggregationOutput,
}
AGENTS = Path(__file__).resolve().parent.parent / "agent_configs" / "agents.yaml"


def traced_calls(run_dir: Path) -> list[dict[str, Any]]:
    """Every model call of the run's questions (not those replayed from the response cache), in order."""
    systems = {a["name"]: a["instructions"] for a in yaml.safe_load(AGENTS.read_text())["agents"]}
    calls = []
    for question in sorted((run_dir / "runs").iterdir()):
        traced = [c for f in question.glob("traces/*.json") for c in json.loads(f.read_text())["calls"]]
        for call in sorted(traced, key=lambda c: c["started_at"]):
            if call["cached"] or call["role"] not in SCHEMAS or call["agent"] not in systems:
                continue
            messages = [
                {"role": "system", "content": systems[call["agent"]]},
                {"role": "user", "content": call["prompt"]},
            ]
            calls.append({"messages": messages, "schema": SCHEMAS[call["role"]].model_json_schema()})
    return calls


def replay(model: Path, calls: list[dict[str, Any]], threads: int, keep_states: bool) -> dict[str, Any]:
    runtime = LlamaRuntime(model, n_threads=threads)
    runtime.load()
    llm = runtime._llama
    assert llm is not None
    if not keep_states:
        llm.set_cache(None)
    read = [0]
    evaluate = llm.eval

    def counting(tokens: Any) -> None:
        read[0] += len(tokens)
        evaluate(tokens)

    llm.eval = counting  # type: ignore[method-assign]
    seconds = prompt = prompt_read = 0.0
    replies = []
    for call in calls:
        read[0] = 0
        started = time.perf_counter()
        out = runtime.complete(call["messages"], call["schema"])
        seconds += time.perf_counter() - started
        prompt += out.input_tokens
        prompt_read += read[0] - out.output_tokens  # each generated token is read back once
        replies.append(out.text)
    return {
        "seconds": round(seconds, 1),
        "prompt_tokens": prompt,
        "prompt_tokens_read": prompt_read,
        "replies": replies,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--limit", type=int, default=None, help="replay the first N calls")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)
    logger.enable("sentient")  # the library is silent until an application enables it
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    calls = traced_calls(args.run_dir)[: args.limit]
    if not calls:
        parser.error(f"no traced model calls under {args.run_dir}/runs")
    settings = Settings()
    model = resolve_model_path(settings.model_path, settings.cache_dir, DEFAULT_WEIGHTS)
    modes = {name: replay(model, calls, args.threads, keep) for name, keep in (("without", False), ("with", True))}
    same = sum(a == b for a, b in zip(modes["without"]["replies"], modes["with"]["replies"], strict=True))
    result = {"calls": len(calls), "same_replies": same}
    result |= {name: {k: v for k, v in mode.items() if k != "replies"} for name, mode in modes.items()}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{len(calls)} calls, the same reply in both modes: {same}")
    print("| prompt states | seconds | prompt tokens | prompt tokens read |\n|---|---:|---:|---:|")
    for name, mode in modes.items():
        print(f"| {name} | {mode['seconds']} | {mode['prompt_tokens']:.0f} | {mode['prompt_tokens_read']:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

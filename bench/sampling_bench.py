"""Sampling benchmark: the embedded model's grammar-constrained decoding, with llama-cpp-python's
own sampler chain and with :class:`sentient.agents.models.sampling.LikelyFirstSampler`.

    python bench/sampling_bench.py                       # the default 1.5B, threads as at run time
    python bench/sampling_bench.py --model PATH.gguf --threads 2 --json

For a few prompts shaped like the agents' calls (a free-text answer, an atomizer verdict, a
plan), each sampler generates the reply with the same seed, twice, in turns. Reported per
sampler: generated tokens, the time spent choosing tokens (ms per token) and the whole
generation (tokens per second, prompt already evaluated: the second call of a prompt reuses it).
The replies must be identical; the bench raises if they differ. Timings are printed, not asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from llama_cpp import Llama

from sentient.agents.models.embedded import REPEAT_PENALTY, default_threads, llama_class
from sentient.agents.models.weights import DEFAULT_WEIGHTS, resolve_model_path
from sentient.agents.schemas import AtomizerOutput, ExecutionOutput
from sentient.graph.plan import PlanOutput
from sentient.settings import Settings

PROMPTS: list[tuple[str, dict[str, Any]]] = [
    (
        "In about 80 words, how does Python's garbage collector handle reference cycles?",
        ExecutionOutput.model_json_schema(),
    ),
    ("Is 'find the timeout of service A' a single step? Answer with JSON.", AtomizerOutput.model_json_schema()),
    ("Plan 3 subtasks to compare asyncio and threading for network servers.", PlanOutput.model_json_schema()),
]
ROUNDS = 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the embedded 1.5B)")
    parser.add_argument("--threads", type=int, help="CPU threads (default: as sentient run would choose)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()

    path = resolve_model_path(args.model, Settings().cache_dir, DEFAULT_WEIGHTS)
    threads = args.threads or default_threads()
    likely_first = llama_class(repack_weights=False)

    class ChainSampled(likely_first):  # type: ignore[misc, valid-type]
        def _init_sampler(self, **params: Any) -> Any:
            return Llama._init_sampler(self, **params)  # llama-cpp-python's own chain

    samplers = {"stock chain": ChainSampled, "likely first": likely_first}
    models = {
        name: cls(model_path=str(path), n_ctx=2048, n_threads=threads, seed=7, verbose=False)
        for name, cls in samplers.items()
    }
    stats: dict[str, dict[str, list[float]]] = {
        name: {"tokens": [], "sample_s": [], "total_s": []} for name in samplers
    }
    replies: dict[str, list[str]] = {name: [] for name in samplers}
    for prompt, schema in PROMPTS:
        for _ in range(ROUNDS):
            for name, llm in models.items():
                reply, tokens, sample_s, total_s = _generate(llm, prompt, schema)
                replies[name].append(reply)
                stats[name]["tokens"].append(tokens)
                stats[name]["sample_s"].append(sample_s)
                stats[name]["total_s"].append(total_s)
    first, second = replies.values()
    if first != second:
        raise SystemExit(f"the samplers gave different replies:\n{first}\n{second}")

    report = {"model": path.name, "threads": threads, "identical_replies": True}
    for name, s in stats.items():
        tokens = sum(s["tokens"])
        report[name] = {
            "tokens": tokens,
            "sampling_ms_per_token": round(1000 * sum(s["sample_s"]) / tokens, 1),
            "tokens_per_s": round(tokens / sum(s["total_s"]), 1),
            "median_call_s": round(statistics.median(s["total_s"]), 2),
        }
    if args.json:
        json.dump(report, sys.stdout)
        print()
        return
    print(f"{path.name}, {threads} threads; replies identical")
    print(f"{'sampler':<16} {'tokens':>7} {'sampling ms/token':>18} {'tokens/s':>9} {'median call s':>14}")
    for name in samplers:
        r = report[name]
        print(
            f"{name:<16} {r['tokens']:>7} {r['sampling_ms_per_token']:>18} {r['tokens_per_s']:>9} {r['median_call_s']:>14}"
        )


def _generate(llm: Any, prompt: str, schema: dict[str, Any]) -> tuple[str, int, float, float]:
    """One reply: its text, tokens, seconds spent choosing tokens, seconds in all."""
    spent = 0.0
    sample = llm.sample

    def timed(*args: Any, **kwargs: Any) -> int:
        nonlocal spent
        started = time.perf_counter()
        token = sample(*args, **kwargs)
        spent += time.perf_counter() - started
        return int(token)

    llm.sample = timed
    # Evaluate the prompt first, so the timed call measures generation only.
    messages = [{"role": "user", "content": prompt}]
    fmt = {"type": "json_object", "schema": schema}
    llm.create_chat_completion(messages=messages, response_format=fmt, max_tokens=1, seed=7)
    spent = 0.0
    started = time.perf_counter()
    out = llm.create_chat_completion(
        messages=messages, response_format=fmt, max_tokens=200, temperature=0.2, repeat_penalty=REPEAT_PENALTY, seed=7
    )
    total = time.perf_counter() - started
    del llm.sample
    return out["choices"][0]["message"]["content"], int(out["usage"]["completion_tokens"]), spent, total


if __name__ == "__main__":
    main()

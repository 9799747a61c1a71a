"""Retrieval benchmark: BM25, dense (MiniLM) and fused docs search on a question set.

    python bench/retrieval_bench.py DATASET.jsonl --docs FOLDER           # a folder corpus
    python bench/retrieval_bench.py DATASET.jsonl --python-docs CACHE_DIR  # the default corpus
    python bench/retrieval_bench.py ... --split dev --tune                 # grid-search the fusion
    python bench/retrieval_bench.py ... --json                             # one JSON object on stdout

Dataset lines are ``{"question", "answers": [...]}`` with an optional ``"split"`` (``--split``
keeps one; tune only on ``dev``). For each retrieval mode (``bm25``, ``dense``, ``hybrid``):

- ``recall@5``: share of questions where the FULL text of some top-5 passage contains an
  accepted answer (``sentient.eval.grading.contains_answer``);
- ``mrr@10``: mean of 1 / rank of the first such passage in the top 10 (0 when none);
- ``snippet@5``: share where some top-5 SNIPPET (what the model is shown) contains an answer;
  ``legacy_snippet@5`` is the same for the old 600-character window around the first query
  word, on the same hits, so the snippet change is measured apart from the ranking change;
- ``passage_recall@5``: recall@5 over the top 5 passages without the one-per-source rule
  (what a second passage of an already listed file would add);
- ``query_ms``: median search latency (p90 beside it).

``build_s`` is the index build (for ``--python-docs`` a cold build when the cache folder is
empty, vectors included). Hits are one per source, as callers see them. The bench checks that
every mode returned hits for most questions (a broken index raises) and never asserts timings.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from loguru import logger

from sentient.eval.grading import contains_answer
from sentient.tools import DocsIndex, Retrieval
from sentient.tools.dense import Fusion
from sentient.tools.embeddings import default_embedder

_LEGACY_SNIPPET_CHARS = 600


class BenchError(RuntimeError):
    """The bench's own sanity check failed."""


@dataclass(frozen=True)
class Question:
    question: str
    answers: list[str]
    split: str


def load_questions(path: Path, split: str | None) -> list[Question]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    questions = [Question(r["question"], list(r["answers"]), r.get("split", "")) for r in rows]
    return [q for q in questions if split in (None, "all") or q.split == split]


def score(index: DocsIndex, questions: list[Question], mode: Retrieval, all_metrics: bool = True) -> dict[str, float]:
    """recall@5, mrr@10, snippet@5, followed_snippet@5, legacy_snippet@5 and latency for one retrieval mode."""
    recall = mrr = snippet = followed = legacy = answered = passages = 0.0
    latencies = []
    for q in questions:
        started = time.perf_counter()
        hits = index.search(q.question, limit=10, retrieval=mode)
        latencies.append((time.perf_counter() - started) * 1000)
        if all_metrics:
            top = index.search(q.question, limit=5, retrieval=mode, per_source=5)
            passages += any(contains_answer(hit.passage, q.answers) for hit in top)
            shown = index.search(q.question, limit=5, retrieval=mode, follow=True)  # what an agent's executor sees
            followed += any(contains_answer(hit.snippet, q.answers) for hit in shown)
        answered += bool(hits)
        ranks = [i for i, hit in enumerate(hits, start=1) if contains_answer(hit.passage, q.answers)]
        recall += bool(ranks and ranks[0] <= 5)
        mrr += 1 / ranks[0] if ranks else 0.0
        snippet += any(contains_answer(hit.snippet, q.answers) for hit in hits[:5])
        legacy += any(contains_answer(legacy_excerpt(hit.passage, q.question), q.answers) for hit in hits[:5])
    n = len(questions)
    if answered < 0.5 * n:
        raise BenchError(f"{mode.value}: only {answered:.0f} of {n} questions got any hit")
    latencies.sort()
    return {
        "recall@5": recall / n,
        "mrr@10": mrr / n,
        "snippet@5": snippet / n,
        "followed_snippet@5": followed / n,
        "legacy_snippet@5": legacy / n,
        "passage_recall@5": passages / n,
        "query_ms": statistics.median(latencies),
        "query_p90_ms": latencies[int(0.9 * (n - 1))],
    }


def tune(index: DocsIndex, questions: list[Question]) -> list[dict[str, float]]:
    """Hybrid recall@5 / mrr@10 for a grid of fusion settings, best first."""
    rows = []
    grid = itertools.product((0.75, 1.0, 1.5, 2.0, 3.0), (1.0,), (5, 20, 60), (0.0, 0.3, 0.4))
    for bm25_weight, dense_weight, k, min_similarity in grid:
        index.fusion = Fusion(bm25_weight, dense_weight, k, min_similarity)
        result = score(index, questions, Retrieval.HYBRID, all_metrics=False)
        rows.append(
            {"bm25_weight": bm25_weight, "k": k, "min_similarity": min_similarity}
            | {m: result[m] for m in ("recall@5", "mrr@10")}
        )
    index.fusion = Fusion()
    return sorted(rows, key=lambda r: (-r["recall@5"], -r["mrr@10"]))


def legacy_excerpt(body: str, query: str) -> str:
    """The snippet rule before sentence windows: 600 characters around the first query word."""
    from sentient.tools.docs_search import _query_tokens

    if len(body) <= _LEGACY_SNIPPET_CHARS:
        return body
    tokens = _query_tokens(query)
    stems = "|".join(re.escape(t[: max(4, len(t) - 3)]) for t in tokens) or "$^"
    found = re.search(rf"\b(?:{stems})", body, re.IGNORECASE)
    start = max(0, (found.start() if found else 0) - _LEGACY_SNIPPET_CHARS // 4)
    if start:
        start = body.find(" ", start) + 1 or start
    end = start + _LEGACY_SNIPPET_CHARS - 2
    if end < len(body):
        end = max(body.rfind(" ", start, end), start + _LEGACY_SNIPPET_CHARS // 2)
    return body[start:end]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    corpus = parser.add_mutually_exclusive_group(required=True)
    corpus.add_argument("--docs", type=Path, help="a documents folder to index")
    corpus.add_argument("--python-docs", type=Path, metavar="CACHE_DIR", help="the Python docs index cache folder")
    parser.add_argument("--split", default="all", help="dev, heldout or all (default)")
    parser.add_argument("--tune", action="store_true", help="grid-search the fusion settings (use --split dev)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)
    logger.enable("sentient")  # the library is silent until an application enables it
    logger.remove()
    logger.add(sys.stderr, level="WARNING")

    questions = load_questions(args.dataset, args.split)
    if not questions:
        raise BenchError(f"no questions with split {args.split!r} in {args.dataset}")
    started = time.perf_counter()
    embeddings = default_embedder  # hybrid is opt-in in the product; the bench compares all modes
    if args.docs:
        index = DocsIndex.from_folder(args.docs, embeddings=embeddings)
    else:
        index = DocsIndex.python_docs(args.python_docs, embeddings=embeddings)
    index.search("warm up", retrieval=Retrieval.HYBRID)  # loads the model outside the timings
    build_s = time.perf_counter() - started
    result: dict[str, object] = {
        "dataset": args.dataset.name,
        "split": args.split,
        "questions": len(questions),
        "passages": len(index),
        "build_s": round(build_s, 1),
        "embedded_passages": index.embedded_passages,
        "modes": {mode.value: score(index, questions, mode) for mode in Retrieval},
    }
    if args.tune:
        result["tuning"] = tune(index, questions)
    index.close()
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0


def print_table(result: dict) -> None:
    print(
        f"{result['dataset']} ({result['split']}, {result['questions']} questions, {result['passages']} passages, "
        f"build {result['build_s']} s with {result['embedded_passages']} passages embedded)\n"
    )
    print(
        "| retrieval | recall@5 | MRR@10 | answer in top-5 snippets | (following references) "
        "| (old 600-char window) | recall@5, any 5 passages | query ms (p90) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for mode, m in result["modes"].items():
        print(
            f"| {mode} | {m['recall@5']:.2f} | {m['mrr@10']:.2f} | {m['snippet@5']:.2f} | "
            f"{m['followed_snippet@5']:.2f} | {m['legacy_snippet@5']:.2f} | {m['passage_recall@5']:.2f} | "
            f"{m['query_ms']:.0f} ({m['query_p90_ms']:.0f}) |"
        )
    if "tuning" in result:
        print("\n| bm25 weight | k | min similarity | recall@5 | MRR@10 |\n|---|---|---|---|---|")
        for row in result["tuning"][:10]:
            print(
                f"| {row['bm25_weight']} | {row['k']} | {row['min_similarity']} | "
                f"{row['recall@5']:.2f} | {row['mrr@10']:.2f} |"
            )


if __name__ == "__main__":
    sys.exit(main())

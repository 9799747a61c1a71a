"""Retrieval benchmark: BM25, dense and fused docs search on a question set.

    python bench/retrieval_bench.py DATASET.jsonl --docs FOLDER           # a folder corpus
    python bench/retrieval_bench.py DATASET.jsonl --python-docs CACHE_DIR  # the default corpus
    python bench/retrieval_bench.py ... --negatives OTHER.jsonl            # questions the corpus cannot answer
    python bench/retrieval_bench.py ... --tune                             # grid-search the fusion
    python bench/retrieval_bench.py ... --json                             # one JSON object on stdout

Dataset lines are ``{"question", "answers": [...], "evidence": [...], "hops"}`` (the format of
bench/datasets/README.md); ``--split`` keeps one split (tune on ``dev`` only). Hits are what the
docs tool returns (top 5, one per source). For each retrieval mode (``bm25``, ``dense``, ``hybrid``):

- ``recall@5``: share of questions with a hit from an evidence document (for a two-hop question,
  one that holds the answer: ``evidence[1:]``) whose shown text holds an accepted answer
  (``sentient.eval.grading.contains_answer``): the answer passage reached the model;
- ``answer@5``: some hit's shown text holds an accepted answer, whatever its document;
- ``evidence@5``: some hit is from an evidence document;
- ``none``: share of questions for which the search returned nothing ("nothing relevant");
- ``chars``: characters shown per question; ``query_ms``: median search latency.

Evidence names a file of the folder, or for the Python docs a passage title with its prefix
shortened (``topics#with``, ``module json``, ``json.loads``). With ``--negatives``, the questions
of that file are asked too, and ``negatives_none`` is the share of them that got nothing, as they
should. ``build_s`` is the index build, ``build_cpu_s`` its CPU time (for ``--python-docs``, a cold
build when the cache folder is empty, vectors included). The bench never asserts timings.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from loguru import logger

from sentient.eval.grading import contains_answer
from sentient.tools import DocsIndex, Retrieval, SearchHit
from sentient.tools.embeddings import default_embedder

LIMIT = 5


class BenchError(RuntimeError):
    """The bench's own sanity check failed."""


@dataclass(frozen=True)
class Question:
    question: str
    answers: list[str]
    evidence: frozenset[str]  # the documents that hold the answer
    hops: int
    split: str


def load_questions(path: Path, split: str) -> list[Question]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    questions = []
    for row in rows:
        evidence = row.get("evidence", [])
        hops = int(row.get("hops", 1))
        answering = evidence[1:] if hops == 2 else evidence
        questions.append(
            Question(row["question"], list(row["answers"]), frozenset(answering), hops, row.get("split", ""))
        )
    return [q for q in questions if split == "all" or q.split == split]


def evidence_name(hit: SearchHit, python_docs: bool) -> str:
    """The dataset's evidence name of ``hit``'s document (see the module docstring)."""
    if not python_docs:
        return Path(hit.source.partition("#")[0]).name
    for prefix, short in (("Python reference: ", "topics#"), ("Python module ", "module ")):
        if hit.title.startswith(prefix):
            return short + hit.title.removeprefix(prefix)
    return hit.title


def score(
    search: Callable[[str], list[SearchHit]], questions: list[Question], python_docs: bool
) -> dict[str, float | str]:
    recall = answer = evidence = empty = chars = 0
    hops = [0, 0]
    latencies = []
    for q in questions:
        started = time.perf_counter()
        hits = search(q.question)
        latencies.append((time.perf_counter() - started) * 1000)
        holds = [contains_answer(hit.snippet, q.answers) for hit in hits]
        from_evidence = [evidence_name(hit, python_docs) in q.evidence for hit in hits]
        found = any(h and e for h, e in zip(holds, from_evidence, strict=True))
        recall += found
        answer += any(holds)
        evidence += any(from_evidence)
        empty += not hits
        chars += sum(len(hit.snippet) for hit in hits)
        if q.hops == 2:
            hops[0] += found
            hops[1] += 1
    n = len(questions)
    return {
        "recall@5": recall / n,
        "answer@5": answer / n,
        "evidence@5": evidence / n,
        "two_hop_recall@5": f"{hops[0]}/{hops[1]}",
        "none": empty / n,
        "chars": chars / n,
        "query_ms": statistics.median(latencies),
    }


def tune(index: DocsIndex, questions: list[Question], python_docs: bool) -> list[dict[str, float]]:
    """Hybrid recall@5 for a grid of fusion weights, best first."""
    rows = []
    base = index.fusion
    for bm25_weight, k in itertools.product((1.0, 2.0, 3.0), (5, 60)):
        index.fusion = replace(base, bm25_weight=bm25_weight, k=k)
        result = score(lambda q: index.search(q, LIMIT, Retrieval.HYBRID), questions, python_docs)
        rows.append({"bm25_weight": bm25_weight, "k": k, "recall@5": float(result["recall@5"])})
    index.fusion = base
    return sorted(rows, key=lambda r: -r["recall@5"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("dataset", type=Path)
    corpus = parser.add_mutually_exclusive_group(required=True)
    corpus.add_argument("--docs", type=Path, help="a documents folder to index")
    corpus.add_argument("--python-docs", type=Path, metavar="CACHE_DIR", help="the Python docs index cache folder")
    parser.add_argument("--split", default="all", help="dev, heldout or all (default)")
    parser.add_argument("--negatives", type=Path, help="questions this corpus does not answer")
    parser.add_argument(
        "--min-known",
        type=float,
        help="override Fusion.min_known (0: every search returns passages)",
    )
    parser.add_argument("--tune", action="store_true", help="grid-search the fusion weights (use --split dev)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)
    logger.enable("sentient")  # the library is silent until an application enables it
    logger.remove()
    logger.add(sys.stderr, level="WARNING")

    questions = load_questions(args.dataset, args.split)
    if not questions:
        raise BenchError(f"no questions with split {args.split!r} in {args.dataset}")
    negatives = load_questions(args.negatives, "all") if args.negatives else []
    python_docs = args.python_docs is not None
    started, cpu_started = time.perf_counter(), time.process_time()
    if args.docs:
        index = DocsIndex.from_folder(args.docs, embeddings=default_embedder)
    else:
        index = DocsIndex.python_docs(args.python_docs, embeddings=default_embedder)
    index.search("warm up", retrieval=Retrieval.HYBRID)  # loads the model outside the timings
    build_s, build_cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
    if index.default_retrieval is not Retrieval.HYBRID:
        raise BenchError("the embedding model did not load: only BM25 could be measured")
    if args.min_known is not None:
        index.fusion = replace(index.fusion, min_known=args.min_known)
    modes: dict[str, dict[str, float | str]] = {}
    for mode in Retrieval:
        modes[mode.value] = score(lambda q, m=mode: index.search(q, LIMIT, m), questions, python_docs)
        if negatives:
            wrong = score(lambda q, m=mode: index.search(q, LIMIT, m), negatives, python_docs)
            modes[mode.value]["negatives_none"] = wrong["none"]
    if float(modes["bm25"]["none"]) > 0.5:
        raise BenchError(f"BM25 found nothing for {modes['bm25']['none']:.0%} of the questions")
    result: dict[str, object] = {
        "dataset": args.dataset.name,
        "split": args.split,
        "questions": len(questions),
        "passages": len(index),
        "embedding_model": index.embedding_model,
        "build_s": round(build_s, 1),
        "build_cpu_s": round(build_cpu_s, 1),
        "fusion": vars(index.fusion),
        "modes": modes,
    }
    if args.tune:
        result["tuning"] = tune(index, questions, python_docs)
    index.close()
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0


def print_table(result: dict) -> None:
    print(
        f"{result['dataset']} ({result['split']}, {result['questions']} questions, {result['passages']} passages, "
        f"{result['embedding_model']}, build {result['build_s']} s, {result['build_cpu_s']} s of CPU)\n"
    )
    print(
        "| retrieval | recall@5 | answer@5 | evidence@5 | two-hop | nothing returned | (negatives) "
        "| chars shown | query ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for mode, m in result["modes"].items():
        negatives = f"{m['negatives_none']:.2f}" if "negatives_none" in m else "–"
        print(
            f"| {mode} | {m['recall@5']:.2f} | {m['answer@5']:.2f} | {m['evidence@5']:.2f} | {m['two_hop_recall@5']} "
            f"| {m['none']:.2f} | {negatives} | {m['chars']:.0f} | {m['query_ms']:.0f} |"
        )
    if "tuning" in result:
        print("\n| bm25 weight | k | recall@5 |\n|---|---|---|")
        for row in result["tuning"]:
            print(f"| {row['bm25_weight']} | {row['k']} | {row['recall@5']:.2f} |")


if __name__ == "__main__":
    sys.exit(main())

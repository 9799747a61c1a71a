"""Passage vectors kept beside the FTS5 index, dense search over them, and rank fusion.

Vectors live in a plain table keyed by the passage's rowid, so they are stored in the same
SQLite file as the text (the Python docs cache embeds once, then every run reuses them).
Dense search is one matrix product over all passages: a few thousand rows of 512 floats.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
from loguru import logger

from sentient.tools.embeddings import Embedder

SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL);
"""
_EMBED_CHUNK = 64


@dataclass(frozen=True)
class Fusion:
    """How the BM25 and dense rankings are fused (score = sum of weight / (k + rank)), and when a
    search has found nothing relevant.

    Measured on the natural-question dev splits (bench/retrieval_bench.py).
    """

    # BM25 leads (its rank 1 outweighs dense rank 1 twice); dense lifts what BM25 ranks low and
    # brings in passages BM25 cannot see. A small k makes the top ranks count most.
    bm25_weight: float = 2.0
    dense_weight: float = 1.0
    k: int = 5
    # Nothing is relevant when neither the query's words nor its meaning are in the corpus:
    # - words: those of the query that some passage holds carry less than `min_known` of its
    #   weight (each word weighs its inverse document frequency, as in BM25; a word no passage
    #   holds weighs most). Every dev question of three corpora has 0.44 or more of its weight in
    #   its own corpus; questions about another corpus, 0 to 1, half of them under 0.4;
    # - meaning (with vectors): the passage nearest the query stands less than `min_relevance`
    #   (cosine) above the corpus's median passage. An English question's German answer stands
    #   out by about 0.45; the nearest passage of a question about another corpus, 0.07 to 0.45
    #   (medians 0.13 to 0.20), so meaning alone would cut little.
    # Measured with bench/retrieval_bench.py --negatives. Without vectors, words alone decide.
    min_known: float = 0.4
    min_relevance: float = 0.2
    # Document frequencies and a median over a few passages say little (the median of one
    # passage is that passage): a smaller folder is never cut.
    min_passages: int = 20


class Retrieval(Enum):
    """How DocsIndex.search ranks passages."""

    BM25 = "bm25"  # FTS5 full-text ranking only
    DENSE = "dense"  # cosine similarity of sentence vectors only
    HYBRID = "hybrid"  # both, fused by reciprocal rank


class PassageVectors:
    """The vectors of an index's passages: stored in its database, held in memory as a matrix."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        # The caller holds the index's lock around every method: they share its connection.
        self._conn = conn
        self._conn.executescript(SCHEMA)
        self._rowids: np.ndarray | None = None
        self._matrix: np.ndarray | None = None
        self.embedded = 0  # passages this object embedded (a reopened cache embeds none)

    def update(self, embedder: Embedder) -> int:
        """Embed and store every passage that has no vector of `embedder`'s model; return how many."""
        stored_model = self._conn.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
        if stored_model is None or stored_model[0] != embedder.model_id:
            # Vectors of another model live in another space: never mix them.
            self._conn.execute("DELETE FROM vectors")
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('embedding_model', ?)", (embedder.model_id,))
        missing = self._conn.execute(
            "SELECT rowid, title, body FROM passages WHERE rowid NOT IN (SELECT rowid FROM vectors)"
        ).fetchall()
        if len(missing) > 10 * _EMBED_CHUNK:  # minutes on one core: say why the first run is slow
            logger.info("embedding {} passages for hybrid search (once; the vectors are stored)", len(missing))
        for start in range(0, len(missing), _EMBED_CHUNK):
            chunk = missing[start : start + _EMBED_CHUNK]
            # The title is part of what a passage is about ('json.loads', 'Python reference: with').
            vectors = embedder.embed([f"{title}: {body}" for _, title, body in chunk])
            self._conn.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [
                    (rowid, vector.astype(np.float32).tobytes())
                    for (rowid, _, _), vector in zip(chunk, vectors, strict=True)
                ],
            )
        self.embedded += len(missing)
        if missing or self._matrix is None:
            self._load()
        return len(missing)

    def __len__(self) -> int:
        """How many passages have a vector (as last loaded)."""
        return 0 if self._rowids is None else len(self._rowids)

    def forget(self) -> None:
        """Drop every stored vector (the passages are being replaced)."""
        self._conn.execute("DELETE FROM vectors")
        self._rowids = self._matrix = None

    def nearest(self, query: np.ndarray, limit: int) -> tuple[list[tuple[int, float]], float]:
        """The `limit` passages most similar to unit vector `query` as (rowid, cosine), best first,
        and how far the best one stands above the corpus: its cosine less the median passage's
        (0.0 without passages)."""
        if self._matrix is None or self._rowids is None or not len(self._rowids):
            return [], 0.0
        similarity = self._matrix @ query
        limit = min(limit, len(similarity))
        top = np.argpartition(-similarity, limit - 1)[:limit]
        top = top[np.argsort(-similarity[top], kind="stable")]
        relevance = float(similarity[top[0]] - np.median(similarity))
        return [(int(self._rowids[i]), float(similarity[i])) for i in top], relevance

    def _load(self) -> None:
        rows = self._conn.execute(
            "SELECT rowid, vector FROM vectors WHERE rowid IN (SELECT rowid FROM passages) ORDER BY rowid"
        ).fetchall()
        self._rowids = np.array([rowid for rowid, _ in rows], dtype=np.int64)
        self._matrix = (
            np.vstack([np.frombuffer(blob, dtype=np.float32) for _, blob in rows])
            if rows
            else np.zeros((0, 0), dtype=np.float32)
        )


def fuse(rankings: Sequence[tuple[float, Iterable[int]]], k: int) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of (weight, ids best first) rankings: (id, score), best first.

    Ties keep the order in which ids first appear (the first ranking's order wins).
    """
    scores: dict[int, float] = {}
    for weight, ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])

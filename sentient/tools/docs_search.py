"""Local documents search: passages ranked by BM25 (SQLite FTS5) and by sentence vectors, fused.

Documents are split into passages of about 1,200 characters (at headings, then at blank
lines: :mod:`sentient.tools.documents`) so a hit points at a focused piece of text rather than
a whole file. Queries are free user text: they are reduced to quoted word tokens joined with OR,
so no input can produce an FTS5 syntax error.

Given an embedder (``embeddings=default_embedder``: the multilingual Universal Sentence Encoder,
:mod:`sentient.tools.embeddings`), each passage's vector is computed once, when the index is
built, and stored in the same database; a search fuses the dense ranking with BM25 by weighted
reciprocal rank (:mod:`sentient.tools.dense`), so a passage that says the same thing in other
words, or in another language, is found too. "Nothing relevant" is a valid result: when the
words of the query that the corpus holds carry too little of its weight (a question about
something the documents never name: :attr:`~sentient.tools.dense.Fusion.min_known`) and, with
vectors, no passage stands out as near it in meaning (``min_relevance``: a question in another
language than the documents shares no words with them), the search returns no passage at all
rather than five weak ones.

One passage per source is shown by default: its best-ranked one, whole, joined with the passages
either side of it in its section that the search ranked too (an answer often runs on past a
passage's cut). Each passage is shown under its document's title. Every choice here was measured
on questions it was not written for (``bench/retrieval_bench.py``).

`DocsIndex.python_docs` builds the default offline corpus from the documentation that ships
with Python itself (the language reference topics and the standard-library docstrings), so a
run without a docs folder still researches something real.

Sources name a document by its path relative to its folder (``guide/intro.md``; Python's
documents relative to the standard library's folder, ``asyncio/base_events.py#BaseEventLoop``),
never by a path of the machine that indexed it: sources are what reports cite.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sqlite3
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from loguru import logger

from sentient.context.wording import STOPWORDS
from sentient.exceptions import DocsFolderError, EmbeddingModelError
from sentient.tools.dense import Fusion, PassageVectors, Retrieval, fuse
from sentient.tools.documents import (
    MAX_FILE_BYTES,
    bounded_documents,
    check_cancel,
    document_sections,
    document_title,
    packed_sections,
    python_documents,
    split_passages,
)
from sentient.tools.embeddings import Embedder

# Bump when the table layout or the passage rules change, so old caches get rebuilt.
_SCHEMA_VERSION = 6
# Passages each ranking hands to the fusion: enough that one-per-source still fills `limit`.
_CANDIDATES = 100
_WORD = re.compile(r"\w+")
_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS passages
    USING fts5(source UNINDEXED, title, body, tokenize = 'porter unicode61');
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (source TEXT PRIMARY KEY, title TEXT NOT NULL);
"""


@dataclass(frozen=True)
class SearchHit:
    """One search result.

    Attributes:
        source: the file's path relative to its folder (for Python's documentation, to the
            standard library's folder), optionally with a '#anchor' (topic, class or function).
        title: file name, the document's title (when it opens with one) and section headings,
            topic name or module name.
        snippet: what the model is shown: the passage, joined with the neighbouring passages of its
            section that the search ranked too.
        score: relevance, higher is better (BM25, cosine or fused-rank score, by retrieval mode).
        passage: the passage the hit was ranked for, whitespace collapsed.
    """

    source: str
    title: str
    snippet: str
    score: float
    passage: str = ""


EmbedderLoader = Callable[[], Embedder]


@dataclass(frozen=True)
class DocsFolder:
    """A documents folder to index when a run starts, with limits (see :meth:`DocsIndex.from_folder`)."""

    path: Path
    max_files: int | None = None
    max_bytes: int | None = None
    name_only: bool = False
    embeddings: EmbedderLoader | None = None

    def build(self, cancel: threading.Event | None = None) -> DocsIndex:
        return DocsIndex.from_folder(
            self.path,
            embeddings=self.embeddings,
            max_files=self.max_files,
            max_bytes=self.max_bytes,
            name_only=self.name_only,
            cancel=cancel,
        )


class DocsIndex:
    """Index of documents in one SQLite database file (or ':memory:'): FTS5 text plus passage vectors.

    `embeddings` loads the sentence embedder for hybrid search (e.g. `default_embedder`, the
    installed MiniLM); None (the default), or a loader that raises EmbeddingModelError,
    leaves the index on BM25 alone.
    """

    def __init__(self, db_path: Path | str = ":memory:", *, embeddings: EmbedderLoader | None = None) -> None:
        # Searches may come from worker threads; one lock serialises use of the connection.
        self._conn = sqlite3.connect(str(db_path), check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock, self._conn:
            self._conn.executescript(_SCHEMA)
            self._vectors = PassageVectors(self._conn)
            self._empty = self._conn.execute("SELECT 1 FROM passages LIMIT 1").fetchone() is None
        self._loader = embeddings
        self._embedder: Embedder | None = None
        self._vectors_current = False  # every passage has a vector (checked once, then kept up to date)
        self.fusion = Fusion()

    @property
    def empty(self) -> bool:
        """Whether the index holds no passage: a search would find nothing (kept without a query or the lock)."""
        return self._empty

    @property
    def embedded_passages(self) -> int:
        """How many passages this object has embedded (0 when every vector came from the database)."""
        return self._vectors.embedded

    @property
    def embedding_model(self) -> str | None:
        """The model id of the stored passage vectors, or None when none were stored."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
        return row[0] if row else None

    @property
    def default_retrieval(self) -> Retrieval:
        """HYBRID when the index has an embedder that loads, else BM25 (loads it on first use)."""
        with self._lock:
            return Retrieval.HYBRID if self._embedder_now() is not None else Retrieval.BM25

    @classmethod
    def from_folder(
        cls,
        folder: Path | str,
        db_path: Path | str = ":memory:",
        *,
        embeddings: EmbedderLoader | None = None,
        max_files: int | None = None,
        max_bytes: int | None = None,
        name_only: bool = False,
        cancel: threading.Event | None = None,
    ) -> DocsIndex:
        """Index every .md, .txt, .rst, .html/.htm and .py file under `folder` (and embed it, given `embeddings`).

        Files whose real path leaves the folder (symlinks pointing elsewhere) are skipped. Each
        passage's source is its file's path relative to the folder (``guide/intro.md``).

        Args:
            folder: the documents folder.
            db_path: where the index lives.
            max_files: most documents the folder may hold (None: no limit).
            max_bytes: most bytes of documents the folder may hold (None: no limit).
            name_only: errors name the folder only by its name (a server does not reveal its paths).
            cancel: indexing stops (DocsFolderError) soon after this event is set.

        Raises:
            DocsFolderError: the folder is missing, not a directory, over a limit, has nothing
                to index, or indexing was cancelled.
        """
        root, files = cls.check_folder(
            folder, name_only=name_only, max_files=max_files, max_bytes=max_bytes, cancel=cancel
        )
        label = root.name if name_only else str(root)
        index = cls(db_path, embeddings=embeddings)
        try:
            with index._lock, index._conn:
                index._conn.execute("DELETE FROM passages")  # the index mirrors the folder as it is now
                index._conn.execute("DELETE FROM documents")
                index._empty = True
                index._vectors.forget()
                for path in files:
                    check_cancel(cancel, label)
                    try:
                        text = path.read_text(encoding="utf-8", errors="replace")
                    except OSError as exc:  # one unreadable file should not sink the whole folder
                        logger.warning("skipping {}: {}", path, exc)
                        continue
                    source = path.relative_to(root).as_posix()
                    sections = document_sections(path.suffix.lower(), text)
                    if document := document_title(sections):
                        index._conn.execute("INSERT OR REPLACE INTO documents VALUES (?, ?)", (source, document))
                    for headings, body in packed_sections(sections):
                        title = f"{path.name} - {' / '.join(headings)}" if headings else path.name
                        index._insert(source, title, body)
        except DocsFolderError:
            index.close()
            raise
        if not len(index):
            index.close()
            raise DocsFolderError(f"docs folder '{label}' has only empty documents")
        with index._lock, index._conn:
            index._update_vectors()
        logger.info("indexed {} passages from {} files in {}", len(index), len(files), root)
        return index

    @staticmethod
    def check_folder(
        folder: Path | str,
        *,
        name_only: bool = False,
        max_files: int | None = None,
        max_bytes: int | None = None,
        cancel: threading.Event | None = None,
    ) -> tuple[Path, list[Path]]:
        """The folder (resolved) and the files it would index; DocsFolderError if there are none.

        Files over 2 MB are skipped with a warning naming them. ``name_only`` names the folder by
        its name alone in errors (the server does not reveal its paths); the limits and ``cancel``
        are as in :meth:`from_folder`.
        """
        root = Path(folder).expanduser().resolve()
        label = root.name if name_only else str(root)
        if not root.exists():
            raise DocsFolderError(f"docs folder '{label}' does not exist")
        if not root.is_dir():
            raise DocsFolderError(f"docs folder '{label}' is not a directory")
        files: list[Path] = []
        too_big: list[Path] = []
        for path in bounded_documents(root, label, max_files, max_bytes, cancel):
            (files if path.stat().st_size <= MAX_FILE_BYTES else too_big).append(path)
        if too_big:
            names = ", ".join(str(p.relative_to(root)) for p in too_big[:5]) + (", …" if len(too_big) > 5 else "")
            logger.warning("docs folder {}: skipping {} file(s) over 2 MB: {}", label, len(too_big), names)
        if not files and too_big:
            raise DocsFolderError(
                f"docs folder '{label}' has nothing to index: its {len(too_big)} document file(s) are all over"
                f" the 2 MB limit ({names}); split them or add smaller files"
            )
        if not files:
            raise DocsFolderError(
                f"docs folder '{label}' has no .md, .txt, .rst, .html or .py files: add some, or leave out --docs"
            )
        return root, files

    @classmethod
    def python_docs(cls, cache_dir: Path | str, *, embeddings: EmbedderLoader | None = None) -> DocsIndex:
        """Open (building on first use) the index of the documentation installed with Python.

        The index lives in `cache_dir` and is rebuilt when it is missing or was built by
        another schema, Python version or embedding model. The first build embeds every
        passage (a few minutes on one core); later opens reuse the stored vectors.
        """
        cache = Path(cache_dir).expanduser()
        cache.mkdir(parents=True, exist_ok=True)
        db_file = cache / f"pydocs-{sys.version_info.major}.{sys.version_info.minor}.sqlite"
        embedder = _try_load(embeddings)
        base = f"schema={_SCHEMA_VERSION};python={sys.version}"
        marker = f"{base};embeddings={embedder.model_id if embedder else 'none'}"
        loader = (lambda: embedder) if embedder is not None else None
        stored = _stored_marker(db_file) if db_file.is_file() else None
        # Without a model, a cache built with vectors serves BM25 just as well.
        if stored == marker or (embedder is None and stored is not None and stored.startswith(f"{base};")):
            return cls(db_file, embeddings=loader)
        started = time.perf_counter()
        logger.info("building the Python documentation index in {}", db_file)
        # Build beside the target and swap it in atomically: a crash or a concurrent reader
        # never sees a half-built index.
        fd, tmp_name = tempfile.mkstemp(prefix=db_file.name, suffix=".tmp", dir=cache)
        os.close(fd)
        try:
            with cls(tmp_name, embeddings=loader) as builder:
                with builder._lock, builder._conn:
                    # A throwaway file: durability during the build buys nothing.
                    builder._conn.execute("PRAGMA synchronous = OFF")
                    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
                    for source, title, text in python_documents():
                        builder._insert(_relative_to(stdlib, source), title, text)
                    builder._conn.execute("INSERT INTO passages(passages) VALUES ('optimize')")
                    builder._update_vectors()
                    builder._conn.execute("INSERT OR REPLACE INTO meta VALUES ('marker', ?)", (marker,))
                passages = len(builder)
            os.replace(tmp_name, db_file)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
        logger.info("built {} passages in {:.1f}s", passages, time.perf_counter() - started)
        return cls(db_file, embeddings=loader)

    def add_document(self, source: str, title: str, text: str) -> None:
        """Split `text` into passages and add them under `source` and `title`."""
        with self._lock, self._conn:
            self._insert(source, title, text)

    def search(
        self, query: str, limit: int = 5, retrieval: Retrieval | None = None, *, per_source: int = 1
    ) -> list[SearchHit]:
        """Return up to `limit` passages for `query`, best first, at most `per_source` per source.

        `retrieval` picks the ranking (default: `default_retrieval`; DENSE and HYBRID fall back to
        BM25 when the embedding model is unavailable). Any text is accepted. The list is empty when
        the query has no searchable words, or when the corpus holds neither its words nor, with
        vectors, its meaning (:class:`~sentient.tools.dense.Fusion`).
        """
        tokens = _query_tokens(query)
        if not tokens or limit < 1:
            return []
        with self._lock, self._conn:
            embedder = self._embedder_now()
            mode = Retrieval.BM25 if embedder is None else retrieval or Retrieval.HYBRID
            rows: dict[int, tuple[str, str, str]] = {}
            rankings: list[list[tuple[int, float]]] = []
            fusion = self.fusion
            if mode is not Retrieval.DENSE:
                rankings.append(self._bm25(tokens, rows))
            if mode is not Retrieval.BM25 and embedder is not None:
                self._update_vectors()
                dense, relevance = self._vectors.nearest(embedder.embed([query])[0], _CANDIDATES)
                if relevance < fusion.min_relevance and self._unknown(tokens, fusion):
                    return []  # neither its meaning nor its words are in the corpus
                rankings.append(dense)
                self._fetch([rowid for rowid, _ in dense if rowid not in rows], rows)
            elif self._unknown(tokens, fusion):
                return []  # its words are not in the corpus (BM25 alone cannot see its meaning)
        if len(rankings) == 1:
            ranked = rankings[0]
        else:
            weighted = [(fusion.bm25_weight, rankings[0]), (fusion.dense_weight, rankings[1])]
            ranked = fuse([(weight, [rowid for rowid, _ in ranking]) for weight, ranking in weighted], fusion.k)
        best: list[tuple[int, float]] = []
        taken: dict[str, int] = {}
        for rowid, score in ranked:  # best first: the first passage of each source is its best one
            source = rows[rowid][0]
            if taken.get(source, 0) < per_source:
                taken[source] = taken.get(source, 0) + 1
                best.append((rowid, score))
                if len(best) == limit:
                    break
        documents = self._document_titles({rows[rowid][0] for rowid, _ in best})
        chosen = {rowid for rowid, _ in best}
        hits = []
        for rowid, score in best:
            source, title, body = rows[rowid]
            shown = _with_neighbours(rowid, rows, chosen)
            hits.append(SearchHit(source, _shown_title(source, title, documents.get(source)), shown, score, body))
        return hits

    def __len__(self) -> int:
        with self._lock:
            return self._count()

    def close(self) -> None:
        """Close the database connection; closing twice is harmless."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> DocsIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _document_titles(self, sources: set[str]) -> dict[str, str]:
        """The titles of the documents ``sources`` (those that have one)."""
        if not sources:
            return {}
        marks = ",".join("?" * len(sources))
        with self._lock:
            found = self._conn.execute(f"SELECT source, title FROM documents WHERE source IN ({marks})", list(sources))
            return dict(found.fetchall())

    def _insert(self, source: str, title: str, text: str) -> None:
        # Callers hold the lock and own the transaction, so bulk builds commit once.
        rows = [(source, title, passage) for passage in split_passages(text)]
        self._conn.executemany("INSERT INTO passages (source, title, body) VALUES (?, ?, ?)", rows)
        self._vectors_current = False
        self._empty = self._empty and not rows

    def _embedder_now(self) -> Embedder | None:
        """The embedder, loaded on first use; None when disabled or unavailable (caller holds the lock)."""
        if self._loader is not None:
            loader, self._loader = self._loader, None  # one try: a missing model warns once, not per search
            self._embedder = _try_load(loader)
        return self._embedder

    def _update_vectors(self) -> None:
        """Embed the passages that have no vector yet (caller holds the lock and the transaction)."""
        embedder = self._embedder_now()
        if embedder is None or self._vectors_current:
            return
        started = time.perf_counter()
        if count := self._vectors.update(embedder):
            logger.info("embedded {} passages in {:.1f}s", count, time.perf_counter() - started)
        self._vectors_current = True

    def _bm25(self, tokens: list[str], rows: dict[int, tuple[str, str, str]]) -> list[tuple[int, float]]:
        """The best BM25 passages for any of ``tokens`` as (rowid, score), filling `rows` with their text."""
        match = " OR ".join(f'"{token}"' for token in tokens)
        sql = (
            "SELECT rowid, source, title, body, bm25(passages) FROM passages WHERE passages MATCH ? ORDER BY 5 LIMIT ?"
        )
        ranking = []
        for rowid, source, title, body, bm25 in self._conn.execute(sql, (match, _CANDIDATES)):
            rows[rowid] = (source, title, body)
            ranking.append((rowid, -bm25))
        return ranking

    def _unknown(self, tokens: list[str], fusion: Fusion) -> bool:
        """Whether the words of the corpus carry too little of the query's weight
        (:attr:`~sentient.tools.dense.Fusion.min_known`; never in a folder too small to say)."""
        passages = self._count()
        return passages >= fusion.min_passages and _known_share(self._conn, tokens, passages) < fusion.min_known

    def _count(self) -> int:
        """How many passages the index holds (the caller holds the lock)."""
        (count,) = self._conn.execute("SELECT count(*) FROM passages").fetchone()
        return int(count)

    def _fetch(self, rowids: list[int], rows: dict[int, tuple[str, str, str]]) -> None:
        if rowids:
            marks = ",".join("?" * len(rowids))
            sql = f"SELECT rowid, source, title, body FROM passages WHERE rowid IN ({marks})"
            for rowid, source, title, body in self._conn.execute(sql, rowids):
                rows[rowid] = (source, title, body)


def _with_neighbours(rowid: int, rows: dict[int, tuple[str, str, str]], chosen: set[int]) -> str:
    """The passage ``rowid`` joined with the passages either side of it in its section that the
    search ranked too (they are in ``rows``) and that are not hits of their own (``chosen``).

    A section is cut into passages of about ``documents.PASSAGE_CHARS``, and the sentence that
    answers often sits in the next one (measured: bench/retrieval_bench.py).
    """
    source, title, _ = rows[rowid]
    parts = []
    for n in (rowid - 1, rowid, rowid + 1):
        other = rows.get(n)
        if n == rowid or (other is not None and other[:2] == (source, title) and n not in chosen):
            parts.append(rows[n][2])
    return " ".join(parts)


def _shown_title(source: str, title: str, document: str | None) -> str:
    """A passage's title as the model is shown it: the document's title before the passage's
    headings ("policy.md - Key policy (current) / Expiry"). Only shown, never indexed."""
    if not document or document in title:
        return title
    name = Path(source).name
    headings = title_headings(source, title)
    return f"{name} - {document} / {headings}" if headings else f"{name} - {document}"


def title_headings(source: str, title: str) -> str:
    """A passage's title without the file name it begins with: its headings ("" for none).
    Titles are "<file name>" or "<file name> - <headings>" (from_folder); a title of any other
    form is all headings."""
    name = Path(source).name
    return "" if title == name else title.removeprefix(f"{name} - ")


def _known_share(conn: sqlite3.Connection, tokens: list[str], passages: int) -> float:
    """The share of the query's weight carried by the ``tokens`` that some of the ``passages``
    hold. Each token weighs its inverse document frequency, as in BM25, so a token no passage
    holds weighs most, and one that every passage holds next to nothing."""
    known = total = 0.0
    for token in tokens:
        (holding,) = conn.execute("SELECT count(*) FROM passages WHERE passages MATCH ?", (f'"{token}"',)).fetchone()
        weight = math.log((passages - holding + 0.5) / (holding + 0.5) + 1)
        total += weight
        known += weight if holding else 0.0
    return known / total if total else 1.0


def _query_tokens(query: str) -> list[str]:
    words = (w for w in _WORD.findall(query.casefold()) if len(w) > 1 and w not in STOPWORDS)
    return list(dict.fromkeys(words))  # de-duplicated, first-seen order


def _try_load(loader: EmbedderLoader | None) -> Embedder | None:
    """Run `loader`; a missing model is one warning and BM25-only search, not a failure."""
    if loader is None:
        return None
    try:
        return loader()
    except EmbeddingModelError as exc:
        logger.warning("docs search uses BM25 only: {}", exc)
        return None


def _relative_to(folder: Path, source: str) -> str:
    """``source`` (an absolute path, maybe with a ``#anchor``) relative to ``folder``; a file
    outside it is named by its file name."""
    path, mark, anchor = source.partition("#")
    file = Path(path)
    name = file.relative_to(folder).as_posix() if file.is_relative_to(folder) else file.name
    return f"{name}{mark}{anchor}"


def _stored_marker(db_file: Path) -> str | None:
    try:
        conn = sqlite3.connect(f"{db_file.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'marker'").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError:  # not a database, or no meta table: rebuild
        return None
    return row[0] if row else None

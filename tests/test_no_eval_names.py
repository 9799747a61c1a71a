"""No rule is written for an evaluation question: the product's code names no dataset id and no
entity of an evaluation corpus.

A comment or a rule that names "py-022" or a team of the private documents is a sign that the
code was tuned to that example; the eval then measures the tuning, not the product.
"""

from __future__ import annotations

import json
import re
import sysconfig
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT / "bench" / "datasets"
PRODUCT = [ROOT / "sentient", ROOT / "server", ROOT / "agent_configs"]
_WORD = re.compile(r"[^\W\d_]{5,}")
# English words a corpus capitalises in titles that the standard library happens not to use
# ("renewal" of a lease, a "superseded" value, report "assembly", a plan "approved", "talks" with a
# supplier, a "broker", a contract that "renews", a "depot", "pricing": ordinary words the product uses too).
ENGLISH_NOT_IN_STDLIB = {
    "postmortem",
    "routes",
    "senior",
    "renewal",
    "superseded",
    "assembly",
    "approved",
    "talks",
    "broker",
    "renews",
    "depot",
    "pricing",
}
# Real products a corpus mentions by name, as the product's own code does (its PostgreSQL store):
# not invented, so not a name the corpus could have been tuned by.
REAL_PRODUCTS = {"postgresql", "typescript", "redis"}


def _product_files() -> Iterator[Path]:
    for folder in PRODUCT:
        for path in sorted(folder.rglob("*")):
            if path.suffix in {".py", ".yaml", ".yml"}:
                yield path


def _dataset_ids() -> set[str]:
    ids: set[str] = set()
    for path in DATASETS.glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                ids.add(json.loads(line)["id"].casefold())
    return ids


def _english() -> set[str]:
    """Words of Python's own standard library (code, comments and docstrings): ordinary English
    and programming words, which a corpus capitalises in titles without naming anything."""
    words: set[str] = set()
    for path in Path(sysconfig.get_paths()["stdlib"]).rglob("*.py"):
        if not {"site-packages", "test", "tests"} & set(path.parts):
            words.update(w.casefold() for w in _WORD.findall(path.read_text(encoding="utf-8", errors="replace")))
    return words | ENGLISH_NOT_IN_STDLIB | REAL_PRODUCTS


def _corpus_names() -> set[str]:
    """The invented names of the evaluation corpora: words written capitalised more often than
    not, that are not English (in the sense of :func:`_english`)."""
    english = _english()
    names: set[str] = set()
    for folder in (p for p in DATASETS.iterdir() if p.is_dir() and p.name != "tools"):
        capitalised: Counter[str] = Counter()
        lower: Counter[str] = Counter()
        for path in (p for p in folder.rglob("*") if p.is_file()):
            for word in _WORD.findall(path.read_text(encoding="utf-8", errors="replace")):
                (capitalised if word[0].isupper() else lower)[word.casefold()] += 1
        names |= {w for w, n in capitalised.items() if n > lower[w] and w not in english}
    return names


def _product_words() -> dict[str, set[str]]:
    """Every word of the product's code and configuration, with the files it occurs in."""
    where: dict[str, set[str]] = {}
    for path in _product_files():
        for word in re.findall(r"[\w-]+", path.read_text(encoding="utf-8")):
            where.setdefault(word.casefold(), set()).add(str(path.relative_to(ROOT)))
    return where


def test_the_product_names_no_dataset_id() -> None:
    ids = _dataset_ids()
    assert len(ids) > 100  # the datasets were found
    where = _product_words()
    leaks = {i: sorted(where[i]) for i in ids if i in where}
    assert not leaks, f"dataset ids in the product's code: {leaks}"


def test_the_product_names_no_entity_of_an_evaluation_corpus() -> None:
    names = _corpus_names()
    assert len(names) > 20  # the corpora were found
    where = _product_words()
    leaks = {n: sorted(where[n]) for n in names if n in where}
    assert not leaks, f"names from an evaluation corpus in the product's code: {leaks}"

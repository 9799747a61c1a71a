"""The dashboard's report types are generated from the server's response models, and the
committed file is what the generator writes today."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, JsonValue

from sentient_server.wire_types import TARGET, UnsupportedSchema, main, typescript


def test_the_committed_typescript_is_what_the_models_generate() -> None:
    assert TARGET.read_text(encoding="utf-8") == typescript(), "run: python -m server.wire_types"
    assert main(["--check"]) == 0


class Leaf(BaseModel):
    """A leaf."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    name: str
    weight: float | None
    kind: Literal["a", "b"] = "a"
    """Which kind."""


class Tree(BaseModel):
    leaves: list[Leaf]
    tags: list[str | int]
    root: Leaf | None = None
    fixed: Literal["tree"]
    count: int = 0


def test_objects_arrays_unions_enums_optionals_and_refs_are_translated() -> None:
    text = typescript([Tree])

    assert "/** A leaf. */\nexport interface Leaf {\n  name: string;\n  weight: number | null;\n" in text
    assert '  /** Which kind. */\n  kind?: "a" | "b";\n}\n' in text  # validation default: may be left out
    assert "export interface Tree {\n  leaves: Leaf[];\n  tags: (string | number)[];\n" in text
    assert '  root?: Leaf | null;\n  fixed: "tree";\n  count?: number;\n}\n' in text
    assert text.index("interface Leaf") < text.index("interface Tree")


class Untranslatable(BaseModel):
    pair: tuple[int, str]


def test_a_shape_without_a_translation_is_an_error_not_unknown() -> None:
    with pytest.raises(UnsupportedSchema, match="prefixItems"):
        typescript([Untranslatable])


class Mappings(BaseModel):
    table: dict[str, list[int]]
    options: dict[str, Any]
    anything: JsonValue


def test_a_mapping_is_a_record_and_any_json_value_is_unknown() -> None:
    text = typescript([Mappings])

    assert "  table: Record<string, number[]>;\n  options: Record<string, unknown>;\n  anything: JsonValue;\n" in text
    assert "export type JsonValue = unknown;\n" in text


def test_check_fails_on_a_stale_or_missing_file_until_it_is_written(tmp_path: Path) -> None:
    target = tmp_path / "report.generated.ts"
    assert main(["--check"], target) == 1
    target.write_text(typescript().replace("verified: boolean", "verified: string"), encoding="utf-8")
    assert main(["--check"], target) == 1

    assert main([], target) == 0

    assert target.read_text(encoding="utf-8") == typescript() and main(["--check"], target) == 0
    assert main(["--bogus"], target) == 2

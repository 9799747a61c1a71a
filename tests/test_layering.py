"""The layering holds: graph <- engine <- agents/context/tools <- projects <- (API, CLI, server).

Every module of a guarded package is parsed, and each of its imports (at module level, inside
functions, under ``if TYPE_CHECKING:``, relative ones resolved, ``importlib.import_module`` with a
literal name) is checked against the packages that layer must not reach. Importing the bare
``sentient`` package counts too: its ``__init__`` re-exports every layer.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The server's import name is `server` today and may become `sentient_server`: both are above every layer.
_SERVER = ("server", "sentient_server")
# Web and command-line frameworks belong to the adapters.
_FRAMEWORKS = ("flask", "flask_socketio", "socketio", "werkzeug", "argparse", "rich")
_ABOVE_ENGINE = ("sentient.agents", "sentient.store", "sentient.projects", "sentient.cli", "sentient.api", *_SERVER)

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "sentient.graph": (
        *_ABOVE_ENGINE,
        "sentient.engine",
        "sentient.context",
        "sentient.tools",
        "sentient.hitl",
    ),
    "sentient.engine": _ABOVE_ENGINE,
    "sentient.agents": (
        "sentient.engine",
        "sentient.store",
        "sentient.cli",
        "sentient.api",
        "sentient.projects",
        *_SERVER,
    ),
    # The report is a value built from the graph: the API, the CLI and the server render it, not the reverse.
    "sentient.report": (*_ABOVE_ENGINE, "sentient.engine"),
    # The lifecycle service: the API, the CLI and the server are adapters over it, not the reverse,
    # and it stays free of web and command-line code.
    "sentient.projects": ("sentient.cli", "sentient.api", *_SERVER, *_FRAMEWORKS),
}


@dataclass(frozen=True)
class Violation:
    module: str
    line: int
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.imported} (forbidden: {self.rule})"


def imported_names(tree: ast.Module, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every module name ``tree`` imports, with its line: ``from a import b`` yields ``a.b``."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names if alias.name != "*"]
            if any(alias.name == "*" for alias in node.names):
                found.append((node.lineno, base))
        elif isinstance(node, ast.Call) and _is_import_call(node.func):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append((node.lineno, first.value))
    return found


def _is_import_call(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in ("__import__", "import_module")
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def _is_submodule(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


def violations(source: str, module: str, is_package: bool = False) -> list[Violation]:
    """The imports of ``source`` (the text of ``module``) that its layer forbids."""
    layer = next((name for name in FORBIDDEN if module == name or module.startswith(name + ".")), None)
    if layer is None:
        return []
    tree = ast.parse(source)
    found = []
    for line, name in imported_names(tree, module, is_package):
        if name.rpartition(".")[0] == "sentient" and not _is_submodule(name):
            name = "sentient"  # `from sentient import TaskGraph`: a name from the package root
        if name == "sentient":
            found.append(Violation(module, line, name, "the bare sentient package, which imports every layer"))
            continue
        for prefix in FORBIDDEN[layer]:
            if name == prefix or name.startswith(prefix + "."):
                found.append(Violation(module, line, name, f"{layer} must not import {prefix}"))
    return found


def guarded_modules() -> list[tuple[str, Path]]:
    modules = []
    for layer in FORBIDDEN:
        folder = ROOT.joinpath(*layer.split("."))
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return modules


@pytest.mark.parametrize(("module", "path"), guarded_modules(), ids=[m for m, _ in guarded_modules()])
def test_module_imports_nothing_from_the_layers_above_it(module: str, path: Path) -> None:
    found = violations(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
    assert not found, "imports that run back up the layering:\n" + "\n".join(map(str, found))


def test_every_guarded_layer_has_modules() -> None:
    layers = {
        next(layer for layer in FORBIDDEN if m == layer or m.startswith(layer + ".")) for m, _ in guarded_modules()
    }
    assert layers == set(FORBIDDEN)


# -- the checker finds what it must ------------------------------------------------------------


def test_plain_and_from_imports_of_a_higher_layer_are_reported() -> None:
    source = "import sentient.store.writer\nfrom sentient.agents.runner import AgentRunner\nimport asyncio\n"
    found = violations(source, "sentient.engine.scheduler")
    assert [(v.line, v.imported) for v in found] == [
        (1, "sentient.store.writer"),
        (2, "sentient.agents.runner.AgentRunner"),
    ]
    assert str(found[1]) == (
        "sentient.engine.scheduler:2 imports sentient.agents.runner.AgentRunner "
        "(forbidden: sentient.engine must not import sentient.agents)"
    )


def test_type_checking_and_function_level_imports_are_reported() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from sentient.hitl.protocol import PlanReviewer\n"
        "def late():\n"
        "    import sentient.context.builder\n"
    )
    found = violations(source, "sentient.graph.task_graph")
    assert [v.imported for v in found] == ["sentient.hitl.protocol.PlanReviewer", "sentient.context.builder"]


def test_relative_imports_are_resolved_before_checking() -> None:
    assert [v.imported for v in violations("from ..agents import runner\n", "sentient.engine.scheduler")] == [
        "sentient.agents.runner"
    ]
    assert [v.imported for v in violations("from .. import engine\n", "sentient.graph", is_package=True)] == [
        "sentient.engine"
    ]
    assert violations("from .status import TaskStatus\n", "sentient.graph.node") == []


def test_either_name_of_the_server_package_is_reported() -> None:
    source = "from server.bridge import EngineBridge\nimport sentient_server.runs\n"
    found = violations(source, "sentient.engine.scheduler")
    assert [v.imported for v in found] == ["server.bridge.EngineBridge", "sentient_server.runs"]


def test_the_package_root_and_dynamic_imports_are_reported() -> None:
    source = "from sentient import TaskGraph\nimport importlib\nimportlib.import_module('sentient.cli.main')\n"
    found = violations(source, "sentient.engine.resume")
    assert [v.imported for v in found] == ["sentient", "sentient.cli.main"]


def test_imports_a_layer_may_make_are_not_reported() -> None:
    source = (
        "from sentient.graph.node import TaskNode\nfrom sentient.events import EventBus\nimport sentient.settings\n"
    )
    assert violations(source, "sentient.engine.scheduler") == []
    assert violations("from sentient.engine.scheduler import ExecutionEngine\n", "sentient.api") == []


def test_the_project_service_may_not_import_a_web_or_command_line_framework() -> None:
    source = "import argparse\nfrom flask import Flask\nfrom sentient.store import ProjectStore\n"
    found = violations(source, "sentient.projects.service")
    assert [v.imported for v in found] == ["argparse", "flask.Flask"]

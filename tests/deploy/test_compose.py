"""deploy/compose.yaml and deploy/Dockerfile: valid, and in step with the CLI and the settings.

No container runs here (CI has no Docker daemon). What can drift is checked instead: the compose
file against the Compose Specification's own JSON schema (compose-spec.json, from
github.com/compose-spec/compose-spec, Apache-2.0), every ``sentient`` command in it and the
image's CMD against the real CLI parser, every SENTIENT_* variable against what the code reads,
and every file the Dockerfile copies against the checkout.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from sentient.cli.main import build_parser
from sentient.settings import Settings

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def test_the_compose_file_follows_the_compose_specification(compose: dict[str, Any]) -> None:
    schema = json.loads((Path(__file__).parent / "compose-spec.json").read_text(encoding="utf-8"))
    jsonschema.validate(compose, schema)


def test_it_runs_two_web_processes_two_workers_postgres_and_redis(compose: dict[str, Any]) -> None:
    services = compose["services"]
    commands = {name: service.get("command", []) for name, service in services.items()}
    web = [name for name, command in commands.items() if command[:2] == ["sentient", "serve"]]
    assert len(web) == 2
    assert commands["worker"][:2] == ["sentient", "worker"] and services["worker"]["deploy"]["replicas"] == 2
    assert {"postgres", "redis"} <= set(services)
    for name in web:  # published on the host's loopback only
        assert all(port.startswith("127.0.0.1:") for port in services[name]["ports"])


def test_every_sentient_command_is_one_the_cli_takes(compose: dict[str, Any]) -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    cmd = re.search(r"^CMD (\[.*\])$", dockerfile, re.MULTILINE)
    assert cmd is not None, "the Dockerfile has no CMD in exec form"
    image_cmd = json.loads(cmd.group(1))
    commands = [s["command"] for s in compose["services"].values() if s.get("command", [""])[0] == "sentient"]
    for command in [*commands, image_cmd]:
        build_parser().parse_args(command[1:])  # argparse exits (SystemExit) on an unknown option


def test_every_sentient_variable_is_one_the_code_reads(compose: dict[str, Any]) -> None:
    code = "\n".join(
        p.read_text(encoding="utf-8") for folder in ("sentient", "server") for p in (REPO / folder).rglob("*.py")
    )
    known = {f"SENTIENT_{name.upper()}" for name in Settings.model_fields}
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    names = set(re.findall(r"\b(SENTIENT_[A-Z_]+)=", dockerfile))
    for service in compose["services"].values():
        names |= {n for n in service.get("environment", {}) if n.startswith("SENTIENT_")}
    assert names
    for name in names:
        assert name in known or f'"{name}"' in code, f"{name} is read nowhere"


def test_every_file_the_image_copies_is_in_the_checkout() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    copied = [shlex.split(line)[1:-1] for line in dockerfile.splitlines() if line.startswith("COPY ")]
    assert copied
    for sources in copied:
        for source in sources:
            assert (REPO / source).exists(), source

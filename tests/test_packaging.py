"""The wheel that ``pip install .`` builds: profiles and dashboard inside it, ``sentient_server``, no ``server``.

The wheel is built without build isolation (no network) from a copy of the sources, unpacked in a
temp folder and used from there by a child Python: what an installed copy does, without installing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from sentient.resources import agent_configs_dir, bundled_dir
from sentient.settings import Settings
from sentient_server.config import ServerSettings

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "sentient", "server", "agent_configs", "dashboard/dist")


def source_files(folder: str) -> set[str]:
    """Every file under a repository folder, relative to it, compiled files left out."""
    root = REPO / folder
    return {
        path.relative_to(root).as_posix()
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, src / name)
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(out),
            ".",
        ],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (built,) = out.glob("sentient-*.whl")
    return built


def test_the_checkout_reads_profiles_and_dashboard_from_the_top_level_folders() -> None:
    assert agent_configs_dir() == REPO / "agent_configs"
    assert Settings().config_dir == REPO / "agent_configs"
    assert ServerSettings().dashboard_dir == REPO / "dashboard" / "dist"


def test_a_folder_inside_the_installed_package_wins_over_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "shipping_pkg"
    (package / "_data" / "profiles").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert bundled_dir("shipping_pkg", "_data/profiles", "profiles") == package / "_data" / "profiles"
    shutil.rmtree(package / "_data")
    assert bundled_dir("shipping_pkg", "_data/profiles", "profiles") == tmp_path / "site" / "profiles"


def test_the_wheel_holds_both_packages_the_profiles_and_the_dashboard(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    top = {name.split("/", 1)[0] for name in names}
    assert top == {"sentient", "sentient_server", "sentient-0.1.0.dist-info"}, top
    for py in source_files("sentient"):  # a subpackage missing from [tool.setuptools] packages fails here
        assert f"sentient/{py}" in names, f"sentient/{py} is not in the wheel: list its package in pyproject.toml"
    for py in source_files("server"):
        assert f"sentient_server/{py}" in names, f"server/{py} is not in the wheel as sentient_server/{py}"
    for data in source_files("agent_configs"):
        assert f"sentient/_data/agent_configs/{data}" in names
    for asset in source_files("dashboard/dist"):
        assert f"sentient_server/_data/dashboard/{asset}" in names
    entry_points = zipfile.ZipFile(wheel).read("sentient-0.1.0.dist-info/entry_points.txt").decode()
    assert "sentient = sentient.cli.main:main" in entry_points


INSTALLED_CHECK = textwrap.dedent(
    """
    import importlib.util, json, sys
    from pathlib import Path

    import sentient
    from sentient.agents.registry import AgentRegistry
    from sentient.settings import Settings
    from sentient_server import ServerSettings, create_app, shutdown

    settings = Settings(results_dir=Path("results"), cache_dir=Path("cache"))
    app = create_app(ServerSettings(sentient=settings, resume_on_start=False))
    try:
        page = app.test_client().get("/")
        profiles = app.test_client().get("/api/profiles").get_json()
    finally:
        shutdown(app)
    print(json.dumps({
        "sentient": sentient.__file__,
        "config_dir": str(settings.config_dir),
        "profiles": sorted(AgentRegistry.load(settings.config_dir).profile_names()),
        "dashboard_dir": str(ServerSettings().dashboard_dir),
        "index": [page.status_code, page.mimetype, "<div id=\\"root\\">" in page.get_data(as_text=True)],
        "api_profiles": sorted(p["name"] for p in profiles["profiles"]),
        "server_importable": importlib.util.find_spec("server") is not None,
    }))
    """
)


def test_the_unpacked_wheel_loads_its_profiles_and_serves_its_dashboard(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    run = subprocess.run(
        [sys.executable, "-c", INSTALLED_CHECK],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["sentient"] == str(site / "sentient" / "__init__.py")
    assert seen["config_dir"] == str(site / "sentient" / "_data" / "agent_configs")
    assert {"deep_research_agent", "general_agent"} <= set(seen["profiles"])
    assert seen["dashboard_dir"] == str(site / "sentient_server" / "_data" / "dashboard")
    assert seen["index"] == [200, "text/html", True]
    assert seen["api_profiles"] == seen["profiles"]
    assert seen["server_importable"] is False

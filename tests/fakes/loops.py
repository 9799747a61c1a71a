"""A general_agent researching a one-page docs folder about event loops, for the tests of stored
projects (resume, rerun, follow-ups); each test's settings give it a folder of its own."""

from __future__ import annotations

from pathlib import Path

from sentient import ProfiledSentientAgent
from sentient.agents.models.fake import ScriptedModel
from sentient.settings import Settings

LOOPS = "An event loop runs callbacks and coroutines."  # what the docs say
CONCURRENCY = 2  # model calls at once
FLAT = {"max_depth": 1, "skip_atomization": True}  # the root plans one level of subtasks, none atomized


def loops_docs(settings: Settings) -> Path:
    """The docs folder beside the settings' cache, holding ``loops.md`` (:data:`LOOPS`)."""
    folder = settings.cache_dir.parent / "docs"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "loops.md").write_text(f"# Event loops\n\n{LOOPS}\n")
    return folder


def agent(settings: Settings, model: ScriptedModel, *, flat: bool = True, **engine: object) -> ProfiledSentientAgent:
    """A general_agent whose every call goes to ``model``, over :func:`loops_docs`, with :data:`CONCURRENCY`
    calls at once and, when ``flat`` (the default), :data:`FLAT`. Other keyword arguments are engine
    overrides."""
    defaults = {"max_concurrent_llm_calls": CONCURRENCY, **(FLAT if flat else {})}
    return ProfiledSentientAgent.create_with_profile(
        "general_agent", settings=settings, model=model, docs=loops_docs(settings), **{**defaults, **engine}
    )

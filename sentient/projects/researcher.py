"""What a project runs with: the profile, its models, the reviewer and the documents to research."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from agno.models.base import Model

from sentient.agents.models.factory import ModelFactory
from sentient.agents.models.gates import ProviderGates
from sentient.agents.registry import Profile
from sentient.exceptions import ConfigError
from sentient.hitl.protocol import AutoApprove, PlanReviewer
from sentient.settings import EngineSettings, ReviewTimeoutAction, Settings
from sentient.tools.base import CircuitBreaker, ToolSettings
from sentient.tools.confirm import CallApproval
from sentient.tools.docs_search import DocsFolder, DocsIndex
from sentient.tools.embeddings import default_embedder
from sentient.tools.mcp_servers import McpSession, McpStartError, connect
from sentient.tools.specs import McpServer
from sentient.tools.toolbox import ToolBox


class Researcher:
    """The injected dependencies of a project's runs (per-run state lives in
    :class:`~sentient.projects.run.ProjectRun`). Checks the models and the docs folder now,
    before any project exists. Researchers given the same ``gates`` share each provider key's
    limits (the project service gives all of its researchers one)."""

    def __init__(
        self,
        profile: Profile,
        settings: Settings,
        *,
        engine_settings: EngineSettings,
        model: Model | None = None,
        model_string: str | None = None,
        reviewer: PlanReviewer | None = None,
        docs: Path | DocsFolder | DocsIndex | None = None,
        gates: ProviderGates | None = None,
    ) -> None:
        self.profile = profile
        self.settings = settings
        self.engine_settings = engine_settings
        self.models = ModelFactory(
            settings,
            profile,
            override=model,
            model=model_string,
            timeout_s=engine_settings.agent_timeout_s,
            gates=gates,
        )
        self.models.check()
        self.reviewer: PlanReviewer = reviewer or AutoApprove()
        self._call_reviewer = reviewer  # approves calls of tools marked confirm: true; None declines them
        if isinstance(docs, Path):
            DocsIndex.check_folder(docs)  # an empty or missing folder fails now, before any project exists
        self._docs_source = docs
        self._docs: DocsIndex | None = docs if isinstance(docs, DocsIndex) else None
        self._model_string = model_string

    def options(self) -> dict[str, Any]:
        """How this researcher runs a project (stored with it, so a resume runs the same way)."""
        docs = self._docs_source
        return {
            "model": self._model_string,
            "default_model": self.settings.model,
            "offline": self.settings.offline,
            "docs": str(docs.expanduser().resolve()) if isinstance(docs, Path) else None,
        }

    async def toolboxes(self, stack: AsyncExitStack) -> dict[str, ToolBox]:
        """Each agent's tools for one run; web tools share one breaker (offline: one warning per run).
        Each agent's MCP servers are started now and stop when ``stack`` closes; one that does not
        start, or that an offline run would reach by URL over the network, is a ConfigError naming
        agents.yaml, the agent and the server."""
        docs = await self._docs_index()
        settings = ToolSettings(offline=self.settings.offline)
        breaker = CircuitBreaker("web search")
        engine = self.engine_settings
        approval = CallApproval(
            self._call_reviewer,
            timeout_s=engine.review_timeout_s,
            approve_on_timeout=engine.review_timeout_action is ReviewTimeoutAction.APPROVE,
        )
        self._check_offline()
        boxes: dict[str, ToolBox] = {}
        for agent in self.profile.agents():
            if agent.tools or agent.mcp:
                sessions = [await self._start(agent.name, server, stack) for server in agent.mcp]
                boxes[agent.name] = ToolBox.for_agent(
                    agent.tools, settings, docs, breaker=breaker, mcp=sessions, approval=approval
                )
        return boxes

    def _check_offline(self) -> None:
        """Offline, no agent's MCP server may be reached by URL off this machine (checked before
        any server starts)."""
        if not self.settings.offline:
            return
        for agent in self.profile.agents():
            for server in agent.mcp:
                if server.remote:
                    raise self._server_error(
                        agent.name,
                        server,
                        f"offline: MCP server '{server.name}' is reached by URL ({server.url}).",
                        "run without --offline, or use a server on this machine (localhost, 127.0.0.1, ::1)"
                        " or over stdio (command:).",
                    )

    async def _start(self, agent: str, server: McpServer, stack: AsyncExitStack) -> McpSession:
        agents_file = self.profile.agents_file
        folder = agents_file.parent if agents_file is not None else Path.cwd()
        try:
            return await connect(server, stack, folder)
        except McpStartError as exc:
            raise self._server_error(
                agent, server, f"{exc}.", "check its command or url, or start it by hand to see why."
            ) from exc

    def _server_error(self, agent: str, server: McpServer, message: str, fix: str) -> ConfigError:
        """A ConfigError naming agents.yaml, the agent and its MCP server."""
        agents_file = self.profile.agents_file
        return ConfigError(
            message,
            file=str(agents_file) if agents_file is not None else None,
            field=f"agents ({agent}).mcp ({server.name})",
            fix=fix,
        )

    async def _docs_index(self) -> DocsIndex | None:
        if not any("docs_search" in a.tools for a in self.profile.agents()):
            return None
        if self._docs is None:
            source = self._docs_source
            folder = source if isinstance(source, Path | DocsFolder) else None  # else: Python's docs
            # Indexing runs in a thread, which a cancelled run cannot interrupt: it is told to stop.
            cancel = threading.Event()
            try:
                self._docs = await asyncio.to_thread(open_docs_index, folder, self.settings, cancel)
            except asyncio.CancelledError:
                cancel.set()
                raise
        return self._docs


def open_docs_index(
    folder: Path | DocsFolder | None, settings: Settings, cancel: threading.Event | None = None
) -> DocsIndex:
    """The index a run researches: ``folder``, or Python's own documentation; hybrid (BM25 and
    sentence vectors) when ``settings.retrieval`` says so. Blocking: call it from a thread;
    setting ``cancel`` stops a folder's indexing."""
    embeddings = default_embedder if settings.retrieval == "hybrid" else None
    if folder is not None:
        docs = folder if isinstance(folder, DocsFolder) else DocsFolder(folder)
        return dataclasses.replace(docs, embeddings=embeddings).build(cancel)
    return DocsIndex.python_docs(settings.cache_dir, embeddings=embeddings)

"""How ``agents.yaml`` names an agent's tools beyond the built-in ones: your own Python callables
(``tools: [{callable: "mypkg.tools:lookup"}]``) and MCP servers (``mcp: [{name: wiki, command: [...]}]``).

Both may be marked ``confirm: true``: each call then waits for the run's reviewer to approve it.
An offline run reaches no MCP server by URL unless it is on this machine (:attr:`McpServer.remote`).
"""

from __future__ import annotations

import ipaddress
from typing import Self
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

_NAME = r"^[A-Za-z0-9_\-]+$"


class CallableTool(BaseModel):
    """A Python callable as a tool; its arguments come from its signature, its description from its docstring."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    callable: str = Field(
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", description="'module:function', importable by Python."
    )
    name: str | None = Field(
        None, pattern=_NAME, description="The name the model calls it by; default: the function's."
    )
    confirm: bool = Field(False, description="Ask the reviewer before each call (tools with side effects).")


ToolEntry = str | CallableTool  # a built-in tool's name, or your own callable


class McpServer(BaseModel):
    """An MCP server whose tools an agent may call: a command (stdio) or a URL (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=_NAME, description="Names the server in tool names (wiki_lookup), traces and sources.")
    command: list[str] | None = Field(None, min_length=1, description="stdio: the program and its arguments.")
    url: str | None = Field(None, pattern=r"^https?://", description="streamable HTTP: the server's MCP endpoint.")
    env: dict[str, str] = Field(default_factory=dict, description="stdio: extra environment variables.")
    cwd: str | None = Field(None, description="stdio: the working directory; default: the agents.yaml folder.")
    timeout_s: float = Field(30.0, gt=0, description="Time limit of starting the server and of each call.")
    tools: list[str] | None = Field(None, description="Only these of its tools; default: all.")
    confirm: bool = Field(False, description="Ask the reviewer before each call of its tools.")

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' (stdio) or 'url' (streamable HTTP)")
        return self

    @property
    def remote(self) -> bool:
        """Whether the server is reached by a URL whose host is not this machine (loopback:
        ``localhost``, 127.0.0.0/8, ``::1``); an offline run refuses such a server."""
        if self.url is None:
            return False
        host = (urlsplit(self.url).hostname or "").casefold().rstrip(".")
        if host == "localhost":
            return False
        try:
            return not ipaddress.ip_address(host).is_loopback
        except ValueError:  # a name other than localhost: resolving it would already use the network
            return True

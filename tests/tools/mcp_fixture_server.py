"""A small MCP server for the tests: ``python mcp_fixture_server.py`` serves stdio,
``python mcp_fixture_server.py http PORT`` streamable HTTP on 127.0.0.1:PORT/mcp.

Its tools: ``lookup`` (a tiny wiki), ``slow`` (sleeps), ``fails`` (reports an error),
``cite`` (returns a resource link) and ``add_note`` (a side effect: appends to the file
named by the NOTES environment variable).
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ResourceLink

WIKI = {
    "kestrel": "Kestrel is the internal billing service; its on-call rotation is weekly.",
    "osprey": "Osprey is the search gateway; it times out after 750 ms.",
}

server = MCPServer("fixture")


@server.tool()
def lookup(term: str) -> str:
    """Look a term up in the team wiki."""
    return WIKI.get(term.casefold(), f"No wiki page for {term}.")


@server.tool()
def slow(seconds: float) -> str:
    """Wait, then answer."""
    time.sleep(seconds)
    return "done"


@server.tool()
def fails(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)


@server.tool()
def cite(term: str) -> list[ResourceLink]:
    """A link to the wiki page of a term."""
    return [ResourceLink(uri=f"https://wiki.example/{term}", name=f"{term} page", description=WIKI.get(term, ""))]


@server.tool()
def add_note(text: str) -> str:
    """Append a note to the notes file."""
    with open(os.environ["NOTES"], "a", encoding="utf-8") as notes:
        notes.write(text + "\n")
    return "noted"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()

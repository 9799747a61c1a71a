"""Fetch a web page and extract its main text, refusing URLs that point inside the network.

Every hop is checked before it is requested: only http and https, and (unless
``allow_private_urls``) the host must resolve only to public addresses; redirects are
followed by hand so each target gets the same check. The body is streamed and cut at
``fetch_max_bytes``, the whole fetch runs under ``fetch_timeout_s``, and only HTML and plain
text are read. Main text comes from trafilatura, with a plain tag-stripper as the fallback.

Limitation: the address check and the connection resolve the name separately, so a DNS
server that answers differently the second time (DNS rebinding) is not stopped.
"""

from __future__ import annotations

import asyncio
import html
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

import httpx
from pydantic import Field

from sentient.exceptions import ToolError
from sentient.graph.node import Source
from sentient.tools.base import SignatureTool, ToolOutput, ToolSettings
from sentient.tools.documents import html_to_text

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = _HTML_TYPES | {"text/plain"}
_USER_AGENT = "Mozilla/5.0 (compatible; SentientResearch/0.1; +https://github.com/sentient)"
_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_BLANK_RUNS = re.compile(r"\n\s*\n\s*")
_SNIPPET_CHARS = 300
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class FetchRefusedError(ToolError):
    """A URL or response the fetcher will not read (scheme, address, content type).

    Attributes:
        url: the URL refused.
        reason: why, in a few words.
    """

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(f"refused to fetch {url}: {reason}")


@dataclass(frozen=True)
class Page:
    """A fetched page.

    Attributes:
        url: where the text came from, after redirects.
        title: the page's <title>, or "" when it has none.
        text: the main text, paragraphs separated by blank lines.
        truncated: the body was longer than `fetch_max_bytes` and was cut.
    """

    url: str
    title: str
    text: str
    truncated: bool = False


async def check_url(url: str, settings: ToolSettings) -> httpx.URL:
    """Validate one hop: http(s) only, and a public host unless private URLs are allowed.

    Raises:
        FetchRefusedError: the scheme or the address is not allowed.
        ToolError: the URL cannot be parsed or its host cannot be resolved.
    """
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ToolError(f"invalid URL {url!r}: {exc}") from exc
    if parsed.scheme not in ("http", "https"):
        raise FetchRefusedError(url, f"only http and https URLs can be fetched, not {parsed.scheme or 'no scheme'}")
    if not parsed.host:
        raise FetchRefusedError(url, "the URL has no host")
    if settings.allow_private_urls:
        return parsed
    for address in await _resolve(parsed.host, parsed.port or (443 if parsed.scheme == "https" else 80)):
        reason = blocked_reason(address)
        if reason:
            raise FetchRefusedError(url, f"{parsed.host} is a {reason} address ({address})")
    return parsed


def blocked_reason(address: IPAddress) -> str | None:
    """Why `address` must not be fetched ('loopback', 'private'...), or None if it is public.

    An IPv6 address that embeds an IPv4 one (IPv4-mapped or -compatible, 6to4, NAT64, Teredo)
    may reach that IPv4 host through a relay or the host's own stack, so the embedded address
    is checked too: ``2002:7f00:1::`` is as much loopback as ``127.0.0.1``.
    """
    if isinstance(address, ipaddress.IPv6Address) and (embedded := _embedded_ipv4(address)):
        # The packet ends up at the IPv4 host(s): their addresses decide.
        return next((reason for ipv4 in embedded if (reason := blocked_reason(ipv4))), None)
    for attribute, label in (
        ("is_loopback", "loopback"),
        ("is_link_local", "link-local"),
        ("is_multicast", "multicast"),
        ("is_unspecified", "unspecified"),
        ("is_reserved", "reserved"),
        ("is_private", "private"),
    ):
        if getattr(address, attribute):
            return label
    return None if address.is_global else "non-public"


_NAT64_PREFIXES = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries by a standard embedding (none for most)."""
    found: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)  # (server, client): the client is the obfuscated one
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if any(address in prefix for prefix in _NAT64_PREFIXES):
        found.append(low32)
    if address in _IPV4_COMPATIBLE and int(address) > 1:  # ::a.b.c.d, deprecated; not :: or ::1
        found.append(low32)
    return found


async def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass  # a name, not a literal address
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ToolError(f"cannot resolve host {host}: {exc}") from exc
    # Every address must be public: the connection may use any of them.
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]


HopCheck = Callable[[str, ToolSettings], Awaitable[httpx.URL]]


async def fetch_page(url: str, settings: ToolSettings, *, check: HopCheck = check_url) -> Page:
    """Fetch `url` and extract its title and main text.

    `check` validates every hop (the URL and each redirect target) before it is requested;
    the default is :func:`check_url`.

    Raises:
        FetchRefusedError: a refused scheme, address or content type (on any hop).
        ToolError: offline, a network error, an HTTP error status, too many redirects, or
            the time limit.
    """
    if settings.offline:
        raise ToolError(f"cannot fetch {url}: Sentient is running offline (web tools are off)")
    try:
        async with asyncio.timeout(settings.fetch_timeout_s):
            return await _fetch(url, settings, check)
    except TimeoutError as exc:
        raise ToolError(f"fetching {url} took longer than {settings.fetch_timeout_s:g}s") from exc


async def _fetch(url: str, settings: ToolSettings, check: HopCheck) -> Page:
    # trust_env=False: a proxy from the environment would hide the address we just checked.
    async with httpx.AsyncClient(
        follow_redirects=False,
        trust_env=False,
        timeout=settings.fetch_timeout_s,
        headers={"User-Agent": _USER_AGENT, "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9"},
    ) as client:
        current = url
        for _ in range(settings.fetch_max_redirects + 1):
            target = await check(current, settings)
            try:
                async with client.stream("GET", target) as response:
                    if response.is_redirect:
                        current = str(target.join(response.headers["location"]))
                        continue
                    if response.status_code >= 400:
                        raise ToolError(f"fetching {current} failed: HTTP {response.status_code}")
                    mime = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
                    if mime not in _TEXT_TYPES:
                        raise FetchRefusedError(current, f"content type {mime or 'unknown'} is not HTML or plain text")
                    body, truncated = await _read_capped(response, settings.fetch_max_bytes)
                    charset = response.charset_encoding or "utf-8"
            except httpx.HTTPError as exc:
                raise ToolError(f"fetching {current} failed: {type(exc).__name__}: {exc}") from exc
            document = _decode(body, charset)
            if mime in _HTML_TYPES:
                title, text = await asyncio.to_thread(_extract_html, document)
            else:
                title, text = "", document.strip()
            return Page(url=str(target), title=title, text=text, truncated=truncated)
    raise ToolError(f"fetching {url} failed: more than {settings.fetch_max_redirects} redirects")


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    """Read at most `max_bytes` of the body; the rest is never downloaded."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        if size + len(chunk) > max_bytes:
            chunks.append(chunk[: max_bytes - size])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _decode(body: bytes, charset: str) -> str:
    try:
        return body.decode(charset, errors="replace")
    except LookupError:  # a charset name Python does not know
        return body.decode("utf-8", errors="replace")


def _extract_html(document: str) -> tuple[str, str]:
    found = _TITLE.search(document)
    title = " ".join(html.unescape(found.group(1)).split()) if found else ""
    import trafilatura  # a fifth of a second to import: only when a page is read

    text = trafilatura.extract(document, include_comments=False, include_tables=True)
    if not text:  # trafilatura finds no main content in some pages (tiny, odd markup)
        text = _BLANK_RUNS.sub("\n\n", html_to_text(document)).strip()
    return title, text


class FetchPage(SignatureTool):
    """The ``fetch_page`` tool: read one web page's main text."""

    name = "fetch_page"
    description = (
        "Fetch a web page (http or https) and return its title and main text. Use it to read a "
        "page a search result points to."
    )

    def __init__(self, settings: ToolSettings) -> None:
        self._settings = settings

    async def run(self, *, url: Annotated[str, Field(description="The http or https URL to read.")]) -> ToolOutput:
        page = await fetch_page(url, self._settings)
        text = page.text or "(the page has no readable text)"
        limit = self._settings.fetch_max_chars
        if len(text) > limit:
            text = f"{text[:limit]}\n[page text truncated: {len(text) - limit} more characters]"
        elif page.truncated:
            text += f"\n[page cut at {self._settings.fetch_max_bytes} bytes]"
        source = Source(ref=page.url, title=page.title, snippet=_snippet(page.text))
        return ToolOutput(text=text, sources=[source])


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SNIPPET_CHARS else flat[: _SNIPPET_CHARS - 1].rstrip() + "…"

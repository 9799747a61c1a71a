"""Page fetching against a loopback web server: extraction, limits, and the SSRF refusals."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fakes.web import HUGE_BYTES, PLAIN_TEXT, FakeWeb, fake_web

from sentient.exceptions import ToolError
from sentient.tools.base import ToolSettings
from sentient.tools.fetch import FetchPage, FetchRefusedError, blocked_reason, check_url, fetch_page

LOCAL = ToolSettings(allow_private_urls=True, fetch_timeout_s=5)
STRICT = ToolSettings(allow_private_urls=False, fetch_timeout_s=5)


@pytest.fixture
def web() -> Iterator[FakeWeb]:
    with fake_web() as server:
        yield server


async def test_article_gives_title_and_main_text_without_boilerplate(web: FakeWeb) -> None:
    page = await fetch_page(web.url("/article"), LOCAL)

    assert page.title == "Quokka facts & figures"
    assert page.url == web.url("/article")
    assert "small macropod" in page.text and "protected by law" in page.text
    for boilerplate in ("About us", "newsletter", "Copyright", "trackingPixel", "navy"):
        assert boilerplate not in page.text
    assert not page.truncated


async def test_plain_text_page_is_returned_as_is(web: FakeWeb) -> None:
    page = await fetch_page(web.url("/plain"), LOCAL)

    assert page.text == PLAIN_TEXT.strip()
    assert page.title == ""


async def test_redirects_are_followed_to_the_final_page(web: FakeWeb) -> None:
    page = await fetch_page(web.url(f"/redirect?to={web.url('/article')}"), LOCAL)

    assert page.url == web.url("/article")
    assert "small macropod" in page.text
    assert web.paths() == [f"/redirect?to={web.url('/article')}", "/article"]


async def test_non_html_content_type_is_refused(web: FakeWeb) -> None:
    with pytest.raises(FetchRefusedError, match="content type image/png is not HTML or plain text"):
        await fetch_page(web.url("/image.png"), LOCAL)


async def test_huge_page_is_cut_at_the_byte_limit_and_not_downloaded_whole(web: FakeWeb) -> None:
    settings = ToolSettings(allow_private_urls=True, fetch_max_bytes=100_000)

    page = await fetch_page(web.url("/huge"), settings)

    assert page.truncated
    assert page.title == "Huge"
    assert 0 < len(page.text) <= 100_000
    assert web.huge_done.wait(5)  # the server noticed the client hung up ...
    assert web.huge_bytes_sent < HUGE_BYTES  # ... before it sent everything


async def test_slow_page_hits_the_time_limit(web: FakeWeb) -> None:
    settings = ToolSettings(allow_private_urls=True, fetch_timeout_s=0.3)

    with pytest.raises(ToolError, match=r"took longer than 0\.3s"):
        await fetch_page(web.url("/slow"), settings)


async def test_http_error_status_is_a_tool_error(web: FakeWeb) -> None:
    with pytest.raises(ToolError, match="HTTP 404"):
        await fetch_page(web.url("/missing"), LOCAL)


async def test_redirect_loop_stops_after_the_redirect_limit(web: FakeWeb) -> None:
    settings = ToolSettings(allow_private_urls=True, fetch_max_redirects=3)

    with pytest.raises(ToolError, match="more than 3 redirects"):
        await fetch_page(web.url("/loop"), settings)
    assert web.paths() == ["/loop"] * 4


async def test_offline_refuses_without_a_request(web: FakeWeb) -> None:
    with pytest.raises(ToolError, match="offline"):
        await fetch_page(web.url("/article"), ToolSettings(offline=True, allow_private_urls=True))
    assert web.requests == []


async def test_unreachable_host_is_a_tool_error() -> None:
    with fake_web() as gone:
        url = gone.url("/article")
    with pytest.raises(ToolError, match="ConnectError"):
        await fetch_page(url, LOCAL)


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "only http and https URLs can be fetched, not file"),
        ("ftp://ftp.example.com/pub/file.txt", "only http and https URLs can be fetched, not ftp"),
        ("http://10.0.0.1/admin", "10.0.0.1 is a private address"),
        ("http://192.168.1.1/", "192.168.1.1 is a private address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://[::1]:8080/", "::1 is a loopback address"),
        ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1 is a loopback address"),
        ("http://0.0.0.0:9000/", "0.0.0.0 is a unspecified address"),
        ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
        ("http://[fe80::1]/", "fe80::1 is a link-local address"),
    ],
)
async def test_internal_and_non_web_urls_are_refused(url: str, reason: str) -> None:
    with pytest.raises(FetchRefusedError) as refused:
        await fetch_page(url, STRICT)
    assert reason in str(refused.value)
    assert refused.value.url == url


async def test_the_loopback_server_itself_is_refused_without_a_request(web: FakeWeb) -> None:
    with pytest.raises(FetchRefusedError, match=r"127\.0\.0\.1 is a loopback address"):
        await fetch_page(web.url("/article"), STRICT)
    assert web.requests == []


async def test_a_hostname_that_resolves_to_loopback_is_refused(web: FakeWeb) -> None:
    url = f"http://localhost:{web.port}/article"

    with pytest.raises(FetchRefusedError, match="localhost is a loopback address"):
        await fetch_page(url, STRICT)
    assert web.requests == []


async def test_numeric_host_forms_are_resolved_before_the_check() -> None:
    # 2130706433 is 127.0.0.1 written as one number; the resolver, not a parser, decides.
    with pytest.raises(FetchRefusedError, match="loopback address"):
        await check_url("http://2130706433/", STRICT)


async def test_every_redirect_hop_is_checked(web: FakeWeb) -> None:
    """The first hop stands in for a public page (a real one is not reachable offline); the
    redirect it returns, to 127.0.0.1, must get the strict check and never be requested."""
    start = web.url(f"/redirect?to={web.url('/article')}")
    checked: list[str] = []

    async def public_first_hop(url: str, settings: ToolSettings) -> httpx.URL:
        checked.append(url)
        return httpx.URL(url) if url == start else await check_url(url, STRICT)

    with pytest.raises(FetchRefusedError, match=r"127\.0\.0\.1 is a loopback address"):
        await fetch_page(start, STRICT, check=public_first_hop)
    assert checked == [start, web.url("/article")]
    assert web.paths() == [f"/redirect?to={web.url('/article')}"]


async def test_redirect_target_check_refuses_internal_targets() -> None:
    for target in ("http://127.0.0.1:8000/", "http://169.254.169.254/", "file:///etc/shadow"):
        with pytest.raises(FetchRefusedError):
            await check_url(target, STRICT)


def test_public_addresses_are_not_blocked() -> None:
    import ipaddress

    assert blocked_reason(ipaddress.ip_address("93.184.216.34")) is None
    assert blocked_reason(ipaddress.ip_address("2606:2800:220:1:248:1893:25c8:1946")) is None
    assert blocked_reason(ipaddress.ip_address("100.64.0.1")) is not None  # carrier-grade NAT


@pytest.mark.parametrize(
    "address",
    [
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:a00:1::",  # 6to4 of 10.0.0.1
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254 (cloud metadata)
        "64:ff9b:1::c0a8:1",  # local-use NAT64 of 192.168.0.1
        "::7f00:1",  # IPv4-compatible 127.0.0.1
        "::ffff:10.0.0.1",  # IPv4-mapped
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo
    ],
)
async def test_ipv6_forms_embedding_an_internal_ipv4_address_are_refused(address: str) -> None:
    import ipaddress

    assert blocked_reason(ipaddress.ip_address(address)) is not None
    with pytest.raises(FetchRefusedError):
        await check_url(f"http://[{address}]/", STRICT)


def test_ipv6_forms_embedding_a_public_ipv4_address_stay_allowed() -> None:
    import ipaddress

    assert blocked_reason(ipaddress.ip_address("2002:5db8:d822::1")) is None  # 6to4 of 93.184.216.34
    assert blocked_reason(ipaddress.ip_address("64:ff9b::5db8:d822")) is None  # NAT64 of 93.184.216.34


# -- the tool ------------------------------------------------------------------------------


async def test_fetch_page_tool_returns_text_and_the_page_as_source(web: FakeWeb) -> None:
    output = await FetchPage(LOCAL).run(url=web.url("/article"))

    (source,) = output.sources
    assert source.ref == web.url("/article")
    assert source.title == "Quokka facts & figures"
    assert source.snippet.startswith("Quokka facts")
    assert "small macropod" in output.text


async def test_fetch_page_tool_truncates_long_text_with_a_note(web: FakeWeb) -> None:
    settings = ToolSettings(allow_private_urls=True, fetch_max_chars=200)

    output = await FetchPage(settings).run(url=web.url("/article"))

    assert output.text.startswith("Quokka facts")
    assert "[page text truncated:" in output.text
    assert len(output.text.split("\n[page text truncated")[0]) == 200

"""render_html: untrusted Markdown becomes an inert, standalone, readable page."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from sentient.report.html import markdown_to_html, render_html

SAFE_LINK_PREFIXES = ("http://", "https://", "mailto:", "#")


class Elements(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def names(self) -> set[str]:
        return {tag for tag, _ in self.tags}

    def hrefs(self) -> list[str]:
        return [attrs["href"] or "" for tag, attrs in self.tags if tag == "a" and "href" in attrs]


def _assert_inert(page: str) -> Elements:
    elements = Elements(page)
    assert not elements.names() & {"script", "img", "iframe", "object", "embed", "svg", "form", "input"}
    for tag, attrs in elements.tags:
        assert not [name for name in attrs if name.startswith("on")], tag
    assert all(href.lower().startswith(SAFE_LINK_PREFIXES) for href in elements.hrefs())
    return elements


@pytest.mark.parametrize(
    ("markdown", "visible"),
    [
        ("<script>alert(1)</script>", "<script>alert(1)</script>"),
        ("<img src=x onerror=alert(1)>", "<img src=x onerror=alert(1)>"),
        ('<a href="javascript:alert(1)">x</a>', '<a href="javascript:alert(1)">x</a>'),
        ("[x](javascript:alert(1))", "[x](javascript:alert(1))"),
        ("[x](JaVaScRiPt:alert(1))", "[x](JaVaScRiPt:alert(1))"),
        ("[x](data:text/html;base64,PHNjcmlwdD4=)", "[x](data:text/html;base64,PHNjcmlwdD4=)"),
    ],
)
def test_raw_html_and_dangerous_links_are_shown_as_text(markdown: str, visible: str) -> None:
    page = render_html(f"# Report\n\n{markdown}\n", title="Report")

    elements = _assert_inert(page)
    assert visible in "".join(elements.text)


def test_the_sanitiser_strips_what_markdown_might_let_through() -> None:
    # vbscript: and relative links pass markdown-it's own check; the sanitiser drops them.
    fragment = markdown_to_html("[a](vbscript:msgbox) [b](../../etc/passwd) [c](https://ok.example/x)")

    elements = _assert_inert(fragment)
    assert elements.hrefs() == ["https://ok.example/x"]
    assert "a" in "".join(elements.text) and "b" in "".join(elements.text)


def test_links_open_without_opener_or_referrer() -> None:
    elements = _assert_inert(render_html("[docs](https://docs.python.org/3/) and [up](#references)", "t"))

    links = [attrs for tag, attrs in elements.tags if tag == "a"]
    assert [a["href"] for a in links] == ["https://docs.python.org/3/", "#references"]
    assert all(a["rel"] == "noopener noreferrer" for a in links)


def test_images_become_links_so_the_page_loads_nothing() -> None:
    elements = _assert_inert(render_html("![a chart](https://example.com/chart.png)", "t"))

    assert elements.hrefs() == ["https://example.com/chart.png"]
    assert "a chart" in "".join(elements.text)


def test_title_is_escaped() -> None:
    page = render_html("text", title='Lists "vs" tuples </title><script>alert(1)</script>')

    elements = _assert_inert(page)
    assert "<title>Lists &quot;vs&quot; tuples &lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>" in page
    assert 'Lists "vs" tuples </title><script>alert(1)</script>' in "".join(elements.text)


def test_a_complete_standalone_page_without_script() -> None:
    page = render_html("# Title", "t")

    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert '<meta charset="utf-8">' in page and "<style>" in page
    assert "default-src 'none'" in page  # CSP: no script, no remote loads
    assert Elements(page).names() >= {"html", "head", "title", "style", "body", "main"}
    assert "<script" not in page and "<link" not in page


def test_normal_markdown_renders() -> None:
    markdown = """# Lists and tuples

## Differences

Lists are **mutable** and tuples are *immutable* [1]. ~~Never~~ use `tuple()` for records.

- first
- second

1. one
2. two

> a quote

```python
xs = [1, 2]
```

| Type | Mutable |
|------|:-------:|
| list | yes |

See [the docs](https://docs.python.org/3/tutorial/datastructures.html) or <https://python.org>.
"""
    page = render_html(markdown, "Lists and tuples")

    elements = _assert_inert(page)
    names = elements.names()
    assert {"h1", "h2", "p", "strong", "em", "s", "code", "ul", "ol", "li", "blockquote", "pre"} <= names
    assert {"table", "thead", "tbody", "tr", "th", "td"} <= names
    assert "<pre><code>xs = [1, 2]\n</code></pre>" in page
    assert elements.hrefs() == ["https://docs.python.org/3/tutorial/datastructures.html", "https://python.org"]
    assert ("td", {"style": "text-align:center"}) in elements.tags


def test_bidi_control_characters_are_removed_from_the_page_and_its_title() -> None:
    from sentient.report.html import render_html
    from sentient.text import BIDI_CONTROLS

    spoof = "See [invoice\u202egpj.exe](https://example.com/\u202ex) and \u2066isolate\u2069 \u200ftext\u200e"
    page = render_html(f"# Report\n\n{spoof}\n", title="Title \u202eevil")
    assert not set(BIDI_CONTROLS) & set(page)
    assert "invoicegpj.exe" in page and "Title evil" in page

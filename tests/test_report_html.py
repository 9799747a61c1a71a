"""render_html: untrusted Markdown becomes an inert, standalone, readable page."""

from __future__ import annotations

import html
import json
from html.parser import HTMLParser

import pytest

from sentient.graph.status import TaskStatus
from sentient.report import Consulted, Reference, Report, Section, StructuredAnswer
from sentient.report.html import markdown_to_html, render_html, to_html

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


# -- a report's citations and references ----------------------------------------------------------


def _ids(elements: Elements) -> list[str]:
    return [attrs["id"] or "" for _, attrs in elements.tags if "id" in attrs]


def test_citations_link_to_their_references_and_web_references_link_out() -> None:
    report = Report(
        title="Lists and tuples",
        status=TaskStatus.DONE,
        partial=False,
        answer="Lists grow [1]; tuples do not [2, 1]. `xs[1]`, [3] and [see [1]](https://ok.example/) stay as they are.",
        references=[
            Reference(n=1, ref="guide/lists.md", kind="path", title="Lists", verified=True),
            Reference(n=2, ref="https://docs.python.org/3/tuples", kind="url", title="Tuples", verified=False),
        ],
        consulted=[Consulted(ref="https://example.org/x", kind="url", title="")],
    )

    page = to_html(report)

    elements = _assert_inert(page)
    assert elements.hrefs() == [
        "#ref-1",
        "#ref-2",
        "#ref-1",
        "https://ok.example/",
        "https://docs.python.org/3/tuples",
        "https://example.org/x",
    ]
    assert _ids(elements) == ["ref-1", "ref-2"]
    assert "<code>xs[1]</code>" in page and "[3]" in page
    assert "Lists — verified — <code>guide/lists.md</code>" in page
    assert "judged that it supports the answer it is cited for" in page  # what verified means


def test_a_partial_reports_sections_link_to_their_own_references() -> None:
    def section(task_id: str) -> Section:
        reference = Reference(n=1, ref=f"{task_id}.md", kind="path", title="", verified=False)
        return Section(task_id=task_id, goal=f"Goal {task_id}", text="Found [1].", references=[reference], consulted=[])

    report = Report(
        title="Lists", status=TaskStatus.FAILED, partial=True, sections=[section("root.0"), section("root.1")]
    )

    elements = _assert_inert(to_html(report))

    assert elements.hrefs() == ["#root.0-ref-1", "#root.1-ref-1"]
    assert _ids(elements) == ["root.0-ref-1", "root.1-ref-1"]


def test_untrusted_references_stay_inert() -> None:
    evil = 'https://x.example/" onmouseover="alert(1)'
    report = Report(
        title="<script>alert(1)</script>",
        status=TaskStatus.DONE,
        partial=False,
        answer="Said [1] and [2].",
        references=[
            Reference(n=1, ref=evil, kind="url", title="<img src=x onerror=alert(1)>", verified=False),
            Reference(n=2, ref="javascript:alert(1)", kind="url", title="click", verified=False),
        ],
    )

    page = to_html(report)

    elements = _assert_inert(page)
    assert "javascript:" not in elements.hrefs()[-1] and len(elements.hrefs()) == 3  # two citations, one web page
    assert "<img src=x onerror=alert(1)>" in "".join(elements.text)
    assert _ids(elements) == ["ref-1", "ref-2"]


def test_a_structured_answer_is_an_escaped_json_block_whose_field_citations_link_to_its_own_references() -> None:
    structured = StructuredAnswer(
        value={"name": "<script>alert(1)</script>", "see": "[1]"},
        citations={"/name": [1]},
        references=[Reference(n=1, ref="https://x.example/a", kind="url", title="A", verified=False)],
    )
    report = Report(
        title="Names",
        status=TaskStatus.DONE,
        partial=False,
        answer="Named [1].",
        references=[Reference(n=1, ref="names.md", kind="path", title="", verified=False)],
        structured=structured,
    )

    page = to_html(report)

    elements = _assert_inert(page)
    assert "<h2>Structured answer</h2>" in page
    assert '"name": "&lt;script&gt;alert(1)&lt;/script&gt;"' in page
    code = page.partition("<pre><code>")[2].partition("</code></pre>")[0]
    assert json.loads(html.unescape(code)) == structured.value
    assert elements.hrefs() == ["#ref-1", "#structured-ref-1", "https://x.example/a"]  # not the "[1]" inside the JSON
    assert _ids(elements) == ["ref-1", "structured-ref-1"]

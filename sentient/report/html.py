"""A :class:`Report` as standalone HTML: its Markdown rendered without raw HTML, then sanitised.

Reports hold untrusted text (model output, web content), so two layers keep a page inert:
markdown-it renders with ``html=False`` (raw HTML in the Markdown comes out as visible text)
and nh3 then keeps only a fixed set of tags and attributes, with links limited to http(s),
mailto and in-page anchors. The page itself has no script and a Content-Security-Policy that
forbids scripts and remote loads; images become links, so opening a report fetches nothing.
Bidirectional control characters are removed, so text reads in the order it is stored.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from sentient.report.markdown import to_markdown
from sentient.report.model import Report
from sentient.text import neutralise_bidi

_TAGS = frozenset(
    {
        "h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "hr", "blockquote", "ul", "ol", "li",
        "strong", "em", "del", "s", "code", "pre", "a", "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}
_URL_SCHEMES = frozenset({"http", "https", "mailto"})
_LINK_PREFIXES = ("http://", "https://", "mailto:", "#")

_CSS = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #fff; --muted: #59636e; --line: #d1d9e0; --code: #f6f8fa;
        --link: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --line: #3d444d; --code: #151b23; --link: #4493f8; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
       font: 17px/1.65 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 46rem; margin: 0 auto; padding: 3rem 1.25rem 4rem; overflow-wrap: break-word; }
h1, h2, h3, h4, h5, h6 { line-height: 1.25; margin: 2rem 0 0.75rem; }
h1 { font-size: 2rem; margin-top: 0; } h2 { font-size: 1.5rem; border-bottom: 1px solid var(--line);
     padding-bottom: 0.3rem; } h3 { font-size: 1.25rem; }
p, ul, ol, blockquote, pre, table { margin: 0 0 1rem; }
a { color: var(--link); }
blockquote { margin-left: 0; padding: 0 1rem; border-left: 0.25rem solid var(--line); color: var(--muted); }
code, pre { font: 0.875em/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--code); }
code { padding: 0.15em 0.35em; border-radius: 4px; }
pre { padding: 1rem; overflow-x: auto; border-radius: 6px; } pre code { padding: 0; background: none; }
table { border-collapse: collapse; display: block; overflow-x: auto; }
th, td { border: 1px solid var(--line); padding: 0.4rem 0.75rem; } th { background: var(--code); }
hr { border: 0; border-top: 1px solid var(--line); margin: 2rem 0; }
@media print { body { font-size: 12pt; } main { max-width: none; padding: 0; } a { color: inherit; } }
"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="referrer" content="no-referrer">
<meta name="generator" content="Sentient">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<main>
{body}
</main>
</body>
</html>
"""


def _render_image_as_link(renderer: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = renderer.renderInlineAsText(token.children or [], options, env) or src
    return f'<a href="{html.escape(src)}">{html.escape(alt, quote=False)}</a>'


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _render_image_as_link)
    return md


_MD = _markdown()  # stateless once built; render() is safe to call from several threads


def _keep_attribute(tag: str, name: str, value: str) -> str | None:
    if name == "href" and not value.lower().startswith(_LINK_PREFIXES):
        return None  # relative paths and every other scheme: the text stays, the link goes
    return value


def markdown_to_html(markdown: str) -> str:
    """A sanitised HTML fragment for untrusted Markdown (no raw HTML, safe links only, no bidi controls)."""
    return nh3.clean(
        _MD.render(neutralise_bidi(markdown)),
        tags=set(_TAGS),
        attributes={tag: set(names) for tag, names in _ATTRIBUTES.items()},
        attribute_filter=_keep_attribute,
        url_schemes=set(_URL_SCHEMES),
        link_rel="noopener noreferrer",
        filter_style_properties={"text-align"},
        strip_comments=True,
    )


def render_html(markdown: str, title: str) -> str:
    """A complete, standalone HTML page (inline CSS, no script) for a Markdown report."""
    title = html.escape(neutralise_bidi(title), quote=True)
    return _PAGE.format(title=title, css=_CSS.strip(), body=markdown_to_html(markdown))


def to_html(report: Report) -> str:
    """The report as a complete, standalone HTML page titled with its goal."""
    return render_html(to_markdown(report), report.title)

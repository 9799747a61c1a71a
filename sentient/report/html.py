"""A :class:`Report` as standalone HTML: its Markdown rendered without raw HTML, then sanitised.

A report's ``[n]`` citations link to its numbered references (``#ref-n``, ``#<task id>-ref-n`` in
a partial report's sections, as in the dashboard), and a reference to a web page links to it.

Reports hold untrusted text (model output, web content), so two layers keep a page inert:
markdown-it renders with ``html=False`` (raw HTML in the Markdown comes out as visible text)
and nh3 then keeps only a fixed set of tags and attributes, with links limited to http(s),
mailto and in-page anchors. The page itself has no script and a Content-Security-Policy that
forbids scripts and remote loads; images become links, so opening a report fetches nothing.
Bidirectional control characters are removed, so text reads in the order it is stored.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from sentient.context.citations import CITATION
from sentient.context.grounding import VERIFIED_MEANS
from sentient.report.markdown import Block, report_blocks
from sentient.report.model import Consulted, Reference, Report
from sentient.text import neutralise_bidi

_TAGS = frozenset(
    {
        "h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "hr", "blockquote", "ul", "ol", "li",
        "strong", "em", "del", "s", "code", "pre", "a", "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "li": {"id"}, "th": {"style"}, "td": {"style"}}
_URL_SCHEMES = frozenset({"http", "https", "mailto"})
_LINK_PREFIXES = ("http://", "https://", "mailto:", "#")
_WEB_PREFIXES = ("http://", "https://")
_REFERENCE_ID = re.compile(r"(?:[\w.]+-)?ref-\d+")  # the only ids a page has: its references'

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


def _link_citations(state: StateCore) -> None:
    """Turn the ``[n]`` markers of the text into links to the references ``env["citations"]``
    names: ``(scope, numbers)``. Markers in code and in links, and numbers that are not a
    reference, stay text."""
    citations = state.env.get("citations")
    if not citations:
        return
    scope, numbers = citations
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        depth = 0
        for token in block.children:
            depth += {"link_open": 1, "link_close": -1}.get(token.type, 0)
            if token.type == "text" and not depth and "[" in token.content:
                children += _cited_tokens(token.content, scope, numbers)
            else:
                children.append(token)
        block.children = children


def _cited_tokens(text: str, scope: str, numbers: frozenset[int]) -> list[Token]:
    tokens: list[Token] = []
    last = 0
    for match in CITATION.finditer(text):
        cited = [int(n) for n in match[1].split(",")]
        if not all(n in numbers for n in cited):
            continue
        tokens.append(_text(text[last : match.start()] + "["))
        for i, n in enumerate(cited):
            if i:
                tokens.append(_text(", "))
            tokens += [Token("link_open", "a", 1, attrs={"href": f"#{scope}ref-{n}"}), _text(str(n))]
            tokens.append(Token("link_close", "a", -1))
        tokens.append(_text("]"))
        last = match.end()
    return [*tokens, _text(text[last:])]


def _text(content: str) -> Token:
    return Token("text", "", 0, content=content)


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _render_image_as_link)
    md.core.ruler.push("link_citations", _link_citations)
    return md


_MD = _markdown()  # stateless once built; render() is safe to call from several threads


def markdown_tokens(text: str, scope: str = "", numbers: frozenset[int] = frozenset()) -> list[Token]:
    """The markdown-it tokens of a report text (raw HTML as text, images as they are), its
    ``[n]`` markers for the ``numbers`` as links to ``#<scope>ref-<n>``: what the DOCX renderer
    writes. Links still need :func:`safe_href`."""
    return _MD.parse(neutralise_bidi(text), {"citations": (scope, numbers)})


def safe_href(href: str) -> str | None:
    """``href`` if a report may link to it (http(s), mailto, an in-page anchor), else None."""
    # relative paths and every other scheme: the text stays, the link goes
    return href if href.lower().startswith(_LINK_PREFIXES) else None


def _keep_attribute(tag: str, name: str, value: str) -> str | None:
    if name == "href":
        return safe_href(value)
    if name == "id" and not _REFERENCE_ID.fullmatch(value):
        return None
    return value


def markdown_to_html(markdown: str) -> str:
    """A sanitised HTML fragment for untrusted Markdown (no raw HTML, safe links only, no bidi controls)."""
    return _sanitised(_MD.render(neutralise_bidi(markdown)))


def _sanitised(fragment: str) -> str:
    return nh3.clean(
        fragment,
        tags=set(_TAGS),
        attributes={tag: set(names) for tag, names in _ATTRIBUTES.items()},
        attribute_filter=_keep_attribute,
        url_schemes=set(_URL_SCHEMES),
        link_rel="noopener noreferrer",
        filter_style_properties={"text-align"},
        strip_comments=True,
    )


def render_html(markdown: str, title: str) -> str:
    """A complete, standalone HTML page (inline CSS, no script) for a Markdown text."""
    return _page(title, markdown_to_html(markdown))


def to_html(report: Report) -> str:
    """The report as a complete, standalone HTML page titled with its title: the blocks of its
    Markdown (:func:`~sentient.report.markdown.report_blocks`), citations linked to references."""
    body = "\n".join(_block_html(block) for block in report_blocks(report))
    return _page(report.title, _sanitised(neutralise_bidi(body)))


def _page(title: str, body: str) -> str:
    title = html.escape(neutralise_bidi(title), quote=True)
    return _PAGE.format(title=title, css=_CSS.strip(), body=body)


def _block_html(block: Block) -> str:
    if isinstance(block, str):
        return _MD.render(block)
    numbers = frozenset(reference.n for reference in block.references)
    parts = [_MD.render(block.text, {"citations": (block.scope, numbers)})]
    if block.note:
        parts.append(_MD.render(block.note))
    if block.references:
        items = "\n".join(_reference_html(reference, block.scope) for reference in block.references)
        parts.append(f"<h2>References</h2>\n<ol>\n{items}\n</ol>")
        if any(reference.verified for reference in block.references):
            parts.append(f"<p><em>{html.escape(VERIFIED_MEANS)}</em></p>")
    if block.consulted:
        items = "\n".join(f"<li>{_source_html(source)}</li>" for source in block.consulted)
        parts.append(f"<h2>Other sources consulted</h2>\n<ul>\n{items}\n</ul>")
    return "\n".join(parts)


def _reference_html(reference: Reference, scope: str) -> str:
    """A numbered reference, the target of its citations, marked when verified."""
    return f'<li id="{html.escape(scope)}ref-{reference.n}">{_source_html(reference, reference.verified)}</li>'


def _source_html(source: Reference | Consulted, verified: bool = False) -> str:
    """A source by its title (a web page's links to it), whether it is verified, its URL or path."""
    ref = html.escape(source.ref)
    name = html.escape(source.title) if source.title and source.title != source.ref else None
    if source.kind == "url" and source.ref.lower().startswith(_WEB_PREFIXES):
        shown = f'<a href="{ref}">{name or ref}</a>'
    else:
        shown = name or f"<code>{ref}</code>"
    if verified:
        shown += " — verified"
    return f"{shown} — <code>{ref}</code>" if name or verified else shown

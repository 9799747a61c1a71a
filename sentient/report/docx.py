"""A :class:`Report` as a Word document (DOCX), written with python-docx.

The document has the blocks of the report's Markdown (:func:`~sentient.report.markdown.report_blocks`):
its title, the text with its ``[n]`` citations as internal links to bookmarks on the numbered
references, web references linked to their pages, the sentence that says what "verified" means,
the other sources consulted and what is not covered. The Markdown is parsed by markdown-it with
the HTML renderer's rules (:func:`~sentient.report.html.markdown_tokens`): raw HTML stays text,
citations link only to references that exist, and links keep the HTML page's safe schemes.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field

from docx import Document
from docx.document import Document as DocumentObject
from docx.opc.constants import RELATIONSHIP_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.oxml.xmlchemy import BaseOxmlElement
from docx.shared import RGBColor
from docx.table import _Cell
from docx.text.paragraph import Paragraph
from docx.text.run import Run
from markdown_it.token import Token

from sentient.context.grounding import VERIFIED_MEANS
from sentient.report.html import markdown_tokens, safe_href
from sentient.report.markdown import Cited, report_blocks
from sentient.report.model import Consulted, Reference, Report
from sentient.text import neutralise_bidi

_MONOSPACE = "Consolas"
_LINK_COLOUR = RGBColor(0x09, 0x69, 0xDA)  # the HTML report's link colour
_MAX_HEADING = 9  # Word's deepest heading style
_WEB_PREFIXES = ("http://", "https://")


def to_docx(report: Report) -> bytes:
    """The report as a DOCX document titled with its title."""
    document = Document()
    document.core_properties.title = neutralise_bidi(report.title)
    writer = _Writer(document)
    for block in report_blocks(report):
        if isinstance(block, Cited):
            writer.cited(block)
        else:
            writer.markdown(block)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


@dataclass
class _Format:
    """The inline formatting in force while a paragraph's runs are written."""

    bold: bool = False
    italic: bool = False
    strike: bool = False
    link: BaseOxmlElement | None = None  # the open <w:hyperlink> element, if any


@dataclass
class _Writer:
    """Appends the report's blocks to a document; names the bookmarks its citations point to."""

    document: DocumentObject
    bookmarks: dict[str, str] = field(default_factory=dict)  # anchor ("root.0-ref-1") -> bookmark name
    placed: int = 0  # bookmarks placed so far: the next one's id

    # -- blocks --------------------------------------------------------------------------------

    def cited(self, block: Cited) -> None:
        """A cited text, its note, its numbered references and the other sources consulted."""
        self.markdown(block.text, block.scope, frozenset(reference.n for reference in block.references))
        if block.note:
            self.markdown(block.note)
        if block.references:
            self.document.add_heading("References", level=2)
            for reference in block.references:
                self._reference(reference, block.scope)
            if any(reference.verified for reference in block.references):
                self.document.add_paragraph().add_run(VERIFIED_MEANS).italic = True
        if block.consulted:
            self.document.add_heading("Other sources consulted", level=2)
            for source in block.consulted:
                self._source(self.document.add_paragraph(style="List Bullet"), source)

    def markdown(self, text: str, scope: str = "", numbers: frozenset[int] = frozenset()) -> None:
        """A Markdown text: headings, paragraphs, lists, quotes, code and tables."""
        tokens = markdown_tokens(text, scope, numbers)
        lists: list[list[int]] = []  # per open list: [next number] (ordered) or [] (bullets)
        quoted = 0
        heading = 0
        item_started = False
        i = 0
        while i < len(tokens):
            token = tokens[i]
            kind = token.type
            if kind == "heading_open":
                heading = int(token.tag[1:])
            elif kind == "heading_close":
                heading = 0
            elif kind in ("bullet_list_open", "ordered_list_open"):
                lists.append([int(str(token.attrGet("start") or 1))] if kind == "ordered_list_open" else [])
            elif kind in ("bullet_list_close", "ordered_list_close"):
                lists.pop()
            elif kind == "list_item_open":
                item_started = True
            elif kind == "blockquote_open":
                quoted += 1
            elif kind == "blockquote_close":
                quoted -= 1
            elif kind in ("fence", "code_block"):
                paragraph = self.document.add_paragraph()
                lines = token.content.rstrip("\n").split("\n")
                for n, line in enumerate(lines):
                    run = paragraph.add_run(line)
                    run.font.name = _MONOSPACE
                    if n < len(lines) - 1:
                        run.add_break()
            elif kind == "table_open":
                i = self._table(tokens, i)
            elif kind == "inline":
                if heading:
                    paragraph = self.document.add_heading(level=min(heading, _MAX_HEADING))
                elif lists and item_started:
                    paragraph = self._list_paragraph(lists)
                    item_started = False
                elif lists:
                    paragraph = self.document.add_paragraph(style="List Continue")
                elif quoted:
                    paragraph = self.document.add_paragraph(style="Quote")
                else:
                    paragraph = self.document.add_paragraph()
                self._inline(paragraph, token.children or [])
            i += 1

    def _list_paragraph(self, lists: list[list[int]]) -> Paragraph:
        depth = min(len(lists), 3)  # Word's list styles go three levels deep
        numbering = lists[-1]
        if not numbering:
            return self.document.add_paragraph(style="List Bullet" if depth == 1 else f"List Bullet {depth}")
        # The number is written as text: Word's own numbering would run on across the lists.
        paragraph = self.document.add_paragraph(style="List" if depth == 1 else f"List {depth}")
        paragraph.add_run(f"{numbering[0]}. ")
        numbering[0] += 1
        return paragraph

    def _table(self, tokens: Sequence[Token], start: int) -> int:
        """A Markdown table from ``tokens[start]`` (its ``table_open``); returns its ``table_close``'s index."""
        rows: list[list[Token]] = []
        end = start
        while tokens[end].type != "table_close":
            token = tokens[end]
            if token.type == "tr_open":
                rows.append([])
            elif token.type == "inline":
                rows[-1].append(token)
            end += 1
        columns = max(len(row) for row in rows)
        table = self.document.add_table(rows=len(rows), cols=columns, style="Table Grid")
        for r, row in enumerate(rows):
            for c, cell_token in enumerate(row):
                cell: _Cell = table.cell(r, c)
                paragraph = cell.paragraphs[0]
                self._inline(paragraph, cell_token.children or [], _Format(bold=r == 0))
        return end

    # -- references ----------------------------------------------------------------------------

    def _reference(self, reference: Reference, scope: str) -> None:
        """A numbered reference, the bookmark its citations link to, marked when verified."""
        paragraph = self.document.add_paragraph(style="List")
        self._bookmark(paragraph, f"{scope}ref-{reference.n}")
        paragraph.add_run(f"{reference.n}. ")
        self._source(paragraph, reference, reference.verified)

    def _source(self, paragraph: Paragraph, source: Reference | Consulted, verified: bool = False) -> None:
        """A source by its title (a web page's links to it), whether it is verified, its URL or path."""
        name = source.title if source.title and source.title != source.ref else None
        if source.kind == "url" and source.ref.lower().startswith(_WEB_PREFIXES):
            self._text(paragraph, name or source.ref, _Format(link=self._link(paragraph, source.ref)))
        elif name:
            paragraph.add_run(name)
        else:
            paragraph.add_run(source.ref).font.name = _MONOSPACE
        if verified:
            paragraph.add_run(" — verified")
        if name or verified:
            paragraph.add_run(" — ")
            paragraph.add_run(source.ref).font.name = _MONOSPACE

    def _bookmark(self, paragraph: Paragraph, anchor: str) -> None:
        self.placed += 1
        number = self.placed
        start = OxmlElement("w:bookmarkStart")
        start.set(qn("w:id"), str(number))
        start.set(qn("w:name"), self._bookmark_name(anchor))
        end = OxmlElement("w:bookmarkEnd")
        end.set(qn("w:id"), str(number))
        paragraph._p.append(start)
        paragraph._p.append(end)

    def _bookmark_name(self, anchor: str) -> str:
        # Word's bookmark names are letters, digits and "_", at most 40: task ids have dots.
        return self.bookmarks.setdefault(anchor, f"ref_{len(self.bookmarks) + 1}")

    # -- inline --------------------------------------------------------------------------------

    def _inline(self, paragraph: Paragraph, children: Sequence[Token], style: _Format | None = None) -> None:
        """The runs of an inline token's children: emphasis, code, links (citations among them), breaks."""
        now = style or _Format()
        for token in children:
            kind = token.type
            if kind == "text":
                self._text(paragraph, token.content, now)
            elif kind == "softbreak":
                self._text(paragraph, " ", now)
            elif kind == "hardbreak":
                paragraph.add_run().add_break()
            elif kind == "code_inline":
                self._text(paragraph, token.content, now).font.name = _MONOSPACE
            elif kind in ("strong_open", "strong_close"):
                now.bold = kind == "strong_open"
            elif kind in ("em_open", "em_close"):
                now.italic = kind == "em_open"
            elif kind in ("s_open", "s_close"):
                now.strike = kind == "s_open"
            elif kind == "link_open":
                now.link = self._link(paragraph, str(token.attrGet("href") or ""))
            elif kind == "link_close":
                now.link = None
            elif kind == "image":  # as on the HTML page: a link to the image, never the image
                src = str(token.attrGet("src") or "")
                alt = "".join(child.content for child in token.children or []) or src
                self._text(paragraph, alt, _Format(now.bold, now.italic, now.strike, self._link(paragraph, src)))

    def _text(self, paragraph: Paragraph, text: str, style: _Format) -> Run:
        run = paragraph.add_run(text)
        run.bold, run.italic, run.font.strike = style.bold or None, style.italic or None, style.strike or None
        if style.link is not None:
            run.font.color.rgb = _LINK_COLOUR
            run.font.underline = True
            style.link.append(run._r)
        return run

    def _link(self, paragraph: Paragraph, href: str) -> BaseOxmlElement | None:
        """A ``<w:hyperlink>`` appended to ``paragraph`` for a safe ``href``: a bookmark for an
        anchor, an external relationship otherwise; None (the text stays, the link goes) for
        anything else."""
        safe = safe_href(href)
        if safe is None:
            return None
        link = OxmlElement("w:hyperlink")
        if safe.startswith("#"):
            link.set(qn("w:anchor"), self._bookmark_name(safe[1:]))
        else:
            link.set(qn("r:id"), paragraph.part.relate_to(safe, RELATIONSHIP_TYPE.HYPERLINK, is_external=True))
        paragraph._p.append(link)
        return link

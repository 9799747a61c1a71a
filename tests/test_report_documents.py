"""to_pdf and to_docx: the report as documents, opened again with pypdf and python-docx and read."""

from __future__ import annotations

import io
from typing import Any

import docx
import pypdf
import pytest

from sentient.context.grounding import VERIFIED_MEANS
from sentient.graph.status import TaskStatus
from sentient.report import Consulted, Reference, Report, Section
from sentient.report.docx import to_docx
from sentient.report.pdf import to_pdf

TITLE = "Quantum sensing in 2024 — Überblick"
REPORT = Report(
    title=TITLE,
    status=TaskStatus.DONE,
    partial=False,
    answer=(
        f"# {TITLE}\n\nNitrogen-vacancy centres measure magnetic fields [1]. Startups sell them [1, 2].\n\n"
        "- a **bold** point with `code`\n\n| market | size |\n|---|---|\n| Europe | 12 |\n\n"
        "[passwd](../../etc/passwd) and <b>raw html</b>"
    ),
    references=[
        Reference(n=1, ref="https://example.org/nv", kind="url", title="NV centres", verified=True, quote="q"),
        Reference(n=2, ref="docs/market.md", kind="path", title="", verified=False),
    ],
    consulted=[Consulted(ref="https://example.org/other", kind="url", title="Other page")],
)


def _pdf_text(data: bytes) -> tuple[pypdf.PdfReader, str]:
    reader = pypdf.PdfReader(io.BytesIO(data))
    text = " ".join(page.extract_text() for page in reader.pages)
    return reader, " ".join(text.split())


def _pdf_links(reader: pypdf.PdfReader) -> list[dict[str, Any]]:
    return [
        annotation.get_object()
        for page in reader.pages
        for annotation in page.get("/Annots") or []
        if annotation.get_object()["/Subtype"] == "/Link"
    ]


def test_pdf_has_the_title_citations_references_and_what_verified_means() -> None:
    data = to_pdf(REPORT)

    assert data.startswith(b"%PDF-")
    reader, text = _pdf_text(data)
    assert reader.metadata is not None and reader.metadata.title == TITLE
    assert text.startswith(TITLE)
    assert "Nitrogen-vacancy centres measure magnetic fields [1]. Startups sell them [1, 2]." in text
    assert "References" in text and "NV centres — verified — https://example.org/nv" in text
    assert "docs/market.md" in text and "Other page — https://example.org/other" in text
    assert VERIFIED_MEANS in text
    assert "Europe 12" in text and "<b>raw html</b>" in text


def test_pdf_citations_link_to_the_references_and_web_references_to_their_pages() -> None:
    reader, _ = _pdf_text(to_pdf(REPORT))

    links = _pdf_links(reader)
    internal = [str(link["/Dest"]) for link in links if "/Dest" in link]
    assert internal == ["ref-1", "ref-1", "ref-2"]  # [1] and [1, 2]
    assert set(internal) <= set(reader.named_destinations)
    uris = [link["/A"]["/URI"] for link in links if "/A" in link]
    # A relative path is no link, as on the HTML page.
    assert uris == ["https://example.org/nv", "https://example.org/other"]


def _docx(data: bytes) -> Any:
    return docx.Document(io.BytesIO(data))


def _bookmarks(document: Any) -> set[str]:
    return {str(name) for name in document.element.body.xpath(".//w:bookmarkStart/@w:name")}


def test_docx_has_the_title_citations_references_and_what_verified_means() -> None:
    document = _docx(to_docx(REPORT))

    assert document.core_properties.title == TITLE
    paragraphs = [(p.style.name, p.text) for p in document.paragraphs]
    assert paragraphs[0] == ("Heading 1", TITLE)
    texts = [text for _, text in paragraphs]
    assert "Nitrogen-vacancy centres measure magnetic fields [1]. Startups sell them [1, 2]." in texts
    assert ("Heading 2", "References") in paragraphs
    assert "1. NV centres — verified — https://example.org/nv" in texts and "2. docs/market.md" in texts
    assert VERIFIED_MEANS in texts
    assert "Other page — https://example.org/other" in texts
    assert "passwd and <b>raw html</b>" in texts
    assert [[cell.text for cell in row.cells] for row in document.tables[0].rows] == [
        ["market", "size"],
        ["Europe", "12"],
    ]


def test_docx_citations_link_to_bookmarked_references_and_web_references_to_their_pages() -> None:
    document = _docx(to_docx(REPORT))

    links = [link for paragraph in document.paragraphs for link in paragraph.hyperlinks]
    citations = [(link.text, link.fragment) for link in links if link.fragment]
    assert [text for text, _ in citations] == ["1", "1", "2"]
    assert {fragment for _, fragment in citations} == _bookmarks(document)
    references = {p.text[0]: p for p in document.paragraphs if p.style.name == "List" and p.text[:2] in ("1.", "2.")}
    first = references["1"]._p.xpath("./w:bookmarkStart/@w:name")
    assert citations[0][1] == str(first[0])
    # The relative path in the text is no link, as on the HTML page.
    assert [link.address for link in links if link.address] == ["https://example.org/nv", "https://example.org/other"]


def test_a_partial_reports_sections_each_link_to_their_own_references() -> None:
    section = Section(
        task_id="root.0",
        goal="Sensors",
        text="Sensors exist [1].",
        references=[Reference(n=1, ref="a.md", kind="path", title="A", verified=False)],
        consulted=[],
    )
    other = section.model_copy(update={"task_id": "root.1", "goal": "Buyers", "text": "Buyers exist [1]."})
    partial = Report(title="Partial", status=TaskStatus.FAILED, partial=True, error="boom", sections=[section, other])

    reader, text = _pdf_text(to_pdf(partial))
    assert "Sensors exist [1]." in text and "Buyers exist [1]." in text
    assert [str(link["/Dest"]) for link in _pdf_links(reader)] == ["root.0-ref-1", "root.1-ref-1"]
    document = _docx(to_docx(partial))
    fragments = [link.fragment for p in document.paragraphs for link in p.hyperlinks]
    assert len(set(fragments)) == 2 and set(fragments) == _bookmarks(document)


@pytest.mark.parametrize("render", [to_pdf, to_docx])
def test_an_unconfirmed_answer_says_so_and_has_no_verified_sentence(render: Any) -> None:
    report = REPORT.model_copy(update={"references": [REPORT.references[1]], "answer": "Sold [2]."})

    data = render(report)

    text = _pdf_text(data)[1] if render is to_pdf else " ".join(p.text for p in _docx(data).paragraphs)
    assert "Not confirmed by the sources:" in text
    assert VERIFIED_MEANS not in text

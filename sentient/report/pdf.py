"""A :class:`Report` as PDF: its sanitised HTML page (:func:`~sentient.report.html.to_html`) printed by WeasyPrint.

The PDF is the HTML report on paper: the same title, text, ``[n]`` citations linked to the
numbered references (internal PDF links), web references linked to their pages, and the
sentence that says what "verified" means. WeasyPrint fetches nothing while it prints (the page
has no images or stylesheets to load, and its URL fetcher allows no protocol), so printing an
untrusted report cannot reach the network or the disk.

WeasyPrint draws text with the Pango library of the system (``libpango-1.0-0`` and
``libpangoft2-1.0-0`` on Debian and Ubuntu); without it, :func:`to_pdf` raises
:class:`~sentient.exceptions.ExportError` saying what to install.
"""

from __future__ import annotations

from sentient.exceptions import ExportError
from sentient.report.html import to_html
from sentient.report.model import Report

PANGO_FIX = "install the Pango library (Debian/Ubuntu: apt-get install libpango-1.0-0 libpangoft2-1.0-0)"


def to_pdf(report: Report) -> bytes:
    """The report as a PDF document titled with its title.

    Raises:
        ExportError: the system lacks the Pango library WeasyPrint draws text with.
    """
    try:
        # WeasyPrint loads Pango when imported: an OSError (not an ImportError) when it is missing.
        from weasyprint import HTML, URLFetcher
    except OSError as exc:
        raise ExportError("pdf", f"WeasyPrint cannot load the Pango library ({exc})", fix=PANGO_FIX) from exc
    page = HTML(string=to_html(report), url_fetcher=URLFetcher(allowed_protocols=()))
    pdf: bytes = page.write_pdf()
    return pdf

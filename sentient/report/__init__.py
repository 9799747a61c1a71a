"""The final report: a typed value built from the task graph, and its renderers.

``build_report(graph)`` gives a :class:`Report`; :func:`to_markdown` renders it for
``report.md`` and the CLI, :mod:`sentient.report.html` as a sanitised standalone page, and
``Report.model_dump_json()`` is its JSON (what the server and the dashboard consume).
"""

from sentient.report.build import build_report
from sentient.report.markdown import markdown_report, to_markdown
from sentient.report.model import Consulted, Missing, Reference, Report, Section, StructuredAnswer

__all__ = [
    "Consulted",
    "Missing",
    "Reference",
    "Report",
    "Section",
    "StructuredAnswer",
    "build_report",
    "markdown_report",
    "to_markdown",
]

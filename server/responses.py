"""pydantic models of the REST responses whose shape the dashboard's types are generated from.

``python -m sentient_server.wire_types`` writes them as TypeScript (``dashboard/src/api/report.generated.ts``);
the other responses are described in ``docs/server-protocol.md``.
"""

from __future__ import annotations

from sentient.report import Report


class ReportResponse(Report):
    """``GET /api/projects/{id}/report?format=json``: the report as data, and its Markdown.

    ``partial`` is also true while the project has not completed, whatever the report says.
    """

    markdown: str
    """The report as Markdown, exactly as ``format=md`` serves it."""

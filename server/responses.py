"""pydantic models of the REST responses whose shape the dashboard's types are generated from.

``python -m sentient_server.wire_types`` writes them as TypeScript (``dashboard/src/api/report.generated.ts``);
the other responses are described in ``docs/server-protocol.md``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from sentient.projects import Review
from sentient.report import Report


class ReportResponse(Report):
    """``GET /api/projects/{id}/report?format=json``: the report as data, and its Markdown.

    ``partial`` is also true while the project has not completed, whatever the report says.
    """

    markdown: str
    """The report as Markdown, exactly as ``format=md`` serves it."""


class ReviewResponse(Review):
    """The protocol's Review (``GET …/reviews``, an answer, ``hitl_request``, ``project_snapshot``):
    ``decision`` only once answered, and no ``answered_at`` (the decision says when). A node's
    detail lists its reviews as stored instead (:class:`~sentient.projects.Review`)."""

    answered_at: float | None = Field(default=None, exclude=True)

    @model_serializer(mode="wrap")
    def _decision_once_answered(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("decision") is None:
            data.pop("decision", None)
        return data

    @classmethod
    def of(cls, review: Review) -> ReviewResponse:
        return cls.model_validate(review, from_attributes=True)

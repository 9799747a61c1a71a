"""Projects: create, list, read, execute, cancel, resume, delete; graph, nodes (re-run one), report, reviews,
follow-up questions."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request

from sentient.report import Report
from sentient.store import ProjectStatus

from ..errors import bad_request, not_found
from ..headers import REPORT_CSP
from ..responses import NodeDetail, ProjectList, ReportResponse, ReviewList, ReviewResponse
from ..schemas import AskFollowup, CreateProject, ExecuteProject, RerunNode, valid_node_id
from . import as_json, parse_body, services

bp = Blueprint("projects", __name__, url_prefix="/api/projects")

# The report's formats that are documents (binary files), by media type.
_DOCUMENTS = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}


@bp.post("")
def create() -> Any:
    body = parse_body(CreateProject)
    return as_json(services().runs.create(body.goal, body.profile, body.config), 201)


@bp.get("")
def index() -> Any:
    return as_json(ProjectList(projects=services().runs.projects()))


@bp.get("/<project_id>")
def show(project_id: str) -> Any:
    return as_json(services().runs.project(project_id))


@bp.delete("/<project_id>")
def delete(project_id: str) -> Any:
    services().runs.delete(project_id)
    return jsonify(deleted=project_id)


@bp.post("/<project_id>/execute")
def execute(project_id: str) -> Any:
    body = parse_body(ExecuteProject, optional=True)
    return as_json(services().runs.execute(project_id, body.goal, body.profile), 202)


@bp.post("/<project_id>/cancel")
def cancel(project_id: str) -> Any:
    return as_json(services().runs.cancel(project_id), 202)


@bp.post("/<project_id>/resume")
def resume(project_id: str) -> Any:
    return as_json(services().runs.resume(project_id), 202)


@bp.get("/<project_id>/graph")
def graph(project_id: str) -> Any:
    return jsonify({"project_id": project_id, **services().runs.graph(project_id).model_dump(mode="json")})


@bp.get("/<project_id>/nodes/<node_id>")
def node(project_id: str, node_id: str) -> Any:
    runs = services().runs
    runs.record(project_id)
    if not valid_node_id(node_id):
        raise not_found("node", node_id)
    service = runs.service
    found = runs.node(project_id, node_id)
    return as_json(
        NodeDetail(node=found, calls=service.calls(project_id, node_id), reviews=service.reviews(project_id, node_id))
    )


@bp.post("/<project_id>/nodes/<node_id>/rerun")
def rerun(project_id: str, node_id: str) -> Any:
    runs = services().runs
    runs.record(project_id)
    if not valid_node_id(node_id):
        raise not_found("node", node_id)
    body = parse_body(RerunNode, optional=True)
    return as_json(runs.rerun(project_id, node_id, replan=body.replan, instructions=body.instructions), 202)


@bp.post("/<project_id>/followups")
def ask_followup(project_id: str) -> Any:
    body = parse_body(AskFollowup)
    return as_json(services().runs.ask(project_id, body.question), 202)


@bp.get("/<project_id>/followups")
def followups(project_id: str) -> Any:
    return as_json(services().runs.followups(project_id))


@bp.get("/<project_id>/report")
def report(project_id: str) -> Any:
    fmt = request.args.get("format", "md")
    if fmt not in ("md", "html", "json", *_DOCUMENTS):
        raise bad_request("format must be md, html, json, pdf or docx.")
    runs = services().runs
    project = runs.project(project_id)
    markdown, value = runs.service.report(project_id)  # NoReportError: 404 no_report
    if fmt == "md":
        return Response(markdown, mimetype="text/markdown", headers=_download(project_id, "md"))
    if fmt == "html":
        page_headers = {**_download(project_id, "html"), "Content-Security-Policy": REPORT_CSP}
        return Response(_html(value), mimetype="text/html", headers=page_headers)
    if fmt in _DOCUMENTS:
        # ExportError (the machine lacks what the format needs): 503 unavailable
        return Response(_document(fmt, value), mimetype=_DOCUMENTS[fmt], headers=_download(project_id, fmt))
    partial = value.partial or project.status is not ProjectStatus.COMPLETED
    body = ReportResponse(**{**dict(value), "partial": partial}, markdown=markdown)
    return Response(body.model_dump_json(), mimetype="application/json")


@bp.get("/<project_id>/reviews")
def reviews(project_id: str) -> Any:
    pending = services().runs.service.pending_reviews(project_id)
    return as_json(ReviewList(reviews=[ReviewResponse.of(review) for review in pending]))


def _download(project_id: str, ext: str) -> dict[str, str]:
    # project ids are [A-Za-z0-9_.-] only, so the header needs no quoting beyond this.
    return {"Content-Disposition": f'inline; filename="{project_id}.{ext}"'}


def _html(report: Report) -> str:
    from sentient.report.html import to_html  # sanitised Markdown -> HTML

    return to_html(report)


def _document(fmt: str, report: Report) -> bytes:
    if fmt == "pdf":
        from sentient.report.pdf import to_pdf  # the HTML page, printed by WeasyPrint

        return to_pdf(report)
    from sentient.report.docx import to_docx  # python-docx

    return to_docx(report)

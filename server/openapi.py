"""The OpenAPI 3.1 document of the REST API (``GET /api/openapi.json``).

Request bodies come from the pydantic models the routes validate with, and the report's JSON
from the model it is serialised from (``sentient_server.responses``), so the document and the code cannot
drift apart. Other response shapes are described in ``docs/server-protocol.md``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from sentient.projects import ReviewAnswer
from sentient.settings import EngineSettings

from .responses import ReportResponse
from .schemas import PROJECT_ID_PATTERN, AskFollowup, CreateProject, ExecuteProject, RerunNode

_REF = "#/components/schemas/{model}"

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        }
    },
}
_OBJECT = {"type": "object"}


def _schemas(*models: type[BaseModel], mode: Literal["validation", "serialization"] = "validation") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for model in models:
        schema = model.model_json_schema(ref_template=_REF, mode=mode)
        out.update(schema.pop("$defs", {}))
        out[model.__name__] = schema
    return out


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _op(
    summary: str, ok: int = 200, body: str | None = None, optional_body: bool = False, **extra: Any
) -> dict[str, Any]:
    content = extra.pop("content", None) or _json(extra.pop("result", _OBJECT))["content"]
    responses: dict[str, Any] = {str(ok): {"description": "OK", "content": content}}
    problems = [
        ("400", "invalid input"),
        ("401", "missing or wrong API token"),
        ("403", "a foreign browser origin, or a Host that is not localhost on a loopback bind"),
        ("404", "unknown id"),
        ("405", "method not allowed on this path"),
    ]
    if extra.pop("conflict", False):
        problems.append(("409", "conflicting state"))
    if body:
        problems += [("413", "body over the size limit"), ("415", "body not sent as JSON")]
    for status, why in sorted(problems):
        responses[status] = {"description": why, **_json({"$ref": _REF.format(model="Error")})}
    op: dict[str, Any] = {"summary": summary, "responses": responses, **extra}
    if body:
        op["requestBody"] = {"required": not optional_body, **_json({"$ref": _REF.format(model=body)})}
    return op


def _config_schema() -> dict[str, Any]:
    """``config`` of a new project: engine setting overrides, plus its choices (server/choices.py)."""
    settings = EngineSettings.model_json_schema(ref_template=_REF)
    properties = dict(settings.get("properties", {}))
    properties["docs"] = {"type": "string", "description": "a folder under one of SENTIENT_DOCS_ROOTS"}
    properties["model"] = {"type": "string", "description": "a model string the server has the key for"}
    properties["offline"] = {"type": "boolean", "description": "never use the network (no web search)"}
    return {"type": "object", "properties": properties, "additionalProperties": False}


def openapi_document(version: str, profiles: list[str] | None = None) -> dict[str, Any]:
    """The document; ``profiles`` (the server's profile names) makes profile fields an enum."""
    project_id = {
        "name": "project_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": PROJECT_ID_PATTERN},
    }
    project = {"$ref": _REF.format(model="Project")}
    with_id = {"parameters": [project_id]}
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "Sentient server",
            "version": version,
            "description": "REST part of docs/server-protocol.md; live updates and plan review also over Socket.IO.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": _ERROR,
                "Project": {
                    "type": "object",
                    "properties": {
                        "project_id": {"type": "string"},
                        "goal": {"type": "string"},
                        "profile": {"type": "string"},
                        "status": {
                            "enum": ["created", "running", "completed", "failed", "cancelled", "stopped", "interrupted"]
                        },
                        "created_at": {"type": "number"},
                        "updated_at": {"type": "number"},
                        "error": {"type": ["string", "null"]},
                        "settings": _OBJECT,
                        "stats": _OBJECT,
                        "pending_reviews": {"type": "integer"},
                    },
                },
                **_schemas(CreateProject, ExecuteProject, RerunNode, AskFollowup, ReviewAnswer, EngineSettings),
                **_schemas(ReportResponse, mode="serialization"),
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/api/health": {"get": {**_op("Liveness and version"), "security": []}},
            "/api/profiles": {"get": _op("List the agent profiles")},
            "/api/profiles/{name}": {
                "get": _op(
                    "A profile with its agents per role",
                    parameters=[{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
                )
            },
            "/api/projects": {
                "get": _op("List projects, newest first"),
                "post": _op("Create a project", 201, "CreateProject", result=project),
            },
            "/api/projects/{project_id}": {
                **with_id,
                "get": _op("A project", result=project),
                "delete": _op("Delete a project (a running one is cancelled first)"),
            },
            "/api/projects/{project_id}/execute": {
                **with_id,
                "post": _op(
                    "Run from scratch", 202, "ExecuteProject", optional_body=True, result=project, conflict=True
                ),
            },
            "/api/projects/{project_id}/cancel": {
                **with_id,
                "post": _op("Cancel the run", 202, result=project, conflict=True),
            },
            "/api/projects/{project_id}/resume": {
                **with_id,
                "post": _op("Resume, keeping finished nodes", 202, result=project, conflict=True),
            },
            "/api/projects/{project_id}/graph": {**with_id, "get": _op("The task graph")},
            "/api/projects/{project_id}/nodes/{node_id}": {
                "parameters": [
                    project_id,
                    {"name": "node_id", "in": "path", "required": True, "schema": {"type": "string"}},
                ],
                "get": _op("A node with its agent calls and reviews"),
            },
            "/api/projects/{project_id}/nodes/{node_id}/rerun": {
                "parameters": [
                    project_id,
                    {"name": "node_id", "in": "path", "required": True, "schema": {"type": "string"}},
                ],
                "post": _op(
                    "Re-run (or re-plan) one node: its subtree is rebuilt, its ancestors aggregate again",
                    202,
                    "RerunNode",
                    optional_body=True,
                    result=project,
                    conflict=True,
                ),
            },
            "/api/projects/{project_id}/followups": {
                **with_id,
                "get": _op("The follow-up questions of the project, oldest first, with their answers"),
                "post": _op(
                    "Ask a follow-up question: researched as a project that follows this one, from what it found first",
                    202,
                    "AskFollowup",
                    result=project,
                    conflict=True,
                ),
            },
            "/api/projects/{project_id}/report": {
                "parameters": [
                    project_id,
                    {
                        "name": "format",
                        "in": "query",
                        "schema": {"enum": ["md", "html", "json", "pdf", "docx"], "default": "md"},
                    },
                ],
                "get": _op(
                    "The report as Markdown, sanitised HTML, JSON, PDF or DOCX",
                    content={
                        "text/markdown": {"schema": {"type": "string"}},
                        "text/html": {"schema": {"type": "string"}},
                        "application/json": {"schema": {"$ref": _REF.format(model="ReportResponse")}},
                        "application/pdf": {"schema": {"type": "string", "format": "binary"}},
                        "application/vnd.openxmlformats-officedocument.wordprocessingml.document": {
                            "schema": {"type": "string", "format": "binary"}
                        },
                    },
                ),
            },
            "/api/projects/{project_id}/reviews": {**with_id, "get": _op("Pending plan reviews")},
            "/api/reviews/{review_id}": {
                "parameters": [{"name": "review_id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "post": _op(
                    "Answer a review (a plan; a tool call takes approve or reject)", 200, "ReviewAnswer", conflict=True
                ),
            },
            "/api/openapi.json": {"get": _op("This document")},
        },
    }
    report = document["paths"]["/api/projects/{project_id}/report"]["get"]
    report["responses"]["503"] = {
        "description": "this machine lacks what the format needs (pdf: the Pango library); the message says what to install",
        **_json({"$ref": _REF.format(model="Error")}),
    }
    schemas = document["components"]["schemas"]
    schemas["CreateProject"]["properties"]["config"] = _config_schema()
    if profiles:
        for model in ("CreateProject", "ExecuteProject"):
            schemas[model]["properties"]["profile"] = {"anyOf": [{"enum": sorted(profiles)}, {"type": "null"}]}
    return document

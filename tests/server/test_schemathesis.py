"""Property-based fuzzing of the REST API from its own OpenAPI document (schemathesis, every check).

A fixed seed and a small example budget keep the run short and the same every time; every
response must be documented (status, media type, schema) and none may be a 500. All checks run
but "schema-valid data is accepted": some rules are the server's state, not the document's (a
``docs`` folder must exist under a docs root, a review id must be pending).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from schemathesis.specs.openapi.checks import positive_data_acceptance  # noqa: E402

from sentient_server.config import ServerSettings  # noqa: E402
from sentient_server.openapi import openapi_document  # noqa: E402

TOKEN = "schemathesis-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_no_route_answers_500_or_off_its_document(make_app: Any, server_settings: ServerSettings) -> None:
    app = make_app(replace(server_settings, api_token=TOKEN))
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", app, headers=AUTH)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    for operation in operations:

        @given(case=operation.as_strategy())
        @seed(20261123)
        @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case: Any) -> None:
            case.call_and_validate(headers=AUTH, excluded_checks=[positive_data_acceptance])

        check()


def test_the_document_lists_report_media_types_and_error_statuses() -> None:
    doc = openapi_document("1.0")
    report = doc["paths"]["/api/projects/{project_id}/report"]["get"]["responses"]["200"]["content"]
    assert set(report) == {
        "text/markdown",
        "text/html",
        "application/json",
        "application/pdf",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    }
    assert "503" in doc["paths"]["/api/projects/{project_id}/report"]["get"]["responses"]
    create = doc["paths"]["/api/projects"]["post"]["responses"]
    assert {"403", "405", "413", "415"} <= set(create)

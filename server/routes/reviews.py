"""Answering a plan review over REST."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from sentient.projects import ReviewAnswer

from . import as_json, parse_body, services

bp = Blueprint("reviews", __name__, url_prefix="/api/reviews")


@bp.post("/<review_id>")
def answer(review_id: str) -> Any:
    body = parse_body(ReviewAnswer)
    return as_json(services().reviews.answer(review_id, body, by="rest"))

"""Recovering JSON from imperfect model output: fenced, wrapped in prose, or cut off by a token limit."""

from __future__ import annotations

import json
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_WHOLE_FENCE = re.compile(r"```(?:json)?\s*(.*)```", re.DOTALL)
# A key with no value at the end of a cut-off object: `{"a": 1, "ke` or `{"a": 1, "key":`
_DANGLING_KEY = re.compile(r'([{,])\s*"(?:[^"\\]|\\.)*"\s*:?\s*$')


def parsed_so_far(schema: type[T], reply: str) -> T | None:
    """A reply still being written, closed where it is cut off, as ``schema``; None while it is
    not one yet (for a caller's ``enough``: whether it has all it needs)."""
    try:
        return schema.model_validate_json(extract_json(reply)[0])
    except ValidationError:
        return None


def extract_json(raw: str) -> tuple[str, bool]:
    """Return ``(json_text, repaired)``: the JSON object inside ``raw``, closed if it was truncated.

    ``repaired`` is True when brackets or a string had to be closed, i.e. the output was cut off.
    The caller still validates the result against its schema.
    """
    # The whole reply (or its outermost braces) first: a valid JSON answer may quote a Markdown
    # fence inside a string, which the fence search below would cut.
    first, last = raw.find("{"), raw.rfind("}")
    if 0 <= first < last and (whole := _normalised(raw[first : last + 1])) is not None:
        return whole, False
    fenced = _FENCE.search(raw)
    if fenced and (whole_fence := _WHOLE_FENCE.search(raw)) is not None:
        # A fence inside a JSON string ends the shortest match early; the longest may be whole.
        inner = whole_fence.group(1).strip()
        if inner.startswith("{") and (whole := _normalised(inner)) is not None:
            return whole, False
    text = fenced.group(1) if fenced else raw
    start = text.find("{")
    if start < 0:
        return text, False
    text = text[start:]
    end = text.rfind("}")
    if end >= 0 and (whole := _normalised(text[: end + 1])) is not None:
        return whole, False
    closed = _normalised(close_truncated(text))
    return (closed, True) if closed is not None else (text, False)


def close_truncated(text: str) -> str:
    """Close an unterminated string and any open objects/arrays, dropping a dangling key or comma."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and stack:
            stack.pop()
    if escaped:
        text = text[:-1]
    if in_string:
        text += '"'
    text = text.rstrip()
    if stack and stack[-1] == "}":
        text = _DANGLING_KEY.sub(r"\1", text)
    text = re.sub(r",\s*$", "", text)
    return text + "".join(reversed(stack))


def _normalised(text: str) -> str | None:
    """``text`` re-encoded as strict JSON, or None if it does not parse.

    Parsing is lenient about raw control characters (a literal newline inside a string is
    common model output); re-encoding escapes them so strict validators accept the result.
    """
    try:
        return json.dumps(json.loads(text, strict=False), ensure_ascii=False)
    except ValueError:
        return None

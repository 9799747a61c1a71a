"""The structured answer the dashboard tests' scripted model gives a run with an output schema."""

from __future__ import annotations

from typing import Any

# One string cites [1]; one holds markup that must stay text.
STRUCTURED_VALUE = {"finding": "Qubits help drug discovery [1]", "note": '<img src=x onerror="window.__xss = 1">'}
STRUCTURED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"finding": {"type": "string"}, "note": {"type": "string"}},
    "required": ["finding", "note"],
    "additionalProperties": False,
}

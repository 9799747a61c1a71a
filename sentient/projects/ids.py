"""Project ids: readable, unique and safe as folder names."""

from __future__ import annotations

import re
import time
import uuid


def new_project_id(goal: str) -> str:
    """A readable, unique, filesystem-safe id: ``20261121-190405-python-asyncio-3f2a9c``."""
    slug = re.sub(r"[^a-z0-9]+", "-", goal.lower()).strip("-")[:40].strip("-") or "project"
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}-{uuid.uuid4().hex[:6]}"

"""Approval of tool calls marked ``confirm: true``, through the run's reviewer.

A call waits for the reviewer the run already has (the terminal with ``--review``, the
dashboard, ``POST /api/reviews/{id}``) as a review of kind ``tool_call``, naming the tool and its
arguments. Approve runs the call; anything else refuses it, with the reason (or a Python
reviewer's instructions) told to the model, so it can try otherwise. A run with no reviewer
refuses every such call. The review's round is derived from the call, so a resumed run finds
the answer a call already got, and only that call's.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from typing import Any

from loguru import logger

from sentient.hitl.protocol import Approve, CallToConfirm, Modify, PlanReviewer, Reject, ReviewDecision, ReviewRequest

DECLINED = "the user declined this call"
# Plan reviews count rounds from 1; a call's review takes a round above any of them.
_FIRST_CALL_ROUND = 1_000_000


class CallApproval:
    """Asks ``reviewer`` before each call of a confirmed tool.

    Args:
        reviewer: the run's reviewer; None declines every call.
        timeout_s: how long to wait for an answer (None: as long as it takes).
        approve_on_timeout: what an answer that did not come in time decides.
    """

    def __init__(
        self, reviewer: PlanReviewer | None, *, timeout_s: float | None = None, approve_on_timeout: bool = False
    ) -> None:
        self._reviewer = reviewer
        self._timeout_s = timeout_s
        self._approve_on_timeout = approve_on_timeout

    async def declined(self, task_id: str, tool: str, arguments: dict[str, Any]) -> str | None:
        """None when the call may run, else what the model is told instead of its result."""
        if self._reviewer is None:
            return f"{DECLINED} (no reviewer: run with --review, or through the server, to approve it)"
        request = call_review(task_id, tool, arguments)
        try:
            async with asyncio.timeout(self._timeout_s):
                decision: ReviewDecision = await self._reviewer.review_plan(request)
        except TimeoutError:
            logger.warning("{}: no answer on calling {} within {:g} s", task_id, tool, self._timeout_s)
            decision = Approve() if self._approve_on_timeout else Reject("no answer in time")
        if isinstance(decision, Approve):
            return None
        if isinstance(decision, Modify) and decision.instructions:
            return f"{DECLINED}: {decision.instructions}"
        if isinstance(decision, Reject) and decision.reason:
            return f"{DECLINED}: {decision.reason}"
        return DECLINED


def call_review(task_id: str, tool: str, arguments: dict[str, Any]) -> ReviewRequest:
    """The review request of one call, naming the tool and its arguments."""
    shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)
    digest = zlib.crc32(f"{tool}\n{shown}".encode())
    return ReviewRequest(
        task_id=task_id,
        goal=f"Approve calling the tool {tool}?",
        layer=task_id.count("."),
        plan=None,
        round=_FIRST_CALL_ROUND + digest % 1_000_000_000,
        context=(
            f"The agent of task {task_id} wants to call {tool}, marked confirm: true in agents.yaml, with "
            f"{shown}. Approve to run it; refuse to decline it (the agent is told your reason)."
        ),
        # The arguments as JSON values, as they are stored and shown.
        tool_call=CallToConfirm(tool, json.loads(shown)),
    )

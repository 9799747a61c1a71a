"""Callables the tests name in agents.yaml as their own tools (``fakes.user_tools:...``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

CUSTOMERS = {42: "Ada Lovelace, plan: enterprise"}


def lookup_customer(customer_id: Annotated[int, Field(description="The customer's number.", ge=1)]) -> str:
    """Look a customer up in the CRM by number."""
    return CUSTOMERS.get(customer_id, f"No customer {customer_id}.")


class Refund(BaseModel):
    order: str
    amount_eur: float = Field(gt=0)


async def refund(request: Refund) -> dict[str, object]:
    """Refund an order."""
    return {"refunded": request.order, "amount_eur": request.amount_eur}


def broken(text: str) -> str:
    """Always raises."""
    raise RuntimeError(f"cannot handle {text}")


def variadic(*values: str) -> str:
    return ",".join(values)


NOT_CALLABLE = 3

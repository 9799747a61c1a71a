"""A calculator that evaluates arithmetic by walking the expression's syntax tree.

Nothing is ever passed to ``eval``: only numbers, ``+ - * / // % **``, unary signs,
parentheses, the constants ``pi`` and ``e`` and a short list of functions are accepted, and
exponents whose result would be enormous are refused before they are computed.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from sentient.exceptions import ToolError
from sentient.tools.base import SignatureTool, ToolOutput

Number = int | float

_MAX_EXPRESSION_CHARS = 500
_MAX_RESULT_DIGITS = 1_000  # an integer result (or power) with more digits than this is refused
_MAX_RESULT_BITS = math.ceil(_MAX_RESULT_DIGITS * math.log2(10))

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "log": math.log,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}


class CalculatorError(ToolError):
    """An expression the calculator refuses or cannot evaluate."""


def calculate(expression: str) -> Number:
    """Evaluate an arithmetic expression.

    Raises:
        CalculatorError: anything but the allowed arithmetic, or a math error (division by
            zero, a domain error, a result too large).
    """
    if len(expression) > _MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"the expression is longer than {_MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not a valid expression: {expression!r}") from exc
    try:
        result = _evaluate(tree.body)
    except ZeroDivisionError as exc:
        raise CalculatorError("division by zero") from exc
    except OverflowError as exc:
        raise CalculatorError("the result is too large") from exc
    except (ValueError, TypeError) as exc:  # sqrt(-1), log(0), min() and the like
        raise CalculatorError(f"cannot evaluate {expression!r}: {exc}") from exc
    if isinstance(result, int) and result.bit_length() > _MAX_RESULT_BITS:
        raise CalculatorError(f"the result is too large (more than {_MAX_RESULT_DIGITS} digits)")
    return result


def _evaluate(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant):
        # bool is an int subclass; True + 1 is not arithmetic anyone meant.
        if isinstance(node.value, int | float) and not isinstance(node.value, bool):
            return node.value
        raise CalculatorError(f"only numbers are allowed, not {node.value!r}")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        result: Number = _BINARY[type(node.op)](left, right)
        return result
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        value: Number = _UNARY[type(node.op)](_evaluate(node.operand))
        return value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        if node.keywords:
            raise CalculatorError(f"{node.func.id}() takes positional arguments only")
        value = _FUNCTIONS[node.func.id](*(_evaluate(arg) for arg in node.args))
        if isinstance(value, complex):
            raise CalculatorError("the result is a complex number")
        return value
    raise CalculatorError(f"not allowed: {ast.unparse(node)!r} (numbers, + - * / // % **, {_allowed_names()} only)")


def _check_power(base: Number, exponent: Number) -> None:
    # Integer powers are exact and can take minutes and gigabytes; floats just overflow.
    if abs(base) > 1 and exponent > 0 and exponent * math.log10(abs(base)) > _MAX_RESULT_DIGITS:
        raise CalculatorError(f"{base} ** {exponent} is too large (more than {_MAX_RESULT_DIGITS} digits)")
    if isinstance(base, int | float) and base < 0 and isinstance(exponent, float) and not exponent.is_integer():
        raise CalculatorError("a negative number to a fractional power is complex")


def _allowed_names() -> str:
    return ", ".join([*(f"{name}()" for name in _FUNCTIONS), *_CONSTANTS])


def _format(value: Number) -> str:
    if isinstance(value, float):
        return f"{value:.15g}"
    return str(value)


class Calculator(SignatureTool):
    """The ``calculator`` tool."""

    name = "calculator"
    description = (
        "Evaluate an arithmetic expression exactly: numbers, + - * / // % ** and parentheses, "
        "sqrt, log, exp, sin, cos, tan, abs, round, min, max, and the constants pi and e."
    )

    async def run(
        self, *, expression: Annotated[str, Field(description="For example: (2 + 3) * sqrt(16)")]
    ) -> ToolOutput:
        return ToolOutput(text=f"{expression.strip()} = {_format(calculate(expression))}")

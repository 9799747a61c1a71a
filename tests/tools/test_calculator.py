"""The AST calculator: what it computes and everything it refuses."""

from __future__ import annotations

import math

import pytest

from sentient.exceptions import ToolError
from sentient.tools.calculator import Calculator, CalculatorError, calculate


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("-7 % 3", 2),
        ("2 ** 10", 1024),
        ("-(3 - 5)", 2),
        ("+4", 4),
        ("sqrt(16) + abs(-2)", 6.0),
        ("round(pi, 3)", 3.142),
        ("log(e)", 1.0),
        ("exp(0) + sin(0) + cos(0) + tan(0)", 2.0),
        ("max(1, 5, 3) - min(4, 2)", 3),
        ("1.5e3 / 3", 500.0),
        ("10 ** -2", 0.01),
    ],
)
def test_arithmetic_is_evaluated(expression: str, expected: float) -> None:
    assert calculate(expression) == pytest.approx(expected)


def test_big_integers_are_exact() -> None:
    assert calculate("2 ** 100") == 1267650600228229401496703205376
    assert calculate("pi") == math.pi


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('echo hi')", "not allowed"),
        ("open('/etc/passwd')", "not allowed"),
        ("(1).__class__", "not allowed"),
        ("x + 1", "not allowed"),
        ("[1, 2, 3]", "not allowed"),
        ("1 if 2 else 3", "not allowed"),
        ("1 < 2", "not allowed"),
        ("1 << 100", "not allowed"),
        ("'a' * 3", "only numbers are allowed"),
        ("True + 1", "only numbers are allowed"),
        ("round(2.5, ndigits=1)", "positional arguments only"),
        ("lambda: 1", "not allowed"),
        ("2 +", "not a valid expression"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("sqrt(-1)", "math domain error"),
        ("log(0)", "math domain error"),
        ("min()", "cannot evaluate"),
        ("(-8) ** (1 / 3)", "complex"),
        ("exp(1000)", "too large"),
        ("9 ** 9 ** 9", "too large"),
        ("2 ** 100000", "too large"),
        ("(10 ** 999) * (10 ** 999)", "too large"),
        ("1" * 600, "longer than 500 characters"),
    ],
)
def test_anything_else_is_refused_with_a_clear_message(expression: str, message: str) -> None:
    with pytest.raises(CalculatorError, match=message):
        calculate(expression)


def test_calculator_error_is_a_tool_error() -> None:
    assert issubclass(CalculatorError, ToolError)


async def test_tool_output_shows_expression_and_result() -> None:
    output = await Calculator().run(expression=" (2 + 3) * sqrt(16) ")

    assert output.text == "(2 + 3) * sqrt(16) = 20"
    assert output.sources == []


async def test_tool_prints_floats_without_binary_noise() -> None:
    output = await Calculator().run(expression="0.1 + 0.2")

    assert output.text == "0.1 + 0.2 = 0.3"

"""Pure-logic tests of the calculator tool (called directly, no broker)."""

import math

import pytest

from argentic_tools import ToolError
from tool_clients.calculator import (
    MAX_EXPRESSION_LENGTH,
    MAX_INT_BITS,
    MAX_NODES,
    calculate,
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2", 3),
        ("2 * (3 + 4)", 14),
        ("7 - 10", -3),
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("7 % 3", 1),
        ("-7 // 2", -4),
        ("2 ** 10", 1024),
        ("2 ** -1", 0.5),
        ("-3", -3),
        ("+3", 3),
        ("--3", 3),
        ("-2 ** 2", -4),
        ("1.5e3 + 0.5", 1500.5),
        ("((((1 + 1))))", 2),
        ("   4 * 5   ", 20),
    ],
)
def test_calculate_evaluates_arithmetic_with_python_semantics(
    expression: str, expected: float
) -> None:
    assert calculate(expression) == expected


def test_calculate_keeps_integers_exact_and_returns_int_type() -> None:
    result = calculate("12345678901234567890 * 98765432109876543210")
    assert result == 12345678901234567890 * 98765432109876543210
    assert isinstance(result, int)


def test_calculate_returns_float_for_true_division() -> None:
    result = calculate("4 / 2")
    assert result == 2.0
    assert isinstance(result, float)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("sqrt(16)", 4.0),
        ("abs(-5)", 5),
        ("round(2.567, 2)", 2.57),
        ("round(2.5)", 2),
        ("min(3, 1, 2)", 1),
        ("max(3, 1, 2)", 3),
        ("floor(2.7)", 2),
        ("ceil(2.1)", 3),
        ("log(e)", 1.0),
        ("log(8, 2)", 3.0),
        ("log10(1000)", 3.0),
        ("log2(8)", 3.0),
        ("hypot(3, 4)", 5.0),
        ("exp(0)", 1.0),
        ("cos(0)", 1.0),
        ("sqrt(16) + 2**3", 12.0),
    ],
)
def test_calculate_supports_whitelisted_functions(expression: str, expected: float) -> None:
    assert calculate(expression) == pytest.approx(expected)


def test_calculate_supports_whitelisted_constants() -> None:
    assert calculate("pi") == math.pi
    assert calculate("e") == math.e
    assert calculate("tau / 2") == math.pi
    assert calculate("round(pi * 2.5**2, 2)") == 19.63


@pytest.mark.parametrize("expression", ["1 / 0", "1 // 0", "5 % 0", "1.0 / 0.0", "0 ** -1"])
def test_calculate_rejects_division_by_zero_with_clear_message(expression: str) -> None:
    with pytest.raises(ToolError) as excinfo:
        calculate(expression)
    assert str(excinfo.value) == f"division by zero in '{expression}'"


def test_calculate_rejects_empty_expression() -> None:
    with pytest.raises(ToolError, match="empty"):
        calculate("   ")


def test_calculate_rejects_too_long_expression_before_parsing() -> None:
    expression = "1+" * (MAX_EXPRESSION_LENGTH // 2) + "1"
    with pytest.raises(ToolError, match="too long"):
        calculate(expression)


def test_calculate_rejects_expression_with_too_many_nodes() -> None:
    expression = "+".join(["1"] * (MAX_NODES // 2 + 1))
    assert len(expression) <= MAX_EXPRESSION_LENGTH
    with pytest.raises(ToolError, match="too complex"):
        calculate(expression)


def test_calculate_rejects_deeply_nested_unary_operators() -> None:
    with pytest.raises(ToolError, match="too complex"):
        calculate("-" * 900 + "1")


def test_calculate_rejects_deeply_nested_parentheses() -> None:
    with pytest.raises(ToolError):
        calculate("(" * 400 + "1" + ")" * 400)


def test_calculate_allows_moderate_nesting() -> None:
    assert calculate("(" * 50 + "1" + ")" * 50) == 1
    assert calculate("-(-(-(-(1 + 1))))") == 2


@pytest.mark.parametrize("expression", ["9**9**9", "2**100000", "10**10**10", "2.0**99999"])
def test_calculate_rejects_huge_exponent(expression: str) -> None:
    with pytest.raises(ToolError, match=r"exponent .* too large"):
        calculate(expression)


def test_calculate_rejects_integer_power_whose_result_is_too_large() -> None:
    with pytest.raises(ToolError, match="too large"):
        calculate("10**5000")


def test_calculate_rejects_repeated_multiplication_growing_past_the_size_limit() -> None:
    with pytest.raises(ToolError, match="too large"):
        calculate("(2**4000) * (2**4000)")


def test_calculate_accepts_integers_up_to_the_size_limit() -> None:
    assert calculate(f"2**{MAX_INT_BITS - 1}") == 2 ** (MAX_INT_BITS - 1)


def test_calculate_rejects_float_overflow() -> None:
    with pytest.raises(ToolError, match="too large"):
        calculate("10.0 ** 400")
    with pytest.raises(ToolError, match="too large"):
        calculate("exp(1000)")


def test_calculate_rejects_int_too_large_for_float_conversion() -> None:
    with pytest.raises(ToolError, match="too large"):
        calculate("10**400 / 3")


def test_calculate_rejects_non_finite_results() -> None:
    with pytest.raises(ToolError, match="finite"):
        calculate("1e308 * 10")
    with pytest.raises(ToolError, match="finite"):
        calculate("1e999")


def test_calculate_rejects_complex_results() -> None:
    with pytest.raises(ToolError, match="complex"):
        calculate("(-8) ** 0.5")


def test_calculate_rejects_round_with_unbounded_digits() -> None:
    with pytest.raises(ToolError, match="round"):
        calculate("round(1, -10**100)")


def test_calculate_reports_math_domain_errors() -> None:
    with pytest.raises(ToolError, match=r"invalid arguments for sqrt\(\)"):
        calculate("sqrt(-1)")
    with pytest.raises(ToolError, match=r"invalid arguments for log\(\)"):
        calculate("log(0)")


def test_calculate_reports_wrong_argument_count() -> None:
    with pytest.raises(ToolError, match=r"invalid arguments for sqrt\(\)"):
        calculate("sqrt(1, 2)")
    with pytest.raises(ToolError, match=r"invalid arguments for min\(\)"):
        calculate("min()")


def test_calculate_rejects_unknown_name_and_names_it() -> None:
    with pytest.raises(ToolError, match="unknown name 'x'") as excinfo:
        calculate("x + 1")
    assert "pi" in str(excinfo.value)


@pytest.mark.parametrize(
    ("expression", "token"),
    [
        ("__import__('os')", "__import__"),
        ("eval('1')", "eval"),
        ("open('f')", "open"),
        ("factorial(5)", "factorial"),
    ],
)
def test_calculate_rejects_calls_outside_whitelist_naming_the_function(
    expression: str, token: str
) -> None:
    with pytest.raises(ToolError, match=f"unknown function '{token}'"):
        calculate(expression)


@pytest.mark.parametrize(
    ("expression", "token"),
    [
        ("math.pi", "math.pi"),
        ("(1).real", "(1).real"),
        ("().__class__", "().__class__"),
    ],
)
def test_calculate_rejects_attribute_access_naming_it(expression: str, token: str) -> None:
    with pytest.raises(ToolError, match="attribute access") as excinfo:
        calculate(expression)
    assert token in str(excinfo.value)


def test_calculate_rejects_call_of_attribute() -> None:
    with pytest.raises(ToolError, match=r"call of 'math\.sqrt' is not allowed"):
        calculate("math.sqrt(4)")


def test_calculate_rejects_function_used_without_call() -> None:
    with pytest.raises(ToolError, match="'sqrt' is a function"):
        calculate("sqrt + 1")


def test_calculate_rejects_keyword_and_starred_arguments() -> None:
    with pytest.raises(ToolError, match="keyword arguments"):
        calculate("round(2.5, ndigits=1)")
    with pytest.raises(ToolError, match="unpacking"):
        calculate("max(*[1, 2])")


@pytest.mark.parametrize(
    ("expression", "symbol"),
    [
        ("1 << 2", "<<"),
        ("1 & 2", "&"),
        ("1 | 2", "|"),
        ("~1", "~"),
        ("1 < 2", "<"),
        ("1 == 1", "=="),
        ("1 and 2", "and"),
        ("not 1", "not"),
    ],
)
def test_calculate_rejects_unsupported_operators_naming_them(expression: str, symbol: str) -> None:
    with pytest.raises(ToolError, match=f"unsupported operator '{symbol}'"):
        calculate(expression)


def test_calculate_suggests_double_star_for_caret() -> None:
    with pytest.raises(ToolError, match=r"unsupported operator '\^'.*use \*\* for exponentiation"):
        calculate("2 ^ 3")


@pytest.mark.parametrize(
    "expression",
    ["'abc'", "True", "None", "1j", "[1, 2]", "(1, 2)", "{1: 2}", "x if 1 else 2", "lambda: 1"],
)
def test_calculate_rejects_non_numeric_syntax(expression: str) -> None:
    with pytest.raises(ToolError):
        calculate(expression)


@pytest.mark.parametrize("expression", ["1 +", "(1", "1 2", "import os", "x = 1", "1\x00"])
def test_calculate_rejects_invalid_syntax_with_clear_message(expression: str) -> None:
    with pytest.raises(ToolError, match="invalid expression"):
        calculate(expression)

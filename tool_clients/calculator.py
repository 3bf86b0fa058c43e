"""Calculator tool microservice: safe evaluation of arithmetic expressions.

The expression is parsed with :func:`ast.parse` and walked by a small interpreter that
only understands numbers, arithmetic operators, parentheses and a whitelist of math
functions and constants. Nothing is ever compiled or executed as Python code.

Every evaluation is bounded: the expression length, the number of syntax-tree nodes,
the magnitude of exponents and the size of integer (intermediate) results are all
capped, so inputs such as ``9**9**9`` are rejected instantly instead of exhausting the
CPU or memory of the service.

Run it with::

    python -m tool_clients.calculator --broker mqtt://127.0.0.1:1883
"""

import ast
import math
import operator
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from argentic_tools import ToolError, serve_main, tool

__all__ = [
    "MAX_EXPONENT",
    "MAX_EXPRESSION_LENGTH",
    "MAX_INT_BITS",
    "MAX_NODES",
    "MAX_ROUND_DIGITS",
    "calculate",
    "main",
]

MAX_EXPRESSION_LENGTH = 1000
"""Longest accepted expression, in characters."""

MAX_NODES = 300
"""Largest accepted syntax tree, in AST nodes (this also bounds the recursion depth)."""

MAX_EXPONENT = 10_000
"""Largest accepted absolute value of an exponent."""

MAX_INT_BITS = 4096
"""Largest accepted integer result (intermediate or final), in bits (about 1233 digits)."""

MAX_ROUND_DIGITS = 100
"""Largest accepted absolute value of the ``ndigits`` argument of ``round``."""

Number = int | float

_BINARY_OPERATORS: dict[type[ast.operator], tuple[str, Callable[[Any, Any], Any]]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
    ast.Pow: ("**", operator.pow),
}

_UNSUPPORTED_OPERATOR_SYMBOLS: dict[type[ast.AST], str] = {
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
    ast.Invert: "~",
    ast.Not: "not",
    ast.And: "and",
    ast.Or: "or",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}

_UNARY_OPERATORS: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}
"""Named constants usable in expressions."""


def _round(value: Number, ndigits: int | None = None) -> Number:
    """Bounded ``round``: a huge ``ndigits`` would make CPython compute ``10**ndigits``."""
    if ndigits is None:
        return round(value)
    if not isinstance(ndigits, int):
        raise TypeError("round() ndigits must be an integer")
    if abs(ndigits) > MAX_ROUND_DIGITS:
        raise ValueError(
            f"round() ndigits must be between -{MAX_ROUND_DIGITS} and {MAX_ROUND_DIGITS}"
        )
    return round(value, ndigits)


FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": _round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "floor": math.floor,
    "ceil": math.ceil,
    "hypot": math.hypot,
}
"""Functions callable in expressions (positional arguments only)."""

_ALLOWED_CONSTANTS = ", ".join(sorted(CONSTANTS))
_ALLOWED_FUNCTIONS = ", ".join(sorted(FUNCTIONS))


class _Evaluator:
    """Recursive interpreter for a pre-validated arithmetic syntax tree."""

    def __init__(self, expression: str) -> None:
        self.expression = expression

    def error(self, message: str) -> ToolError:
        return ToolError(f"{message} in '{self.expression}'")

    def check(self, value: Any) -> Number:
        """Validate an (intermediate) result: a real, finite number of bounded size."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            if isinstance(value, complex):
                raise self.error("result is a complex number")
            raise self.error(f"unsupported value {value!r}")
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise self.error(f"result is too large (more than {MAX_INT_BITS} bits)")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error("result is not a finite number")
        return value

    def eval(self, node: ast.AST) -> Number:
        if isinstance(node, ast.Expression):
            return self.eval(node.body)
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise self.error(f"unsupported literal {value!r}")
            return self.check(value)
        if isinstance(node, ast.BinOp):
            return self.binary(node)
        if isinstance(node, ast.UnaryOp):
            unary = _UNARY_OPERATORS.get(type(node.op))
            if unary is None:
                raise self.unsupported_operator(node.op)
            return self.check(unary(self.eval(node.operand)))
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BoolOp):
            raise self.unsupported_operator(node.op)
        if isinstance(node, ast.Compare):
            raise self.unsupported_operator(node.ops[0])
        if isinstance(node, ast.Attribute):
            raise self.error(f"attribute access '{ast.unparse(node)}' is not allowed")
        raise self.error(f"unsupported syntax '{ast.unparse(node)}'")

    def unsupported_operator(self, op: ast.AST) -> ToolError:
        symbol = _UNSUPPORTED_OPERATOR_SYMBOLS.get(type(op), type(op).__name__)
        hint = "; use ** for exponentiation" if isinstance(op, ast.BitXor) else ""
        return ToolError(f"unsupported operator '{symbol}' in '{self.expression}'{hint}")

    def binary(self, node: ast.BinOp) -> Number:
        entry = _BINARY_OPERATORS.get(type(node.op))
        if entry is None:
            raise self.unsupported_operator(node.op)
        symbol, function = entry
        left = self.eval(node.left)
        right = self.eval(node.right)
        if symbol == "**":
            self.check_power(left, right)
        try:
            return self.check(function(left, right))
        except ZeroDivisionError:
            raise ToolError(f"division by zero in '{self.expression}'") from None
        except OverflowError:
            raise self.error("result is too large") from None

    def check_power(self, base: Number, exponent: Number) -> None:
        """Reject exponentiations whose cost or result would be unbounded."""
        if abs(exponent) > MAX_EXPONENT:
            raise self.error(f"exponent {exponent} is too large (limit is {MAX_EXPONENT})")
        if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
            estimated_bits = exponent * math.log2(abs(base))
            if estimated_bits > MAX_INT_BITS:
                raise self.error(
                    f"result of {base}**{exponent} is too large (more than {MAX_INT_BITS} bits)"
                )

    def name(self, node: ast.Name) -> Number:
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        if node.id in FUNCTIONS:
            raise self.error(f"'{node.id}' is a function; call it like {node.id}(x)")
        raise self.error(
            f"unknown name '{node.id}' (allowed constants: {_ALLOWED_CONSTANTS}; "
            f"allowed functions: {_ALLOWED_FUNCTIONS})"
        )

    def call(self, node: ast.Call) -> Number:
        if not isinstance(node.func, ast.Name):
            raise self.error(f"call of '{ast.unparse(node.func)}' is not allowed")
        function_name = node.func.id
        function = FUNCTIONS.get(function_name)
        if function is None:
            raise self.error(
                f"unknown function '{function_name}' (allowed functions: {_ALLOWED_FUNCTIONS})"
            )
        if node.keywords:
            raise self.error(f"keyword arguments are not supported in {function_name}()")
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            raise self.error(f"argument unpacking is not supported in {function_name}()")
        args = [self.eval(arg) for arg in node.args]
        try:
            return self.check(function(*args))
        except ZeroDivisionError:
            raise ToolError(f"division by zero in '{self.expression}'") from None
        except OverflowError:
            raise self.error(f"result of {function_name}() is too large") from None
        except (TypeError, ValueError) as exc:
            raise self.error(f"invalid arguments for {function_name}(): {exc}") from None


def _parse(expression: str) -> ast.Expression:
    """Parse and size-check ``expression`` (no evaluation happens here)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"invalid expression '{expression}': {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError):
        raise ToolError(f"invalid expression '{expression}': too complex or malformed") from None
    node_count = sum(1 for _ in ast.walk(tree))
    if node_count > MAX_NODES:
        raise ToolError(
            f"expression is too complex ({node_count} syntax nodes, limit is {MAX_NODES})"
        )
    return tree


@tool(
    tags=["math"],
    examples=[
        {"input": {"expression": "2 * (3 + 4)"}, "output": 14},
        {"input": {"expression": "sqrt(16) + 2**3"}, "output": 12.0},
        {"input": {"expression": "round(pi * 2.5**2, 2)"}, "output": 19.63},
    ],
)
def calculate(
    expression: Annotated[
        str,
        Field(
            description=(
                "Arithmetic expression to evaluate, e.g. '(1 + 2) * 3 / 4' or 'sqrt(2) * pi'."
            ),
        ),
    ],
) -> float | int:
    """Evaluate an arithmetic expression and return its numeric result.

    Use this tool for any exact arithmetic instead of computing in your head. Supported:
    integer and decimal numbers (including 1e6 notation), the operators + - * / // % and
    ** (power; ^ is not power), unary + and -, parentheses, the constants pi, e and tau,
    and the functions abs, round, min, max, sqrt, exp, log (natural, or log(x, base)),
    log10, log2, sin, cos, tan, asin, acos, atan (radians), floor, ceil and hypot.
    Python rules apply: 7 / 2 is 3.5, 7 // 2 is 3 and 7 % 2 is 1. Expressions are
    limited to 1000 characters, exponents to 10000 and integers to about 1200 digits.

    Args:
        expression: The arithmetic expression to evaluate.

    Returns:
        The result: an integer when the computation stays in integers, else a float.

    """
    text = expression.strip()
    if not text:
        raise ToolError("expression is empty")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ToolError(
            f"expression is too long ({len(text)} characters, limit is {MAX_EXPRESSION_LENGTH})"
        )
    tree = _parse(text)
    return _Evaluator(text).eval(tree)


def main(argv: list[str] | None = None) -> None:
    """Serve the calculator tool until SIGTERM or SIGINT."""
    serve_main(
        [calculate],
        argv,
        prog="python -m tool_clients.calculator",
        description="Serve the 'calculate' tool (safe arithmetic evaluator) over MQTT.",
    )


if __name__ == "__main__":
    main()

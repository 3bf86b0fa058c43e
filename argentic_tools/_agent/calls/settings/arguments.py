"""Checks on arguments before they are sent: what JSON can carry, and strict-mode nulls."""

import math
from typing import Any

MAX_ARGUMENT_DEPTH = 64
"""Deepest nesting of objects and lists accepted in arguments; deeper is refused before
sending (JSON parsers on the way, ours included, stop at a few hundred levels)."""

_JSON_SCALARS = (str, int, float, bool, type(None))


def unsendable(arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` cannot travel as JSON (too deep, a non-JSON value), or None."""
    stack: list[tuple[Any, int, str]] = [(arguments, 1, "$")]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, dict):
            if depth > MAX_ARGUMENT_DEPTH:
                return f"{path} is nested deeper than {MAX_ARGUMENT_DEPTH} levels"
            for key, item in value.items():
                if not isinstance(key, str):
                    return f"{path} has a key that is not a string: {key!r:.60}"
                if not utf8_safe(key):
                    return f"{path} has a key that UTF-8 cannot carry (a lone surrogate)"
                stack.append((item, depth + 1, f"{path}.{key}"))
        elif isinstance(value, list | tuple):
            if depth > MAX_ARGUMENT_DEPTH:
                return f"{path} is nested deeper than {MAX_ARGUMENT_DEPTH} levels"
            stack.extend((item, depth + 1, f"{path}[{i}]") for i, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            return f"{path} is {value}, which JSON cannot carry"
        elif not isinstance(value, _JSON_SCALARS):
            return f"{path} is a {type(value).__name__}, which is not a JSON value"
        elif isinstance(value, str) and not utf8_safe(value):
            return f"{path} is a string that UTF-8 cannot carry (a lone surrogate)"
    return None


def utf8_safe(text: str) -> bool:
    """True when ``text`` can be encoded as UTF-8 (it holds no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def without_skipped_nulls(
    arguments: dict[str, Any], schema: dict[str, Any], problems: list[dict[str, Any]]
) -> dict[str, Any]:
    """``arguments`` without the nulls given for optional parameters that refuse null."""
    required = set(schema.get("required", ()))
    properties = schema.get("properties", {})
    skipped = {
        key
        for key, value in arguments.items()
        if value is None
        and key in properties
        and key not in required
        and any(p["path"] == f"$.{key}" for p in problems)
    }
    if not skipped:
        return arguments
    return {key: value for key, value in arguments.items() if key not in skipped}

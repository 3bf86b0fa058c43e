"""JSON Schema validation with paths, shared by both sides.

The manager compiles each tool's schema once into a :class:`SchemaValidator`
and checks arguments before anything is published; both sides describe
problems the same way: ``{"path": "$.a[0]", "message": ..., "got": ...}``.
"""

import json
import typing
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError as PydanticValidationError


def pydantic_problems(exc: PydanticValidationError) -> list[dict[str, Any]]:
    """One ``{"path", "message", "got"}`` entry per pydantic validation problem."""
    problems = []
    for error in exc.errors(include_url=False):
        path = json_path(error["loc"])
        entry: dict[str, Any] = {"path": path, "message": error["msg"]}
        if error["type"] == "extra_forbidden":
            entry["message"] = f"unexpected argument '{error['loc'][-1]}'"
        elif error["type"] != "missing":
            entry["got"] = _short(error.get("input"))
        problems.append(entry)
    return problems


def json_path(location: typing.Iterable[Any]) -> str:
    """``("a", 0, "b")`` to ``$.a[0].b``."""
    path = "$"
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _short(value: Any, limit: int = 80) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        text = repr(value)
        return value if len(text) <= limit else text[: limit - 3] + "..."
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_PRIMITIVE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated"})
_FAST_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "items"}


def _fast_check(schema: Any) -> Callable[[Any], bool] | None:
    """A quick "certainly valid" test for the flat schemas tools usually have, or None.

    Handles ``type`` (one name), ``properties``, ``required``, ``additionalProperties:
    false`` and array ``items``, plus annotations; any other keyword gives None, and then
    jsonschema alone decides. The test may say False for a valid instance (jsonschema
    then decides) but never True for an invalid one. jsonschema creates a validator per
    property it descends into: ~45 µs for five typed fields, ~2 µs here.
    """
    if not isinstance(schema, dict) or set(schema) - _FAST_KEYWORDS:
        return None
    kind = schema.get("type")
    if not isinstance(kind, str):
        return None
    rest = set(schema) - _ANNOTATIONS - {"type"}
    if kind in _PRIMITIVE_CHECKS:
        return None if rest else _PRIMITIVE_CHECKS[kind]
    if kind == "array":
        item = _fast_check(schema["items"]) if rest == {"items"} else None
        if item is None:
            return None
        return lambda v: isinstance(v, list) and all(item(x) for x in v)
    if kind != "object" or schema.get("additionalProperties", False) is not False:
        return None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(props, dict) or not isinstance(required, list):
        return None
    checks = {name: _fast_check(sub) for name, sub in props.items()}
    if any(check is None for check in checks.values()):
        return None
    needed = frozenset(required)

    def check_object(v: Any) -> bool:
        if not isinstance(v, dict) or not needed.issubset(v):
            return False
        for key, value in v.items():
            check = checks.get(key)
            if check is None or not check(value):
                return False
        return True

    return check_object


class SchemaValidator:
    """A JSON Schema compiled once; validates instances and reports each problem by path."""

    __slots__ = ("_fast", "_validator", "schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        """Compile ``schema``.

        Raises:
            ValueError: ``schema`` is not a valid JSON Schema.

        """
        # Imported here: tool processes only describe pydantic's problems and never
        # compile a schema, and jsonschema costs ~75 ms at every process start.
        import jsonschema.exceptions
        import jsonschema.validators

        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(schema)
        except jsonschema.exceptions.SchemaError as exc:
            raise ValueError(f"invalid JSON Schema: {exc.message}") from None
        self.schema = schema
        self._validator = cls(schema)
        self._fast = _fast_check(schema)

    def problems(self, instance: Any) -> list[dict[str, Any]]:
        """One entry per problem (``path``, ``message``, ``expected``, ``got``); [] if valid."""
        if (self._fast is not None and self._fast(instance)) or self._validator.is_valid(instance):
            return []
        problems = []
        for error in sorted(self._validator.iter_errors(instance), key=lambda e: list(e.path)):
            entry: dict[str, Any] = {
                "path": json_path(error.absolute_path),
                "message": error.message,
            }
            if error.validator in ("type", "enum", "const", "format", "pattern"):
                entry["expected"] = error.validator_value
                entry["got"] = _short(error.instance)
            problems.append(entry)
        return problems


class ValidatorCache:
    """Validators by canonical schema, compiled once each (tools re-register often).

    Owned by whoever compiles (each manager's registry), bounded to ``size``
    distinct schemas, least recently used dropped first.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._validators: OrderedDict[str, SchemaValidator] = OrderedDict()

    def get(self, schema: dict[str, Any]) -> SchemaValidator:
        """The validator for ``schema``.

        Raises:
            ValueError: ``schema`` is not a valid JSON Schema.

        """
        return self.for_key(self.key(schema))

    def for_key(self, key: str) -> SchemaValidator:
        """The validator for the schema whose canonical JSON (:meth:`key`) is ``key``.

        Raises:
            ValueError: The schema is not a valid JSON Schema.

        """
        validator = self._validators.get(key)
        if validator is None:
            self.put(key, SchemaValidator(json.loads(key)))
            validator = self._validators[key]
        else:
            self._validators.move_to_end(key)
        return validator

    @staticmethod
    def key(schema: dict[str, Any]) -> str:
        """The canonical JSON of ``schema`` (also its size on the wire, roughly)."""
        return json.dumps(schema, sort_keys=True, separators=(",", ":"))

    def has(self, key: str) -> bool:
        """True when the schema with this canonical JSON is compiled already."""
        return key in self._validators

    def put(self, key: str, validator: "SchemaValidator") -> None:
        """Keep a validator compiled elsewhere (e.g. in a worker thread)."""
        self._validators[key] = validator
        if len(self._validators) > self._size:
            self._validators.popitem(last=False)


def describe_problems(problems: list[dict[str, Any]]) -> str:
    """A one-line summary an LLM can act on: each path and what is wrong there."""
    return "; ".join(f"{p['path']}: {p['message']}" for p in problems)

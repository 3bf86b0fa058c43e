"""A tool's signature to a pydantic model to the JSON Schema sent on the wire.

A ``@tool`` function's signature becomes a pydantic model (one field per
parameter, extra keys forbidden); the model gives the argument JSON Schema and
validates arguments in the tool process.
"""

import inspect
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, PydanticSchemaGenerationError, TypeAdapter, create_model

from ..._errors import ToolDefinitionError
from ..._protocol.content import BLOCK_TYPES
from ..call.output import ToolOutput

EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

_DATA_KEYWORDS = frozenset({"default", "examples", "const", "enum", "example"})


def clean_schema(schema: Any) -> Any:
    """Drop pydantic's generated ``title`` strings: they cost tokens and say nothing.

    Values under data keywords (``default``, ``examples``, ``const``, ``enum``) are
    data, not schemas, and are kept exactly as they are.
    """
    if isinstance(schema, dict):
        return {
            key: value if key in _DATA_KEYWORDS else clean_schema(value)
            for key, value in schema.items()
            if not (key == "title" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [clean_schema(item) for item in schema]
    return schema


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """JSON Schema of an arguments model, in the form sent on the wire."""
    schema = clean_schema(model.model_json_schema())
    schema.setdefault("properties", {})
    return dict(schema)


def is_context_parameter(param: inspect.Parameter, hint: Any, context_type: type) -> bool:
    """True when a parameter asks for the call's context instead of an argument."""
    if hint is context_type:
        return True
    args = typing.get_args(hint)
    if args and context_type in args:
        return True
    return param.name == "context" and hint is inspect.Parameter.empty


def signature_model(
    func: Callable[..., Any], tool_name: str, context_type: type
) -> tuple[type[BaseModel], str | None]:
    """Build the arguments model of ``func``.

    Returns:
        The model and the name of the context parameter (None when absent).

    Raises:
        ToolDefinitionError: The signature has ``*args``/``**kwargs`` or
            positional-only parameters, or an annotation pydantic cannot
            represent; the message names the tool and the parameter.

    """
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception as exc:  # noqa: BLE001 - get_type_hints raises anything an annotation does
        raise ToolDefinitionError(
            f"tool {tool_name!r}: cannot resolve the type hints of {func.__qualname__}: {exc}"
        ) from None
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"tool {tool_name!r}: parameter '{param.name}' is "
                f"{'*args' if param.kind is param.VAR_POSITIONAL else '**kwargs'}; "
                "tools take named parameters only, so the schema can list them"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolDefinitionError(
                f"tool {tool_name!r}: parameter '{param.name}' is positional-only; "
                "tool arguments are passed by name"
            )
        hint = hints.get(param.name, param.annotation)
        if is_context_parameter(param, hint, context_type):
            context_param = param.name
            continue
        if hint is inspect.Parameter.empty:
            hint = Any
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hint, default)
    try:
        model = create_model(
            f"{_camel(tool_name)}Arguments",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        model.model_json_schema()
    except (PydanticSchemaGenerationError, TypeError, ValueError) as exc:
        raise ToolDefinitionError(
            f"tool {tool_name!r}: an annotation cannot be turned into a JSON Schema: "
            f"{str(exc).splitlines()[0]}"
        ) from None
    return model, context_param


def output_schema(func: Callable[..., Any], tool_name: str) -> dict[str, Any] | None:
    """JSON Schema of ``func``'s return annotation, or None when it declares nothing useful."""
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception:  # noqa: BLE001 - an unresolvable return hint declares nothing
        return None
    if "return" not in hints:
        return None
    hint = hints["return"]
    if inspect.isasyncgenfunction(func) or inspect.isgeneratorfunction(func):
        # A generator tool's result is the list of what it yields.
        item = typing.get_args(hint)[0] if typing.get_args(hint) else Any
        hint = list[item]  # type: ignore[valid-type]
    if hint is None or hint is type(None) or hint is Any or _returns_blocks(hint):
        return None
    try:
        schema = TypeAdapter(hint).json_schema(mode="serialization")
    except (PydanticSchemaGenerationError, TypeError, ValueError) as exc:
        raise ToolDefinitionError(
            f"tool {tool_name!r}: the return annotation cannot be turned into a JSON Schema: "
            f"{str(exc).splitlines()[0]}"
        ) from None
    cleaned: dict[str, Any] = clean_schema(schema)
    return cleaned


def _returns_blocks(hint: Any) -> bool:
    """True when a return annotation names content blocks or a ToolOutput.

    Their result is content, with a plain rendering or a value of any shape beside it:
    no schema describes it.
    """
    if isinstance(hint, type) and issubclass(hint, (*BLOCK_TYPES, ToolOutput)):
        return True
    return any(_returns_blocks(arg) for arg in typing.get_args(hint))


def _camel(name: str) -> str:
    parts = [p for p in "".join(c if c.isalnum() else " " for c in name).split() if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or "Tool"

"""The registry in the shapes LLM providers expect: OpenAI, Anthropic, MCP and prompt JSON.

``openai`` is OpenAI's Chat Completions API (``{"type": "function", "function": {...}}``);
``openai-responses`` is its Responses API, where the function tool is flat
(``{"type": "function", "name", "description", "parameters", "strict"}``) and ``strict``
is always given, since that API turns strict mode on when it is left out.

Provider tool names must match ``^[a-zA-Z0-9_-]{1,64}$`` (OpenAI and Anthropic);
:func:`provider_name` maps other names onto that alphabet, and the manager
resolves such names back when the model calls them.

OpenAI's ``strict`` mode is set only when :func:`strict_schema` could rewrite
the schema into what strict mode accepts: every property required (optional
ones become nullable), ``additionalProperties: false`` on every object, and no
keywords strict mode rejects. The manager still validates calls against the
tool's original schema, so nothing is lost by the rewrite.
"""

import copy
import re
from collections.abc import Iterable
from typing import Any, Literal, get_args

from .info import ToolInfo

ExportFormat = Literal["prompt", "openai", "anthropic", "mcp", "openai-responses"]
"""The formats :meth:`~argentic_tools.ToolManager.export_tools` and
:meth:`~argentic_tools.ToolManager.export_result` produce (``openai`` is Chat Completions,
``openai-responses`` the Responses API)."""
EXPORT_FORMATS: tuple[str, ...] = get_args(ExportFormat)

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_STRICT_UNSUPPORTED = frozenset(
    {
        "default",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "patternProperties",
        "unevaluatedProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "unevaluatedItems",
        "contains",
        "minContains",
        "maxContains",
        "minItems",
        "maxItems",
        "uniqueItems",
        "examples",
        "title",
    }
)


class NotStrictCompatibleError(ValueError):
    """The schema uses a construct OpenAI's strict mode cannot express."""


def provider_name(name: str) -> str:
    """``name`` restricted to ``[a-zA-Z0-9_-]`` and 64 characters."""
    safe = _UNSAFE.sub("_", name)[:64]
    return safe or "tool"


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Rewrite ``schema`` for OpenAI strict mode.

    Raises:
        NotStrictCompatibleError: The schema allows free-form objects (additional
            properties with a schema) or uses keywords that cannot be rewritten.

    """
    result: dict[str, Any] = _strict(copy.deepcopy(schema), top=True)
    return result


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]} if kind != "null" else schema
    if isinstance(kind, list):
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    if "anyOf" in schema:
        variants = schema["anyOf"]
        if any(v.get("type") == "null" for v in variants if isinstance(v, dict)):
            return schema
        return {**schema, "anyOf": [*variants, {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


def _strict(schema: Any, *, top: bool = False) -> Any:
    if not isinstance(schema, dict):
        return schema
    for keyword in ("allOf", "oneOf", "not", "if", "then", "else", "dependentSchemas"):
        if keyword in schema:
            raise NotStrictCompatibleError(f"strict mode cannot express '{keyword}'")
    out = {k: v for k, v in schema.items() if k not in _STRICT_UNSUPPORTED}
    if not top and not any(k in out for k in ("type", "anyOf", "$ref", "enum", "const")):
        # Any JSON value (an unannotated parameter): strict mode needs a type everywhere.
        raise NotStrictCompatibleError("strict mode cannot express 'any JSON value'")
    if "$defs" in out:
        out["$defs"] = {k: _strict(v) for k, v in out["$defs"].items()}
    is_object = out.get("type") == "object" or "properties" in out
    if is_object:
        extra = out.get("additionalProperties", False)
        if extra not in (False, None):
            raise NotStrictCompatibleError("strict mode requires additionalProperties: false")
        properties = out.get("properties", {})
        required = set(out.get("required", []))
        out["properties"] = {
            key: _strict(value) if key in required else _nullable(_strict(value))
            for key, value in properties.items()
        }
        out["required"] = list(properties)
        out["additionalProperties"] = False
        out.setdefault("type", "object")
    if "items" in out:
        out["items"] = _strict(out["items"])
    if "anyOf" in out:
        out["anyOf"] = [_strict(v) for v in out["anyOf"]]
    if top and not is_object:
        raise NotStrictCompatibleError("the top-level schema must be an object")
    return out


def prompt_entry(info: ToolInfo) -> dict[str, Any]:
    """Document 004's prompt format: ``tool_id``, ``name``, ``description``, ``parameters``."""
    return {
        "tool_id": info.id,
        "name": info.name,
        "description": info.description,
        "parameters": info.input_schema,
    }


def _function(info: ToolInfo, strict: bool) -> dict[str, Any]:
    """``name``, ``description``, ``parameters`` and ``strict`` (only when it is on)."""
    function: dict[str, Any] = {
        "name": provider_name(info.name),
        "description": info.description,
        "parameters": info.input_schema,
    }
    if strict:
        try:
            function["parameters"] = strict_schema(info.input_schema)
            function["strict"] = True
        except NotStrictCompatibleError:
            pass
    return function


def openai_entry(info: ToolInfo, strict: bool = True) -> dict[str, Any]:
    """A Chat Completions function tool (``{"type": "function", "function": {...}}``)."""
    return {"type": "function", "function": _function(info, strict)}


def openai_responses_entry(info: ToolInfo, strict: bool = True) -> dict[str, Any]:
    """A Responses API function tool: flat, ``strict`` always given (that API defaults to on)."""
    entry = {"type": "function", **_function(info, strict)}
    entry.setdefault("strict", False)
    return entry


def anthropic_entry(info: ToolInfo) -> dict[str, Any]:
    """An Anthropic Messages API tool (``name``, ``description``, ``input_schema``)."""
    return {
        "name": provider_name(info.name),
        "description": info.description,
        "input_schema": info.input_schema,
    }


def mcp_entry(info: ToolInfo) -> dict[str, Any]:
    """An MCP ``tools/list`` entry (``name``, ``description``, ``inputSchema``, ...)."""
    entry: dict[str, Any] = {
        "name": info.name,
        "description": info.description,
        "inputSchema": info.input_schema,
    }
    output = info.output_schema
    # MCP requires an object output schema (it describes structuredContent).
    if output is not None and output.get("type") == "object":
        entry["outputSchema"] = output
    if info.annotations:
        entry["annotations"] = info.annotations
    if info.tags:
        entry["_meta"] = {"tags": list(info.tags)}
    return entry


def export(
    infos: Iterable[ToolInfo], fmt: ExportFormat | str, *, strict: bool = True
) -> list[dict[str, Any]]:
    """Export ``infos`` in format ``fmt`` (one of :data:`EXPORT_FORMATS`).

    Raises:
        ValueError: Unknown format.

    """
    if fmt == "prompt":
        return [prompt_entry(info) for info in infos]
    if fmt == "openai":
        return [openai_entry(info, strict) for info in infos]
    if fmt == "openai-responses":
        return [openai_responses_entry(info, strict) for info in infos]
    if fmt == "anthropic":
        return [anthropic_entry(info) for info in infos]
    if fmt == "mcp":
        return [mcp_entry(info) for info in infos]
    raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")

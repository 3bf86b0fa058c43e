"""Schema rewrites and tool shapes for provider exports, without a broker."""

from typing import Any

import pytest

from argentic_tools._agent.fleet.exports import (
    NotStrictCompatibleError,
    export,
    provider_name,
    strict_schema,
)
from argentic_tools._agent.fleet.info import ToolInfo

ADD: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "integer"}},
    "required": ["a"],
}
FREE: dict[str, Any] = {
    "type": "object",
    "properties": {},
    "additionalProperties": {"type": "string"},
}


def info(name: str, schema: dict[str, Any]) -> ToolInfo:
    return ToolInfo("id-" + name, name, "does " + name, schema, None, (), (), None, "")


STRICT_ADD = {**ADD, "additionalProperties": False}


def test_provider_name_is_restricted_to_the_provider_alphabet() -> None:
    assert provider_name("Email Sender") == "Email_Sender"
    assert provider_name("a.b/c") == "a_b_c"
    assert len(provider_name("x" * 100)) == 64


def test_strict_schema_makes_optional_properties_required_and_nullable() -> None:
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string", "minLength": 1},
            "limit": {"type": "integer", "default": 10},
            "where": {"$ref": "#/$defs/Place"},
        },
        "required": ["q"],
        "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
    strict = strict_schema(schema)
    assert strict["required"] == ["q", "limit", "where"]
    assert strict["additionalProperties"] is False
    assert strict["properties"]["q"] == {"type": "string"}
    assert strict["properties"]["limit"] == {"type": ["integer", "null"]}
    assert strict["properties"]["where"] == {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]}
    assert strict["$defs"]["Place"]["additionalProperties"] is False
    assert strict["$defs"]["Place"]["required"] == ["city"]
    assert schema["required"] == ["q"], "the original schema is left untouched"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}},
        {"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}]}}},
        {"type": "array", "items": {"type": "string"}},
        # An unannotated parameter (def greet(name)) takes any JSON value.
        {"type": "object", "properties": {"name": {}}, "required": ["name"]},
    ],
)
def test_schemas_strict_mode_cannot_express_are_refused(schema: dict[str, object]) -> None:
    with pytest.raises(NotStrictCompatibleError):
        strict_schema(schema)


def test_openai_is_the_chat_completions_shape_nested_under_function() -> None:
    add, free = export([info("add", ADD), info("free", FREE)], "openai")
    assert add == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "does add",
            "parameters": STRICT_ADD,
            "strict": True,
        },
    }
    assert "strict" not in free["function"]  # Chat Completions defaults to not strict


def test_openai_responses_is_the_flat_responses_api_shape_with_strict_always_given() -> None:
    add, free = export([info("add", ADD), info("free", FREE)], "openai-responses")
    assert add == {
        "type": "function",
        "name": "add",
        "description": "does add",
        "parameters": STRICT_ADD,
        "strict": True,
    }
    # The Responses API turns strict mode on when it is left out: say it is off.
    assert free == {
        "type": "function",
        "name": "free",
        "description": "does free",
        "parameters": FREE,
        "strict": False,
    }
    [loose] = export([info("add", ADD)], "openai-responses", strict=False)
    assert loose["strict"] is False and loose["parameters"] == ADD

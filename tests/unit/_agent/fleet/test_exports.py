"""Schema rewrites for provider exports, without a broker."""

import pytest

from argentic_tools._agent.fleet.exports import (
    NotStrictCompatibleError,
    provider_name,
    strict_schema,
)


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

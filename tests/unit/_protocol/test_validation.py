"""The validator's fast path never accepts what jsonschema rejects."""

from typing import Any

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argentic_tools._protocol.validation import SchemaValidator, _fast_check

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "who"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "nothing": {"type": "null"},
    },
    "required": ["name", "count"],
    "additionalProperties": False,
}
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
instances = (
    st.dictionaries(
        st.sampled_from(["name", "count", "ratio", "flag", "tags", "nothing", "extra"]),
        values,
        max_size=7,
    )
    | values
)


# Built once: compiling a SchemaValidator (it checks the schema) costs more than a check.
FAST = _fast_check(SCHEMA)
VALIDATOR = SchemaValidator(SCHEMA)
REFERENCE = jsonschema.Draft202012Validator(SCHEMA)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=instances)
def test_fast_path_agrees_with_jsonschema_whenever_it_accepts(instance: Any) -> None:
    assert FAST is not None
    if FAST(instance):
        assert REFERENCE.is_valid(instance)
    assert (VALIDATOR.problems(instance) == []) == REFERENCE.is_valid(instance)


def test_schemas_with_other_keywords_go_to_jsonschema_alone() -> None:
    assert _fast_check({"type": "string", "minLength": 2}) is None
    assert _fast_check({"type": ["string", "null"]}) is None
    assert _fast_check({"type": "object", "additionalProperties": True}) is None
    assert _fast_check({"type": "array", "items": {"enum": [1]}}) is None
    assert _fast_check({"anyOf": []}) is None
    assert _fast_check({"type": "object", "properties": {"a": {"$ref": "#/x"}}}) is None
    assert _fast_check({"type": "object", "properties": [], "required": []}) is None

"""The JSON Schemas ``@tool`` derives from a signature, and the signatures it refuses.

The expected schemas are written out in full: they are what every manager and every LLM
sees, so any change to them is a protocol change and must show up here.
"""

import enum
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field

from argentic_tools import FunctionTool, ToolContext, ToolDefinitionError, tool
from argentic_tools._tools.definition.definition import as_tool


def built(func: Any) -> FunctionTool:
    """The FunctionTool that ``@tool`` attached to ``func``."""
    attached = func.__argentic_tool__
    assert isinstance(attached, FunctionTool)
    return attached


# -- schemas of parameters ------------------------------------------------------------------


def test_plain_parameters_with_defaults_become_typed_properties_and_required_list() -> None:
    @tool
    def plain(count: int, label: str = "x", ratio: float = 0.5, flag: bool = False) -> int:
        """Count things."""
        return count

    assert built(plain).input_schema == {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "label": {"type": "string", "default": "x"},
            "ratio": {"type": "number", "default": 0.5},
            "flag": {"type": "boolean", "default": False},
        },
        "required": ["count"],
        "additionalProperties": False,
    }


def test_annotated_field_description_and_bounds_reach_the_schema() -> None:
    @tool
    def repeat(times: Annotated[int, Field(description="How many times", ge=0)]) -> None:
        """Repeat."""

    assert built(repeat).input_schema == {
        "type": "object",
        "properties": {
            "times": {"type": "integer", "description": "How many times", "minimum": 0},
        },
        "required": ["times"],
        "additionalProperties": False,
    }


def test_literal_parameter_becomes_a_string_enum() -> None:
    @tool
    def pick(mode: Literal["a", "b"] = "a") -> None:
        """Pick a mode."""

    assert built(pick).input_schema == {
        "type": "object",
        "properties": {"mode": {"type": "string", "enum": ["a", "b"], "default": "a"}},
        "additionalProperties": False,
    }


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


def test_enum_parameter_becomes_a_referenced_definition() -> None:
    @tool
    def paint(color: Color) -> Color:
        """Paint."""
        return color

    assert built(paint).input_schema == {
        "type": "object",
        "properties": {"color": {"$ref": "#/$defs/Color"}},
        "required": ["color"],
        "additionalProperties": False,
        "$defs": {"Color": {"type": "string", "enum": ["red", "green"]}},
    }


class Point(BaseModel):
    x: int
    y: Annotated[float, Field(description="Vertical position")] = 0.0


def test_nested_pydantic_model_goes_to_defs_and_is_referenced_everywhere_it_is_used() -> None:
    @tool
    def plot(point: Point, more: list[Point] | None = None) -> None:
        """Plot points."""

    assert built(plot).input_schema == {
        "type": "object",
        "properties": {
            "point": {"$ref": "#/$defs/Point"},
            "more": {
                "anyOf": [
                    {"type": "array", "items": {"$ref": "#/$defs/Point"}},
                    {"type": "null"},
                ],
                "default": None,
            },
        },
        "required": ["point"],
        "additionalProperties": False,
        "$defs": {
            "Point": {
                "type": "object",
                "properties": {
                    "x": {"type": "integer"},
                    "y": {"type": "number", "description": "Vertical position", "default": 0.0},
                },
                "required": ["x"],
            }
        },
    }


def test_nested_model_arguments_reach_the_function_as_model_instances() -> None:
    @tool
    def plot(point: Point) -> None:
        """Plot."""

    kwargs = as_tool(plot).validate_arguments({"point": {"x": 1}})
    assert kwargs == {"point": Point(x=1, y=0.0)}
    assert isinstance(kwargs["point"], Point)


def test_optional_parameters_accept_null_and_stay_required_without_a_default() -> None:
    @tool
    def maybe(b: str | None, a: Optional[int] = None) -> None:  # noqa: UP045
        """Maybe."""

    assert built(maybe).input_schema == {
        "type": "object",
        "properties": {
            "b": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "a": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        },
        "required": ["b"],
        "additionalProperties": False,
    }


def test_list_of_str_parameter_becomes_an_array_of_strings() -> None:
    @tool
    def join(items: list[str]) -> str:
        """Join."""
        return "".join(items)

    assert built(join).input_schema == {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "string"}}},
        "required": ["items"],
        "additionalProperties": False,
    }


def test_function_without_parameters_gets_an_empty_closed_object_schema() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    assert built(ping).input_schema == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_default_value_that_contains_a_title_key_is_kept_intact_in_the_schema() -> None:
    @tool
    def tag(meta: dict[str, str] = {"title": "hello"}) -> None:  # noqa: B006
        """Tag."""

    assert built(tag).input_schema["properties"]["meta"]["default"] == {"title": "hello"}


# -- context parameter -----------------------------------------------------------------------


def test_context_parameter_is_left_out_of_the_schema() -> None:
    @tool
    def whoami(items: list[str], context: ToolContext) -> list[str]:
        """Who am I."""
        return items

    assert built(whoami).input_schema == {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "string"}}},
        "required": ["items"],
        "additionalProperties": False,
    }
    assert built(whoami).context_param == "context"


def test_optional_context_parameter_under_any_name_is_left_out_of_the_schema() -> None:
    @tool
    def traced(value: int, ctx: ToolContext | None = None) -> int:
        """Traced."""
        return value

    assert list(built(traced).input_schema["properties"]) == ["value"]
    assert built(traced).context_param == "ctx"


# -- output schema ---------------------------------------------------------------------------


def test_output_schema_comes_from_the_return_annotation() -> None:
    @tool
    def scalar() -> int:
        """Scalar."""
        return 1

    @tool
    def strings() -> list[str]:
        """Strings."""
        return []

    @tool
    def mapping() -> dict[str, float | str]:
        """Mapping."""
        return {}

    @tool
    def model() -> Point:
        """Model."""
        return Point(x=1)

    @tool
    def models() -> list[Point]:
        """Models."""
        return []

    assert built(scalar).output_schema == {"type": "integer"}
    assert built(strings).output_schema == {"type": "array", "items": {"type": "string"}}
    assert built(mapping).output_schema == {
        "type": "object",
        "additionalProperties": {"anyOf": [{"type": "number"}, {"type": "string"}]},
    }
    assert built(model).output_schema == {
        "type": "object",
        "properties": {
            "x": {"type": "integer"},
            "y": {"type": "number", "description": "Vertical position", "default": 0.0},
        },
        "required": ["x"],
    }
    assert built(models).output_schema == {
        "type": "array",
        "items": {"$ref": "#/$defs/Point"},
        "$defs": {
            "Point": {
                "type": "object",
                "properties": {
                    "x": {"type": "integer"},
                    "y": {"type": "number", "description": "Vertical position", "default": 0.0},
                },
                "required": ["x"],
            }
        },
    }


def test_output_schema_is_none_when_the_return_is_none_any_or_missing() -> None:
    @tool
    def returns_none() -> None:
        """None."""

    @tool
    def returns_any() -> Any:
        """Any."""

    @tool
    def unannotated():  # type: ignore[no-untyped-def]
        """Nothing declared."""

    assert built(returns_none).output_schema is None
    assert built(returns_any).output_schema is None
    assert built(unannotated).output_schema is None


# -- refused signatures ----------------------------------------------------------------------


def test_tool_decorator_rejects_var_args_at_decoration_time() -> None:
    def spread(*numbers: int) -> None:
        """Spread."""

    with pytest.raises(ToolDefinitionError, match=r"tool 'spread': parameter 'numbers' is \*args"):
        tool(spread)


def test_tool_decorator_rejects_var_kwargs_at_decoration_time() -> None:
    def options(**settings: int) -> None:
        """Options."""

    with pytest.raises(
        ToolDefinitionError, match=r"tool 'options': parameter 'settings' is \*\*kwargs"
    ):
        tool(options)


def test_tool_decorator_rejects_positional_only_parameters_at_decoration_time() -> None:
    def positional(x: int, /, y: int) -> None:
        """Positional."""

    with pytest.raises(
        ToolDefinitionError, match=r"tool 'positional': parameter 'x' is positional-only"
    ):
        tool(positional)


class Opaque:
    """A class pydantic knows nothing about."""


def test_tool_decorator_rejects_an_annotation_pydantic_cannot_represent() -> None:
    def handle(thing: Opaque) -> None:
        """Handle."""

    with pytest.raises(ToolDefinitionError) as caught:
        tool(handle)
    message = str(caught.value)
    assert message.startswith("tool 'handle': an annotation cannot be turned into a JSON Schema")
    assert "Opaque" in message


def test_tool_decorator_rejects_a_return_annotation_pydantic_cannot_represent() -> None:
    def produce() -> Opaque:
        """Produce."""
        return Opaque()

    with pytest.raises(ToolDefinitionError, match=r"tool 'produce': the return annotation"):
        tool(produce)

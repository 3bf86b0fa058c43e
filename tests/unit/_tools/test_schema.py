"""``@tool`` and ``BaseTool``: the JSON Schemas they derive, and the signatures they refuse.

The expected schemas are written out in full: they are what every manager and every LLM
sees, so any change to them is a protocol change and must show up here.
"""

import enum
import inspect
from typing import Annotated, Any, Literal, Optional

import anyio
import pydantic
import pytest
from pydantic import BaseModel, ConfigDict, Field

from argentic_tools import (
    BaseTool,
    FunctionTool,
    TaskErrorMessage,
    ToolContext,
    ToolDefinitionError,
    ToolManager,
    ToolService,
    Topics,
    tool,
)
from argentic_tools._tools.definition import as_tool
from tests.support.brokers import Mosquitto


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


# -- name, description and options -----------------------------------------------------------


def test_name_comes_from_the_function_and_can_be_overridden() -> None:
    @tool
    def lookup_city() -> None:
        """Look up."""

    @tool(name="city.lookup-v2")
    def renamed() -> None:
        """Look up."""

    assert built(lookup_city).name == "lookup_city"
    assert built(renamed).name == "city.lookup-v2"
    assert renamed.__name__ == "renamed"


def test_description_comes_from_the_cleaned_docstring_and_can_be_overridden() -> None:
    @tool
    def documented() -> None:
        """First line.

        More detail, indented in the source.
        """

    @tool(description="Told explicitly.")
    def overridden() -> None:
        """Not this."""

    @tool
    def undocumented() -> None:
        pass

    assert built(documented).manual == "First line.\n\nMore detail, indented in the source."
    assert built(overridden).manual == "Told explicitly."
    assert built(undocumented).manual == ""


def test_tags_examples_max_concurrency_and_tool_id_are_carried_on_the_built_tool() -> None:
    examples = [{"input": {"a": 1}, "output": 2}]

    @tool(tags=["math", "demo"], examples=examples, max_concurrency=3, tool_id="inc.v1")
    def inc(a: int) -> int:
        """Increment."""
        return a + 1

    attached = built(inc)
    assert attached.tags == ["math", "demo"]
    assert attached.examples == examples
    assert attached.max_concurrency == 3
    assert attached.pinned_id == "inc.v1"
    fresh = as_tool(inc)
    assert fresh is not attached  # each service gets its own instance
    assert (fresh.name, fresh.tags, fresh.examples, fresh.max_concurrency, fresh.pinned_id) == (
        "inc",
        ["math", "demo"],
        examples,
        3,
        "inc.v1",
    )
    assert fresh.input_schema == attached.input_schema
    assert fresh.output_schema == {"type": "integer"}


def test_decorator_returns_the_original_function_still_callable() -> None:
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    async def add_async(a: int, b: int) -> int:
        """Add later."""
        return a + b

    assert tool(add) is add
    assert tool(name="plus")(add) is add
    assert add(2, 3) == 5
    assert tool(add_async) is add_async
    assert inspect.iscoroutinefunction(add_async)
    assert anyio.run(add_async, 2, 3) == 5


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


@pytest.mark.parametrize("bad", ["a/b", "a#b", "a+b", "tab\there"])
def test_tool_decorator_rejects_a_name_with_a_topic_or_control_character(bad: str) -> None:
    def fine() -> None:
        """Fine."""

    with pytest.raises(ToolDefinitionError, match=r"forbidden character") as caught:
        tool(name=bad)(fine)
    assert str(caught.value).startswith(f"tool {bad!r}:")


def test_tool_decorator_rejects_a_function_name_with_a_forbidden_character() -> None:
    def fine() -> None:
        """Fine."""

    fine.__name__ = "odd#name"
    with pytest.raises(ToolDefinitionError, match=r"tool 'odd#name': .*forbidden character '#'"):
        tool(fine)


def test_tool_decorator_rejects_zero_concurrency_and_an_unsafe_tool_id() -> None:
    def fine() -> None:
        """Fine."""

    with pytest.raises(ToolDefinitionError, match=r"tool 'fine': max_concurrency must be at least"):
        tool(max_concurrency=0)(fine)
    with pytest.raises(ToolDefinitionError, match=r"tool 'fine': tool_id 'a/b' must be"):
        tool(tool_id="a/b")(fine)


# -- validation ----------------------------------------------------------------------------


def test_validate_arguments_rejects_extra_keys_naming_each_of_them() -> None:
    @tool
    def greet(name: str, punctuation: str = "!") -> str:
        """Greet."""
        return name + punctuation

    checker = as_tool(greet)
    with pytest.raises(pydantic.ValidationError) as caught:
        checker.validate_arguments({"name": "Ada", "shout": True, "colour": "red"})
    errors = caught.value.errors()
    assert {(e["type"], e["loc"]) for e in errors} == {
        ("extra_forbidden", ("shout",)),
        ("extra_forbidden", ("colour",)),
    }
    assert "shout" in str(caught.value) and "colour" in str(caught.value)
    assert checker.validate_arguments({"name": "Ada"}) == {"name": "Ada", "punctuation": "!"}


def test_validate_arguments_coerces_like_pydantic_lax_mode_and_rejects_wrong_types() -> None:
    @tool
    def double(n: int) -> int:
        """Double."""
        return 2 * n

    checker = as_tool(double)
    assert checker.validate_arguments({"n": "21"}) == {"n": 21}
    with pytest.raises(pydantic.ValidationError, match="n"):
        checker.validate_arguments({"n": "twenty"})
    with pytest.raises(pydantic.ValidationError, match="Field required"):
        checker.validate_arguments({})


@pytest.mark.anyio
async def test_extra_argument_through_the_broker_gives_invalid_arguments_naming_the_key(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    @tool
    def greet(name: str) -> str:
        """Greet."""
        return f"hello {name}"

    async with ToolService(mosquitto.url, [greet], topics=topics):
        info = await manager.wait_for_tool("greet", timeout=10)
        assert info.input_schema["additionalProperties"] is False
        with anyio.fail_after(10):
            bad = await manager.execute_tool("greet", {"name": "Ada", "shout": True})
            good = await manager.execute_tool("greet", {"name": "Ada"})
    assert isinstance(bad, TaskErrorMessage)
    assert bad.error_code == "invalid_arguments"
    assert "Tool 'greet'" in bad.error
    assert "'shout' was unexpected" in bad.error
    assert good.ok and good.result == "hello Ada"


# -- class-based tools ---------------------------------------------------------------------------


class AddArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    a: Annotated[int, Field(description="First addend")]
    b: int = 0


class AddTool(BaseTool):
    def __init__(self) -> None:
        super().__init__("add", "Add two integers.", "", AddArguments)

    async def _execute(self, **kwargs: Any) -> Any:
        return kwargs["a"] + kwargs["b"]


def test_base_tool_with_only_an_argument_model_gets_the_same_schema_as_a_tool_function() -> None:
    @tool
    def add(a: Annotated[int, Field(description="First addend")], b: int = 0) -> int:
        """Add two integers."""
        return a + b

    expected = {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "First addend"},
            "b": {"type": "integer", "default": 0},
        },
        "required": ["a"],
        "additionalProperties": False,
    }
    by_class = AddTool()
    assert by_class.input_schema == expected
    assert built(add).input_schema == expected
    assert (by_class.name, by_class.manual) == (built(add).name, built(add).manual)
    # The wire form of the schema is the compact JSON of the same dict.
    assert by_class.api == built(add).api
    assert as_tool(AddTool).input_schema == expected


def test_base_tool_with_an_explicit_api_string_keeps_it_as_given() -> None:
    api = '{"type": "object", "properties": {"a": {"type": "integer"}}}'

    class Explicit(BaseTool):
        async def _execute(self, **kwargs: Any) -> Any:
            return kwargs

    explicit = Explicit("explicit", "Explicit.", api, AddArguments)
    assert explicit.api == api
    assert explicit.input_schema == {"type": "object", "properties": {"a": {"type": "integer"}}}


def test_base_tool_refuses_an_invalid_name_or_an_api_that_is_not_json() -> None:
    class Named(BaseTool):
        async def _execute(self, **kwargs: Any) -> Any:
            return None

    with pytest.raises(ToolDefinitionError, match=r"tool 'a/b': .*forbidden character '/'"):
        Named("a/b", "Bad.", "", AddArguments)
    with pytest.raises(ToolDefinitionError, match=r"tool 'ok': api is not valid JSON"):
        Named("ok", "Bad api.", "{not json", AddArguments)


def test_annotations_are_checked_and_travel_in_the_spec() -> None:
    @tool(annotations={"readOnlyHint": True, "title": "Look up"})
    def look(key: str) -> str:
        """Look something up."""
        return key

    assert as_tool(look).annotations == {"readOnlyHint": True, "title": "Look up"}
    with pytest.raises(ToolDefinitionError, match="unknown annotation 'fastHint'"):
        tool(annotations={"fastHint": True})(look)
    with pytest.raises(ToolDefinitionError, match="readOnlyHint must be true or false"):
        tool(annotations={"readOnlyHint": "yes"})(look)

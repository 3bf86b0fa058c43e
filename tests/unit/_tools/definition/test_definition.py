"""``@tool`` and ``BaseTool`` as definitions: names, descriptions and options, what they refuse,
how they validate arguments, and tools written as classes."""

import inspect
from typing import Annotated, Any

import anyio
import pydantic
import pytest
from pydantic import BaseModel, ConfigDict, Field

from argentic_tools import BaseTool, FunctionTool, ToolDefinitionError, tool
from argentic_tools._tools.definition.definition import as_tool
from tests.support.greeter import GreetArgs, Greeter

pytestmark = pytest.mark.anyio


# -- name, description and options -----------------------------------------------------------


def built(func: Any) -> FunctionTool:
    """The FunctionTool that ``@tool`` attached to ``func``."""
    attached = func.__argentic_tool__
    assert isinstance(attached, FunctionTool)
    return attached


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


def test_a_copy_of_a_tool_takes_its_settings_as_they_are_now() -> None:
    @tool(max_concurrency=3)
    def inc(a: int) -> int:
        """Increment."""
        return a + 1

    built(inc).max_concurrency = 5
    built(inc).tags = ["later"]
    fresh = as_tool(inc)
    assert (fresh.max_concurrency, fresh.tags) == (5, ["later"])


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


# -- refused names and options -----------------------------------------------------------------


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


# -- argentic-style BaseTool ------------------------------------------------------------------


async def test_base_tool_without_messager_cannot_register() -> None:
    with pytest.raises(RuntimeError, match="no messager"):
        await Greeter(None).register()  # type: ignore[arg-type]


def test_base_tool_refuses_bad_definitions() -> None:
    class Bad(BaseTool):
        async def _execute(self, **kwargs: Any) -> Any:
            return None

    with pytest.raises(ToolDefinitionError, match="forbidden character"):
        Bad("a/b", "", "", GreetArgs)
    with pytest.raises(ToolDefinitionError, match="not valid JSON"):
        Bad("ok", "", "{nope", GreetArgs)
    with pytest.raises(ToolDefinitionError, match="tool_id"):
        Bad("ok", "", "", GreetArgs, tool_id="has/slash")
    with pytest.raises(ToolDefinitionError, match="max_concurrency"):
        Bad("ok", "", "", GreetArgs, max_concurrency=0)
    explicit = Bad("ok", "", '{"type": "object"}', GreetArgs)
    assert explicit.input_schema == {"type": "object"}

"""A tool's return value split into its content blocks and its plain value."""

import pytest

from argentic_tools import Image, ResourceLink, Text, ToolOutput, tool
from argentic_tools._tools.call.output import split_output
from argentic_tools._tools.definition.definition import as_tool

PNG = b"\x89PNG\r\n\x1a\n"


def test_plain_values_stay_plain() -> None:
    for value in (1, "a", {"k": [1]}, [1, 2], None):
        assert split_output(value) == (value, None)


def test_a_block_is_content_with_its_rendering_as_value() -> None:
    assert split_output(Text("hi")) == ("hi", [Text("hi")])
    assert split_output(Image(PNG)) == ("[image: image/png, 8 bytes]", [Image(PNG)])


def test_a_tool_output_keeps_its_value_or_renders_its_blocks() -> None:
    link = ResourceLink("u", "n")
    assert split_output(ToolOutput(content=[link], value={"n": 1})) == ({"n": 1}, [link])
    assert split_output(ToolOutput(content=link)) == ("[resource link n: u]", [link])
    assert split_output(ToolOutput(content=[link, "t"])) == (
        ["[resource link n: u]", "t"],
        [link, Text("t")],
    )


def test_a_tool_output_without_blocks_is_its_value_alone() -> None:
    assert split_output(ToolOutput(value={"n": 1})) == ({"n": 1}, None)


def test_a_value_beside_blocks_that_is_not_json_is_refused() -> None:
    with pytest.raises(TypeError):
        split_output([Text("a"), object()])


def test_a_return_annotation_of_blocks_declares_no_output_schema() -> None:
    @tool
    def picture() -> Image:
        """A picture."""
        return Image(PNG)

    @tool
    def both() -> ToolOutput:
        """Blocks and a value."""
        return ToolOutput(content=[Text("x")])

    @tool
    def several() -> list[Text | Image]:
        """Several blocks."""
        return [Text("x")]

    for function in (picture, both, several):
        assert as_tool(function).output_schema is None


def test_a_subclass_of_a_block_nested_one_level_down_is_a_block() -> None:
    class Photo(Image):
        """A user's own kind of image."""

    photo = Photo(data=PNG, mime_type="image/png")
    assert split_output([1, [photo, "caption"]]) == (
        [1, ["[image: image/png, 8 bytes]", "caption"]],
        [Text("1"), photo, Text("caption")],
    )
    assert split_output([[[photo]]])[1] is None  # deeper than a chunk's list: a plain value

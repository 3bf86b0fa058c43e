"""Content blocks: MCP's wire shapes both ways, plain renderings, tolerant parsing."""

import json
from pathlib import Path

import pytest

from argentic_tools import (
    Annotations,
    Audio,
    EmbeddedResource,
    Image,
    ResourceLink,
    TaskResultMessage,
    Text,
    ToolPartialMessage,
    parse_message,
)
from argentic_tools._protocol.content import blocks_in, parse_block, parse_blocks, plain
from argentic_tools._protocol.messages import encode

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


def roundtrip(block: object) -> object:
    return parse_block(json.loads(json.dumps(parse_block(block).wire())))


@pytest.mark.parametrize(
    "block",
    [
        Text("hi"),
        Text("hi", annotations=Annotations(audience=["user", "assistant"], priority=0.2)),
        Image(PNG, meta={"example.com/k": [1]}),
        Audio(b"OggS...", annotations=Annotations(last_modified="2025-01-12T15:00:58Z")),
        EmbeddedResource("file:///a.txt", text="hello", mime_type="text/plain"),
        EmbeddedResource("file:///a.bin", blob=b"\x00\xff", resource_meta={"r": 1}, meta={"b": 2}),
        ResourceLink("file:///x.pdf", "x.pdf", title="X", description="d", size=3),
    ],
)
def test_a_block_survives_its_wire_shape_unchanged(block: object) -> None:
    assert roundtrip(block) == block


def test_wire_shapes_are_mcps_with_no_null_noise() -> None:
    assert Text("hi").wire() == {"type": "text", "text": "hi"}
    assert Image(PNG, annotations=Annotations(priority=1)).wire() == {
        "type": "image",
        "data": "iVBORw0KGgoAAAAAAAAAAA==",
        "mimeType": "image/png",
        "annotations": {"priority": 1.0},
    }
    assert EmbeddedResource("u:1", blob=b"\x01").wire() == {
        "type": "resource",
        "resource": {"uri": "u:1", "blob": "AQ=="},
    }
    assert ResourceLink("u:2", "two", mime_type="text/csv").wire() == {
        "type": "resource_link",
        "uri": "u:2",
        "name": "two",
        "mimeType": "text/csv",
    }
    assert Annotations(last_modified="t").model_dump() == {"lastModified": "t"}


def test_fields_of_a_newer_revision_are_kept_and_sent_on() -> None:
    shape = {
        "type": "resource_link",
        "uri": "u:1",
        "name": "n",
        "icons": [{"src": "https://example.com/i.png"}],
    }
    assert parse_block(shape).wire() == shape
    inner = {"type": "resource", "resource": {"uri": "u", "text": "t", "future": 1}}
    assert parse_block(inner).wire() == inner


def test_mime_types_come_from_the_path_or_the_bytes(tmp_path: Path) -> None:
    picture = tmp_path / "p.jpg"
    picture.write_bytes(b"anything")
    assert Image(path=picture).mime_type == "image/jpeg"
    assert Image(path=picture).data == b"anything"
    assert Image(PNG).mime_type == "image/png"
    assert Audio(b"RIFF\x00\x00\x00\x00WAVEfmt ").mime_type == "audio/wav"
    assert Image(b"?", mime_type="image/x-mine").mime_type == "image/x-mine"


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda: Image(b"??"), "give mime_type"),
        (lambda: Image(), "give data or path"),
        (lambda: Audio(b"x", path="y"), "give data or path"),
        (lambda: EmbeddedResource("u"), "give text or blob"),
        (lambda: EmbeddedResource("u", text="t", blob=b"b"), "give text or blob"),
    ],
)
def test_an_incomplete_block_is_refused_when_built(make: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        make()  # type: ignore[operator]


def test_plain_renderings_never_carry_the_data() -> None:
    assert plain(Text("a")) == "a"
    assert plain(Image(PNG)) == "[image: image/png, 16 bytes]"
    assert plain(EmbeddedResource("u", text="body")) == "body"
    assert plain(EmbeddedResource("u", blob=b"12")) == "[resource u: binary, 2 bytes]"
    assert plain(ResourceLink("u", "n", description="d")) == "[resource link n: u] d"


def test_a_list_with_blocks_becomes_content_and_its_rendering() -> None:
    assert blocks_in([1, "a"]) is None
    content, value = blocks_in([Image(PNG), "note", {"k": 1}, [Text("x"), 2]]) or ([], [])
    assert content == [Image(PNG), Text("note"), Text('{"k": 1}'), Text("x"), Text("2")]
    assert value == ["[image: image/png, 16 bytes]", "note", {"k": 1}, ["x", 2]]


def test_unknown_or_malformed_blocks_are_left_out_of_a_received_result() -> None:
    blocks = parse_blocks(
        [
            {"type": "hologram", "data": "?"},
            {"type": "image", "data": "not base64!", "mimeType": "image/png"},
            {"type": "text", "text": "kept"},
            "not even an object",
        ]
    )
    assert blocks == [Text("kept")]
    assert parse_blocks(None) is None
    assert parse_blocks("nonsense") == []


def test_results_and_chunks_carry_blocks_on_the_wire_and_parse_them_typed() -> None:
    result = TaskResultMessage(
        tool_id="t", tool_name="n", status="success", result="r", content=[Image(PNG)]
    )
    data = encode(result)
    assert json.loads(data)["content"][0]["mimeType"] == "image/png"
    parsed = parse_message(data)
    assert isinstance(parsed, TaskResultMessage)
    assert parsed.content == [Image(PNG)]
    chunk = ToolPartialMessage(task_id="x", tool_id="t", seq=0, chunk="c", content=[Text("c")])
    again = parse_message(encode(chunk))
    assert isinstance(again, ToolPartialMessage)
    assert again.content == [Text("c")]


def test_a_large_blocks_repr_shows_its_size_not_its_bytes() -> None:
    shown = repr(Image(PNG + b"\x00" * 100_000))
    assert "100,016 bytes" in shown
    assert len(shown) < 300

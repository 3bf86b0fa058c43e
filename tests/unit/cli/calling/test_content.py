"""How the command line shows and saves content blocks (no broker)."""

from pathlib import Path

import pytest

from argentic_tools import Audio, ContentBlock, EmbeddedResource, Image, ResourceLink, Text
from argentic_tools.cli.calling.content import (
    block_text,
    content_lines,
    content_text,
    extension,
    save_content,
    size_text,
)


def test_sizes_read_in_powers_of_1000_with_one_decimal() -> None:
    assert [size_text(n) for n in (0, 999, 1000, 12_345, 4_500_000, 7_000_000_000)] == [
        "0 B",
        "999 B",
        "1.0 KB",
        "12.3 KB",
        "4.5 MB",
        "7.0 GB",
    ]


def test_binary_blocks_print_as_type_and_size_and_text_as_it_is() -> None:
    assert block_text(Image(b"\x89PNG\r\n\x1a\n" + bytes(12_292))) == "[image/png, 12.3 KB]"
    assert block_text(Audio(b"x", mime_type="audio/ogg")) == "[audio/ogg, 1 B]"
    assert block_text(Text("<b>as is</b>")) == "<b>as is</b>"
    assert block_text(ResourceLink("https://x/r", "r", title="R", description="d")) == (
        "[link r: https://x/r] R - d"
    )


def test_a_value_beside_blocks_follows_them_unless_it_only_renders_them() -> None:
    blocks: list[ContentBlock] = [Text("hi"), Image(b"GIF89a", mime_type="image/gif")]
    assert content_text(blocks, ["hi", "[image: image/gif, 6 bytes]"]) == "hi\n[image/gif, 6 B]"
    assert content_text(blocks, {"w": 1}) == 'hi\n[image/gif, 6 B]\n{\n  "w": 1\n}'
    assert content_text([Text('{"rows": 3}')], [{"rows": 3}]) == '{"rows": 3}'
    assert content_text([Text("hi")], "other") == 'hi\n"other"'


def test_extensions_come_from_the_mime_type_only() -> None:
    assert extension("image/png") == ".png"
    assert extension("audio/wav") == ".wav"
    assert extension("text/plain; charset=utf-8") == ".txt"
    assert extension("application/x-made-up") == ".bin"
    assert extension(None) == ".bin"


def test_saved_files_are_named_by_the_command_never_by_the_tools_data(tmp_path: Path) -> None:
    blocks: list[ContentBlock] = [
        Text("not saved"),
        EmbeddedResource("file:///../../etc/passwd", blob=b"\x00\x01", mime_type="image/png"),
        ResourceLink("file:///x", "x"),
        Audio(b"RIFF....WAVE", mime_type="audio/wav"),
    ]
    written = save_content(blocks, tmp_path / "new", "../../evil tool", "ab/cd..ef")
    assert [path.name for path in written] == [
        "evil_tool-ab_cd..ef-2.png",
        "evil_tool-ab_cd..ef-4.wav",
    ]
    assert all(path.parent == tmp_path / "new" for path in written)
    assert written[0].read_bytes() == b"\x00\x01"
    with pytest.raises(FileExistsError):  # never overwritten
        save_content(blocks, tmp_path / "new", "../../evil tool", "ab/cd..ef")


def test_a_historys_blocks_and_placeholders_print_as_call_prints_blocks() -> None:
    image = {"type": "image", "mimeType": "image/png", "__truncated__": True, "bytes": 48_213}
    blob = {
        "type": "resource",
        "resource": {"uri": "file:///a.zip", "__truncated__": True, "bytes": 2_000_000},
    }
    assert content_lines([Text("kept").wire(), image, blob]) == (
        "kept\n[image/png, 48.2 KB, not kept]\n[resource file:///a.zip, binary, 2.0 MB, not kept]"
    )
    assert content_lines({"__truncated__": True, "bytes": 20_000, "preview": "[{"}) == (
        "[content blocks, 20.0 KB, not kept]"
    )
    assert content_lines(None) == ""

"""A result's content blocks cut to a size cap (no broker)."""

import base64
import json
from typing import Any

from argentic_tools import Audio, EmbeddedResource, Image, ResourceLink, Text
from argentic_tools._agent.records.kept_content import json_size, kept_content


def test_blocks_that_fit_are_kept_whole() -> None:
    shapes = [Text("hi").wire(), Image(b"GIF89a", mime_type="image/gif").wire()]
    assert kept_content(shapes, 1024) == shapes


def test_past_the_cap_binary_data_becomes_a_placeholder_with_its_type_and_size() -> None:
    image = Image(b"\x89PNG\r\n\x1a\n" + bytes(50_000))
    blob = EmbeddedResource("file:///a.bin", blob=bytes(30_001), mime_type="application/zip")
    shapes = [
        Text("first").wire(),
        image.wire(),
        Audio(b"OggS", mime_type="audio/ogg").wire(),
        blob.wire(),
    ]
    kept = kept_content(shapes, 1024)
    assert json_size(kept) <= 1024
    assert kept[0] == {"type": "text", "text": "first"}
    assert kept[1] == {
        "type": "image",
        "mimeType": "image/png",
        "__truncated__": True,
        "bytes": 50_008,
    }
    assert kept[2] == shapes[2]  # small enough to keep, after the one that was not
    assert kept[3] == {
        "type": "resource",
        "resource": {"uri": "file:///a.bin", "mimeType": "application/zip"},
        "__truncated__": True,
        "bytes": 30_001,
    }
    assert len(json.dumps(kept)) < 1024


def test_a_long_text_keeps_its_start_and_says_its_size() -> None:
    text = '"quoted" é ' * 1000
    [kept] = kept_content([Text(text).wire()], 512)
    assert kept["__truncated__"] is True and kept["bytes"] == len(text.encode())
    assert text.startswith(kept["text"]) and len(kept["text"]) > 100
    assert json_size([kept]) <= 512
    [resource] = kept_content([EmbeddedResource("file:///n.txt", text=text).wire()], 512)
    assert resource["resource"]["uri"] == "file:///n.txt"
    assert text.startswith(resource["resource"]["text"])


def test_too_many_blocks_end_with_one_that_counts_the_rest() -> None:
    shapes: list[dict[str, Any]] = [
        ResourceLink(f"file:///{n}", f"n{n}", description="x" * 40).wire() for n in range(100)
    ]
    kept = kept_content(shapes, 1024)
    assert json_size(kept) <= 1024
    last = kept[-1]
    assert last["__truncated__"] is True
    assert last["text"] == f"[{100 - len(kept) + 1} more content blocks not kept]"


def test_the_placeholder_size_is_the_decoded_size() -> None:
    for size in (1000, 1001, 1002, 30_000):
        data = base64.b64encode(bytes(size)).decode()
        [kept] = kept_content([{"type": "audio", "data": data, "mimeType": "audio/wav"}], 300)
        assert kept == {
            "type": "audio",
            "mimeType": "audio/wav",
            "__truncated__": True,
            "bytes": size,
        }

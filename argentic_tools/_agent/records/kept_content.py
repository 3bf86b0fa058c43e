"""A result's content blocks cut to a size cap, for the records that keep them.

A history row (:class:`~argentic_tools.SqliteRecorder`, ``max_argument_bytes``) and
the dashboard's recent calls keep a result's blocks, in MCP's JSON shapes, within a
number of bytes. :func:`kept_content` keeps the blocks whole, in order, while they
fit; past that, a block becomes a placeholder that says what it was and how large,
never its data::

    {"type": "image", "mimeType": "image/png", "__truncated__": true, "bytes": 48213}
    {"type": "resource", "resource": {"uri": "...", "mimeType": "..."},
     "__truncated__": true, "bytes": 1048576}
    {"type": "text", "text": "the first part of the text", "__truncated__": true,
     "bytes": 90210}

``bytes`` is the size of the data (decoded) or of the text (UTF-8). When even the
placeholders no longer fit, the rest of the blocks are counted in one last text block
(``"[12 more content blocks not kept]"``), so the whole stays within the cap.
"""

import json
from collections.abc import Sequence
from typing import Any

from .calls_table import TRUNCATED

_RESERVE = 96
"""Bytes kept back for the last block that counts the blocks left out."""
_MIN_TEXT = 64
"""A text cut shorter than this is not worth keeping: its placeholder says its size."""


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact JSON, in UTF-8."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(text) if text.isascii() else len(text.encode())


def kept_content(shapes: Sequence[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """``shapes`` (blocks in their wire shape) within ``limit`` bytes of JSON.

    Blocks are kept whole while they fit, in order; a block that does not fit
    becomes a placeholder (a text keeps what fits of it). See the module's docstring.
    """
    if json_size(list(shapes)) <= limit:
        return list(shapes)
    budget = limit - _RESERVE
    kept: list[dict[str, Any]] = []
    used = 2  # the list's brackets
    for index, shape in enumerate(shapes):
        size = json_size(shape) + 1  # with its comma
        if used + size > budget:
            shape = _placeholder(shape, budget - used)
            size = json_size(shape) + 1
        if used + size > budget:
            left = len(shapes) - index
            note = f"[{left} more content blocks not kept]"
            kept.append({"type": "text", "text": note, TRUNCATED: True})
            return kept
        kept.append(shape)
        used += size
    return kept


def _placeholder(shape: dict[str, Any], room: int) -> dict[str, Any]:
    """What stands for ``shape`` when it is too large: its kind, its size, a text's start."""
    kind = shape.get("type")
    if kind == "text":
        text = str(shape.get("text", ""))
        return _cut_text({"type": "text"}, "text", text, room)
    if kind in ("image", "audio"):
        cut = {"type": kind, "mimeType": shape.get("mimeType")}
        return {**cut, TRUNCATED: True, "bytes": _decoded_size(shape.get("data"))}
    if kind == "resource" and isinstance(shape.get("resource"), dict):
        inner = shape["resource"]
        head = {key: inner[key] for key in ("uri", "mimeType") if key in inner}
        if "blob" in inner:
            return {
                "type": "resource",
                "resource": head,
                TRUNCATED: True,
                "bytes": _decoded_size(inner["blob"]),
            }
        text = str(inner.get("text", ""))
        cut = _cut_text({}, "text", text, room - json_size(head) - 40)
        return {
            "type": "resource",
            "resource": {**head, "text": cut.get("text", "")},
            TRUNCATED: True,
            "bytes": cut["bytes"],
        }
    return {"type": kind, TRUNCATED: True, "bytes": json_size(shape)}


def _cut_text(base: dict[str, Any], key: str, text: str, room: int) -> dict[str, Any]:
    encoded = text.encode()
    marker = {**base, TRUNCATED: True, "bytes": len(encoded)}
    room -= json_size(marker) + len(key) + 6
    if room < _MIN_TEXT:
        return marker
    # JSON escapes may lengthen the text: cut, measure, and cut again while it is too long.
    cut = encoded[:room].decode(errors="ignore")
    while cut and json_size(cut) > room:
        cut = cut[: max(0, len(cut) - (json_size(cut) - room) - 1)]
    return {**base, key: cut, TRUNCATED: True, "bytes": len(encoded)}


def _decoded_size(data: Any) -> int:
    """Bytes of base64 ``data`` once decoded (0 when it is not a string)."""
    if not isinstance(data, str):
        return 0
    return len(data) * 3 // 4 - len(data) + len(data.rstrip("="))

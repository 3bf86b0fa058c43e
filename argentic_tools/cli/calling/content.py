"""How the command line shows a result's content blocks, and saves them to files.

A text block prints as its text; an image or audio as ``[image/png, 12.3 KB]``; an
embedded resource as ``[resource URI, TYPE, SIZE]`` (followed by its text, when it
is text); a resource link as ``[link NAME: URI, TYPE, SIZE] TITLE``. ``call`` and
``history`` print blocks this way, for calls on the bus and on an MCP server alike.

``--save-content DIR`` writes each image, audio and embedded resource to a file of
DIR. The file's name is made here, from the tool's name, the call and the block's
place in the result, its extension from the MIME type: never from a URI or a name
the tool sent, so a tool cannot choose where a file goes. An existing file is never
overwritten.
"""

import json
import mimetypes
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..._agent.records.calls_table import TRUNCATED
from ..._protocol import content as blocks
from ..._protocol.content import ContentBlock, parse_block, renders

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_EXTENSION = re.compile(r"\.[a-z0-9]{1,8}")
_EXTENSIONS = {
    # Where the platform's tables differ or lack one (audio/wav has none on some).
    "image/jpeg": ".jpg",
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
    "audio/mpeg": ".mp3",
    "audio/ogg": ".ogg",
    "audio/flac": ".flac",
    "audio/webm": ".webm",
    "text/plain": ".txt",
}


def size_text(size: int) -> str:
    """A byte count for people: ``512 B``, ``12.3 KB``, ``4.5 MB`` (powers of 1000)."""
    if size < 1000:
        return f"{size} B"
    amount = size / 1000
    for unit in ("KB", "MB"):
        if amount < 1000:
            return f"{amount:.1f} {unit}"
        amount /= 1000
    return f"{amount:.1f} GB"


def block_text(block: ContentBlock) -> str:
    """One block as ``call`` prints it (a text block: its text as it is)."""
    if isinstance(block, blocks.Text):
        return block.text
    if isinstance(block, blocks.Image | blocks.Audio):
        return f"[{block.mime_type}, {size_text(len(block.data))}]"
    if isinstance(block, blocks.EmbeddedResource):
        if block.blob is not None:
            kind = block.mime_type or "binary"
            return f"[resource {block.uri}, {kind}, {size_text(len(block.blob))}]"
        text = block.text or ""
        head = (
            f"[resource {block.uri}, {block.mime_type or 'text'}, {size_text(len(text.encode()))}]"
        )
        return f"{head}\n{text}"
    return _link_text(block)


def shape_text(shape: Any) -> str:
    """A block as a history keeps it (its wire shape, or a placeholder) as ``call`` prints it.

    A block whose data was left out at the history's size cap reads
    ``[image/png, 48.2 KB, not kept]``.
    """
    if not isinstance(shape, dict):
        return str(shape)
    inner = shape.get("resource")
    if isinstance(inner, dict) and inner.get(TRUNCATED):
        kind = inner.get("mimeType") or "binary"
        return f"[resource {inner.get('uri')}, {kind}, {_size_of(inner)}, not kept]"
    if shape.get(TRUNCATED):
        return f"[{shape.get('mimeType') or shape.get('type')}, {_size_of(shape)}, not kept]"
    try:
        return block_text(parse_block(shape))
    except ValueError:
        return f"[{shape.get('type', 'block')}, not readable]"


def content_lines(content: Any) -> str:
    """A history's ``content`` as ``call`` prints blocks, one after the other.

    ``content`` is a list of blocks, or the marker of a list too large to keep even
    without its binary data (``{"__truncated__": true, "bytes": N, ...}``).
    """
    if isinstance(content, dict) and content.get(TRUNCATED):
        return f"[content blocks, {_size_of(content)}, not kept]"
    if not isinstance(content, list):
        return ""
    return "\n".join(shape_text(shape) for shape in content)


def _size_of(marker: dict[str, Any]) -> str:
    size = marker.get("bytes")
    return size_text(size) if isinstance(size, int) else "size unknown"


def _link_text(link: blocks.ResourceLink) -> str:
    facts = [f"link {link.name}: {link.uri}"]
    if link.mime_type:
        facts.append(link.mime_type)
    if link.size is not None:
        facts.append(size_text(link.size))
    text = f"[{', '.join(facts)}]"
    about = " - ".join(part for part in (link.title, link.description) if part)
    return f"{text} {about}" if about else text


def content_text(content: Sequence[ContentBlock], value: Any) -> str:
    """A result with blocks as ``call`` prints it: each block, then the value beside them.

    ``value`` is the result's value; unless it only renders the blocks (which they
    show already, see :func:`renders`), it follows as JSON.
    """
    parts = [block_text(block) for block in content]
    if value is not None and not renders(value, content):
        parts.append(json.dumps(value, indent=2, ensure_ascii=False))
    return "\n".join(parts)


def saved_payload(block: ContentBlock) -> tuple[bytes, str | None] | None:
    """The bytes ``--save-content`` writes for ``block`` and their MIME type; None: none."""
    if isinstance(block, blocks.Image | blocks.Audio):
        return block.data, block.mime_type
    if isinstance(block, blocks.EmbeddedResource):
        if block.blob is not None:
            return block.blob, block.mime_type
        return (block.text or "").encode(), block.mime_type or "text/plain"
    return None


def extension(mime_type: str | None) -> str:
    """A file extension for ``mime_type`` (``.bin`` when it has no known, plain one)."""
    if mime_type:
        essence = mime_type.split(";")[0].strip().lower()
        guessed = _EXTENSIONS.get(essence) or mimetypes.guess_extension(essence)
        if guessed is not None and _EXTENSION.fullmatch(guessed):
            return guessed
    return ".bin"


def save_content(
    content: Sequence[ContentBlock], directory: Path, tool: str, task_id: str
) -> list[Path]:
    """Write each image, audio and embedded resource of ``content`` to a file of ``directory``.

    Names are ``TOOL-TASK-N.EXT``: the tool's name and the call's task id reduced to
    ``[A-Za-z0-9_.-]``, N the block's place in the result (from 1), EXT from its MIME
    type. The directory is created when missing.

    Returns:
        The files written, in the order of the blocks.

    Raises:
        OSError: The directory cannot be made, or a file cannot be written (a file of
            that name exists already: nothing is overwritten).

    """
    stem = f"{_safe(tool, 'tool')}-{_safe(task_id, 'call')[:12]}"
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for index, block in enumerate(content, start=1):
        payload = saved_payload(block)
        if payload is None:
            continue
        data, mime_type = payload
        path = directory / f"{stem}-{index}{extension(mime_type)}"
        with path.open("xb") as handle:  # never another file's place
            handle.write(data)
        written.append(path)
    return written


def _safe(text: str, fallback: str) -> str:
    safe = _UNSAFE.sub("_", text).strip("._")[:64]
    return safe or fallback

"""What a tool returns, as a result's two parts: its content blocks and its plain value.

A tool returns a JSON value as before, or blocks (see :mod:`argentic_tools._protocol.content`):

- a block: the content is that block, the value its plain rendering (a text's text,
  a short description of an image);
- a list holding blocks (a generator's chunks among them): each item a block (a value
  beside them becomes text), the value the list with each block rendered;
- a :class:`ToolOutput`: its blocks, and its value, or their rendering when it has none.

Anything else is a plain value with no content, as it always was.
"""

import json
from collections.abc import Iterable
from typing import Any

from ..._protocol.content import (
    Audio,
    ContentBlock,
    Image,
    as_block,
    blocks_in,
    is_block,
    plain,
    rendered,
)


class ToolOutput:
    """A tool's blocks with a structured value beside them.

    Args:
        content: The blocks (one block, or several); a string or other value among
            them becomes a text block.
        value: A JSON value for callers that read ``result`` (and MCP's
            ``structuredContent``); None for the plain rendering of the blocks.

    Example:
        >>> from argentic_tools import Image, ToolOutput
        >>> output = ToolOutput(
        ...     content=[Image(b"<svg/>", mime_type="image/svg+xml")], value={"width": 1}
        ... )
        >>> output.value
        {'width': 1}

    """

    __slots__ = ("content", "value")

    def __init__(self, content: ContentBlock | Iterable[Any] = (), value: Any = None) -> None:
        items = [content] if is_block(content) else list(content)
        self.content: list[ContentBlock] = [as_block(item) for item in items]
        """The blocks."""
        self.value = value
        """The structured value (None: the blocks' plain rendering goes in ``result``)."""

    def __repr__(self) -> str:
        return f"ToolOutput(content={self.content!r}, value={self.value!r})"


def split_output(output: Any) -> tuple[Any, list[ContentBlock] | None]:
    """A tool's return value as its plain value and its blocks (None: it returned none).

    Raises:
        TypeError: A value beside the blocks cannot be written as JSON.

    """
    if isinstance(output, ToolOutput):
        if not output.content:
            return output.value, None
        value = output.value
        if value is None:
            value = rendered(output.content)
        return value, output.content
    if is_block(output):
        return plain(output), [output]
    if isinstance(output, list | tuple):
        found = blocks_in(output)
        if found is not None:
            content, value = found
            return value, content
    return output, None


def too_large(content: list[ContentBlock], size: int, limit: int) -> str:
    """Why a result with ``content`` is ``size`` bytes, for the error over ``limit``."""
    sizes = sorted(
        ((len(json.dumps(block.wire())), block) for block in content),
        key=lambda pair: pair[0],
        reverse=True,
    )
    largest, block = sizes[0]
    what = (
        block.type if not isinstance(block, Image | Audio) else f"{block.type} ({block.mime_type})"
    )
    return (
        f"its largest content block, {what}, takes {largest:,} bytes on the wire, binary "
        f"data in base64; send a smaller one, or a ResourceLink the client can fetch"
    )

"""A call's result as a model receives it, in each provider's shape: what to send back.

:func:`model_output` turns a :class:`~argentic_tools.ToolResult` into the tool output an
LLM API takes, for the same formats as the tool exports:

- ``prompt``: text, the plain ``result`` (a string as it is, other values as JSON; an
  error's message);
- ``openai`` (Chat Completions, like the ``openai`` tool export): the ``content`` of a
  ``tool`` message, always a string: that text, or, for a result with content blocks,
  the blocks' plain renderings one after another (a ``tool`` message takes text only, so
  an image reaches the model as ``[image: image/png, 1,234 bytes]``; to show it, use
  ``openai-responses``);
- ``openai-responses`` (the Responses API): the ``output`` of a ``function_call_output``
  item: the text alone, or, for a result with content blocks, a list of ``input_text``
  and ``input_image`` parts (images as data URLs);
- ``anthropic``: the ``content`` of a ``tool_result`` block: the text, or a list of
  ``text`` and ``image`` blocks (base64 sources, for the image types the API takes);
- ``mcp``: a ``CallToolResult`` as JSON: the blocks in MCP's shapes, ``structuredContent``
  for an object value, ``isError`` for a failure.

What a format cannot take as such (audio, an SVG, a binary resource, a resource link)
reaches the model as its plain rendering (``[audio: audio/wav, 1,234 bytes]``), never as
base64 text. An embedded text resource is its text. A value the tool gave beside its
blocks comes first, as JSON text (a plain value given among the blocks is not repeated).
"""

import json
from typing import Any

from ..._protocol.content import ContentBlock, Image, plain, renders
from ..._protocol.messages import TaskErrorMessage, ToolResult
from .exports import EXPORT_FORMATS

ANTHROPIC_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image types Anthropic's API accepts in a ``tool_result``."""
OPENAI_IMAGE_TYPES = ANTHROPIC_IMAGE_TYPES
"""The image types OpenAI's Responses API accepts as ``input_image`` (PNG, JPEG, WebP,
GIF: the same four; an SVG is refused, so it reaches the model as its plain rendering)."""
MODEL_OUTPUT_FORMATS = EXPORT_FORMATS
"""The formats :func:`model_output` takes: those of the tool exports."""
CHAT_COMPLETIONS_SEPARATOR = "\n\n"
"""Between the blocks' renderings in a Chat Completions ``tool`` message."""


def model_output(result: ToolResult, fmt: str) -> Any:
    """What a model receives for ``result``, in format ``fmt`` (see the module).

    Raises:
        ValueError: Unknown format.

    """
    if fmt not in MODEL_OUTPUT_FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(MODEL_OUTPUT_FORMATS)}")
    if fmt == "mcp":
        return _mcp(result)
    text = _text(result)
    blocks = None if isinstance(result, TaskErrorMessage) else result.content
    if fmt == "prompt" or not blocks:
        return text
    if fmt == "openai":
        return CHAT_COMPLETIONS_SEPARATOR.join(
            _with_value(result, blocks, [plain(block) for block in blocks], text)
        )
    if fmt == "openai-responses":
        parts = [_openai_responses(block) for block in blocks]
        return _with_value(result, blocks, parts, {"type": "input_text", "text": text})
    parts = [_anthropic(block) for block in blocks]
    return _with_value(result, blocks, parts, {"type": "text", "text": text})


def _text(result: ToolResult) -> str:
    if isinstance(result, TaskErrorMessage):
        return result.error
    value = result.result
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _with_value(
    result: ToolResult, blocks: list[ContentBlock], parts: list[Any], value: Any
) -> list[Any]:
    """The parts, after the tool's own value when it gave one beside the blocks."""
    return parts if renders(result.result, blocks) else [value, *parts]


def _openai_responses(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, Image) and block.mime_type in OPENAI_IMAGE_TYPES:
        url = f"data:{block.mime_type};base64,{block.wire()['data']}"
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    return {"type": "input_text", "text": plain(block)}


def _anthropic(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, Image) and block.mime_type in ANTHROPIC_IMAGE_TYPES:
        source = {"type": "base64", "media_type": block.mime_type, "data": block.wire()["data"]}
        return {"type": "image", "source": source}
    return {"type": "text", "text": plain(block)}


def _mcp(result: ToolResult) -> dict[str, Any]:
    if isinstance(result, TaskErrorMessage):
        return {"content": [{"type": "text", "text": result.error}], "isError": True}
    value = result.result
    if result.content is not None:
        content = [block.wire() for block in result.content]
    else:
        content = [{"type": "text", "text": _text(result)}]
    output: dict[str, Any] = {"content": content, "isError": False}
    if isinstance(value, dict):
        output["structuredContent"] = value
    return output

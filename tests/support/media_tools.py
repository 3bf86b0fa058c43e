"""Tools that return content blocks: ``python -m tests.support.media_tools --broker URL ...``.

One tool per block type, a mixed list, blocks with a value beside them, a generator of
blocks, a class-based tool, and an image as large as asked (for the payload limit).
"""

import struct
import sys
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

from pydantic import BaseModel

from argentic_tools import (
    Annotations,
    Audio,
    BaseTool,
    EmbeddedResource,
    Image,
    ResourceLink,
    Text,
    ToolOutput,
    serve_main,
    tool,
)


def png(width: int = 1, height: int = 1) -> bytes:
    """A valid grey PNG of ``width`` x ``height`` pixels."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def wav(samples: int = 8) -> bytes:
    """A valid silent 8 kHz mono WAV of ``samples`` samples."""
    data = b"\x00\x00" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


TINY_PNG = png()
FOR_THE_USER = Annotations(audience=["user"], priority=0.9)


@tool
def tiny_image() -> Image:
    """A 1x1 PNG, for the user."""
    return Image(TINY_PNG, mime_type="image/png", annotations=FOR_THE_USER)


@tool
async def beep() -> Audio:
    """A short silent WAV (an async tool), with _meta."""
    return Audio(wav(), meta={"example.com/length": 8})


@tool
def notes() -> EmbeddedResource:
    """A text resource, embedded."""
    return EmbeddedResource("file:///notes.txt", text="remember the milk", mime_type="text/plain")


@tool
def blob() -> EmbeddedResource:
    """A binary resource, embedded."""
    return EmbeddedResource("file:///data.bin", blob=bytes(range(16)))


@tool
def link() -> ResourceLink:
    """A link to a resource."""
    return ResourceLink(
        "file:///report.pdf",
        "report.pdf",
        title="The report",
        mime_type="application/pdf",
        size=1234,
    )


@tool
def mixed() -> list[Text | Image | ResourceLink | dict[str, int]]:
    """Text, an image, a link, and a plain value among them."""
    return [
        Text("a chart and its source", annotations=Annotations(audience=["assistant"])),
        Image(TINY_PNG),
        ResourceLink("file:///chart.csv", "chart.csv"),
        {"rows": 3},
    ]


@tool
def chart() -> ToolOutput:
    """An image with a structured value beside it."""
    return ToolOutput(content=[Image(TINY_PNG)], value={"width": 1, "height": 1})


@tool
async def frames(count: int = 3) -> AsyncIterator[Image]:
    """``count`` one-pixel images, one chunk each."""
    for index in range(count):
        yield Image(png(index + 1), annotations=FOR_THE_USER)


@tool
def pages(count: int = 2) -> Iterator[Text]:
    """``count`` text blocks, from a sync generator."""
    for index in range(count):
        yield Text(f"page {index}", annotations=Annotations(priority=index / count))


@tool
def big_image(size: int) -> Image:
    """An image of ``size`` bytes (not a real PNG past its header)."""
    return Image(TINY_PNG + b"\x00" * max(size - len(TINY_PNG), 0), mime_type="image/png")


HTML = '<img src=x onerror="window.pwned = 1"><script>window.pwned = 2</script><b>bold?</b>'
"""Markup a page must show as text, never run."""


@tool
def html_note() -> list[Text | Image]:
    """A text block holding HTML that must stay text, and an SVG with a script in it."""
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>window.pwned = 3</script></svg>'
    return [Text(HTML), Image(svg, mime_type="image/svg+xml")]


class NoArguments(BaseModel):
    """No arguments."""


class Speaker(BaseTool):
    """A class-based tool returning audio and text."""

    def __init__(self) -> None:
        super().__init__("speaker", "Say nothing, as audio.", "", NoArguments)

    async def _execute(self, **kwargs: Any) -> Any:
        return [Text("silence:"), Audio(wav())]


TOOLS: list[Any] = [
    tiny_image,
    beep,
    notes,
    blob,
    link,
    mixed,
    chart,
    frames,
    pages,
    big_image,
    html_note,
    Speaker,
]
NAMES = (
    "tiny_image",
    "beep",
    "notes",
    "blob",
    "link",
    "mixed",
    "chart",
    "frames",
    "pages",
    "big_image",
)


def main(argv: list[str] | None = None) -> None:
    """Serve the media tools until SIGTERM/SIGINT."""
    serve_main(TOOLS, argv, prog="tests.support.media_tools")


if __name__ == "__main__":
    main(sys.argv[1:])

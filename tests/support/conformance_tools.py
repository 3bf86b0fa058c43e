"""The MCP conformance suite's test tools, written as ordinary argentic-tools tools.

    python -m tests.support.conformance_tools --broker URL [--topic-prefix P]

The official suite (npm ``@modelcontextprotocol/conformance``) calls tools with fixed
names and checks what they return (its ``src/scenarios/server/*.ts``). Served here
through ``serve_main`` like any tool process, they reach the suite through
``argentic-tools mcp serve --http``: ``scripts/conformance.py`` runs the whole chain.

Two are diagnostic hooks rather than tools a scenario checks the output of:
``test_trigger_tool_change`` changes the fleet (a second service in this process starts
or stops serving ``test_toggled_tool``), so the suite sees whether the gateway tells
listening clients; ``test_reconnection`` answers at once (the reference fixture closes
the response stream mid-call to test resumption, which a tool on the bus cannot do).
"""

import argparse
import json
import sys
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict

from argentic_tools import (
    Audio,
    BaseTool,
    EmbeddedResource,
    Image,
    Text,
    ToolContext,
    ToolError,
    ToolService,
    serve_main,
    tool,
)
from tests.support.media_tools import png, wav

SIMPLE_TEXT = "This is a simple text response for testing."
ERROR_TEXT = "This tool intentionally returns an error for testing"

PROGRESS_GAP = 0.15
"""Seconds between the progress tool's reports. The suite suggests ~50 ms, but a tool's
reports reach the wire at most every 0.1 s (the latest wins), and the suite wants all
three of 0, 50 and 100."""

JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}
"""The input schema the ``json-schema-2020-12`` scenario expects, keyword for keyword."""


@tool
def test_simple_text() -> str:
    """Return a fixed line of text."""
    return SIMPLE_TEXT


@tool
def test_image_content() -> Image:
    """Return a one-pixel PNG image."""
    return Image(png(), mime_type="image/png")


@tool
def test_audio_content() -> Audio:
    """Return a short silent WAV clip."""
    return Audio(wav(), mime_type="audio/wav")


@tool
def test_embedded_resource() -> EmbeddedResource:
    """Return a text resource embedded in the result."""
    return EmbeddedResource(
        "test://embedded-resource",
        text="This is an embedded resource content.",
        mime_type="text/plain",
    )


@tool
def test_multiple_content_types() -> list[Text | Image | EmbeddedResource]:
    """Return text, an image and an embedded JSON resource together."""
    return [
        Text("Multiple content types test:"),
        Image(png(), mime_type="image/png"),
        EmbeddedResource(
            "test://mixed-content-resource",
            text=json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
            mime_type="application/json",
        ),
    ]


@tool
def test_error_handling() -> str:
    """Always fail, with a fixed message."""
    raise ToolError(ERROR_TEXT)


@tool
async def test_tool_with_progress(context: ToolContext) -> str:
    """Report progress 0, 50 and 100 of 100, then return."""
    for done in (0, 50, 100):
        if done:
            await anyio.sleep(PROGRESS_GAP)
        await context.report_progress(done, 100)
    return "Progress test completed"


@tool
def test_reconnection() -> str:
    """Answer at once (the suite's SSE polling scenario calls it)."""
    return "Reconnection test completed"


@tool
def test_toggled_tool() -> str:
    """Exist or not, as ``test_trigger_tool_change`` decides."""
    return "toggled"


class _AnyArguments(BaseModel):
    model_config = ConfigDict(extra="allow")


class JsonSchema202012Tool(BaseTool):
    """A tool whose input schema uses JSON Schema 2020-12 keywords, served as written."""

    def __init__(self) -> None:
        super().__init__(
            name="json_schema_2020_12_tool",
            manual="Tool with JSON Schema 2020-12 features",
            api=json.dumps(JSON_SCHEMA_2020_12),
            argument_schema=_AnyArguments,
        )

    async def _execute(self, **kwargs: Any) -> Any:
        return {"received": kwargs}


class _NoArguments(BaseModel):
    pass


class TriggerToolChange(BaseTool):
    """Adds ``test_toggled_tool`` to the fleet, or removes it when it is there.

    The tool is served by a second service of this process, on the same broker.
    """

    def __init__(self, broker: str, topic_prefix: str | None) -> None:
        super().__init__(
            name="test_trigger_tool_change",
            manual="Add test_toggled_tool to the fleet, or remove it when it is there.",
            api="",
            argument_schema=_NoArguments,
        )
        self.broker = broker
        self.topic_prefix = topic_prefix
        self._service: ToolService | None = None

    async def _execute(self, **kwargs: Any) -> Any:
        if self._service is None:
            service = ToolService(self.broker, [test_toggled_tool], topic_prefix=self.topic_prefix)
            await service.start()
            self._service = service
            return "test_toggled_tool added"
        service, self._service = self._service, None
        await service.aclose()
        return "test_toggled_tool removed"


def tools(broker: str, topic_prefix: str | None) -> list[Any]:
    """The suite's tools, for a process on ``broker`` under ``topic_prefix``."""
    return [
        test_simple_text,
        test_image_content,
        test_audio_content,
        test_embedded_resource,
        test_multiple_content_types,
        test_error_handling,
        test_tool_with_progress,
        JsonSchema202012Tool(),
        test_reconnection,
        TriggerToolChange(broker, topic_prefix),
    ]


TOOL_NAMES = [t.name if isinstance(t, BaseTool) else t.__name__ for t in tools("", None)]
"""What the gateway lists once this process serves."""


def main(argv: list[str] | None = None) -> None:
    """Serve the suite's tools until SIGTERM/SIGINT."""
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--broker", default="mqtt://127.0.0.1:1883")
    where.add_argument("--topic-prefix", default=None)
    known, _ = where.parse_known_args(argv)
    serve_main(
        tools(known.broker, known.topic_prefix), argv, prog="tests.support.conformance_tools"
    )


if __name__ == "__main__":
    main(sys.argv[1:])

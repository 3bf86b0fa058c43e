"""Registration messages as a tool process sends them, for tests of the registry."""

import json
from typing import Any

from argentic_tools._protocol.fleet_messages import RegisterToolMessage, ToolSpec

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}


def registration(
    name: str = "echo",
    source: str = "proc-a",
    schema: dict[str, Any] | None = None,
    **spec: Any,
) -> RegisterToolMessage:
    """A protocol-2 registration of ``name`` from ``source``."""
    schema = SCHEMA if schema is None else schema
    return RegisterToolMessage(
        source=source,
        tool_name=name,
        tool_manual=f"{name} things",
        tool_api=json.dumps(schema),
        tool_spec=ToolSpec(name=name, input_schema=schema, **spec),
        protocol=2,
    )

"""The MCP conformance suite's test tools, written as ordinary argentic-tools tools.

    python -m tests.support.conformance_tools --broker URL [--topic-prefix P]

The official suite (npm ``@modelcontextprotocol/conformance``) calls tools with fixed
names and checks what they return (its ``src/scenarios/server/*.ts``). Served here
through ``serve_main`` like any tool process, they reach the suite through
``argentic-tools mcp serve --http``: ``scripts/conformance.py`` runs the whole chain.

The tools that take part in their call (log to the caller, ask its user or its model,
list its roots) use the tool-side API (``context.log``, ``context.elicit``,
``context.sample``, ``context.list_roots``, ``context.ask``); the gateway turns that into
requests to the client (handshake era) or ``input_required`` results (2026-07-28).
Those that need a fixed key for their question in an ``input_required`` result name it
in the request's ``_meta`` (:data:`argentic_tools.mcp.participation.asking.KEY_META`).

Two are diagnostic hooks rather than tools a scenario checks the output of:
``test_trigger_tool_change`` changes the fleet (a second service in this process starts
or stops serving ``test_toggled_tool``), so the suite sees whether the gateway tells
listening clients; ``test_reconnection`` answers at once (the reference fixture closes
the response stream mid-call to test resumption, which a tool on the bus cannot do).
"""

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict

from argentic_tools import (
    Audio,
    BaseTool,
    ElicitRequest,
    ElicitResult,
    EmbeddedResource,
    Image,
    SampleRequest,
    Text,
    ToolContext,
    ToolError,
    ToolService,
    serve_main,
    tool,
)
from argentic_tools.mcp.participation.asking import KEY_META
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


LOG_GAP = 0.05
"""Seconds between the logging tool's records, as the suite asks."""

LOG_LINES = ("Tool execution started", "Tool processing data", "Tool execution completed")

NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
OK_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def named_question(key: str, message: str, schema: Mapping[str, Any]) -> ElicitRequest:
    """An elicitation whose key in an ``input_required`` result is ``key``."""
    return ElicitRequest.model_validate(
        {"message": message, "requestedSchema": dict(schema), "_meta": {KEY_META: key}}
    )


def named_sample(key: str, text: str, max_tokens: int) -> SampleRequest:
    """A one-message completion whose key in an ``input_required`` result is ``key``."""
    return SampleRequest.model_validate(
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens,
            "_meta": {KEY_META: key},
        }
    )


def described(result: ElicitResult) -> str:
    """An elicitation's outcome as the suite's tools print it."""
    return f"action={result.action}, content={json.dumps(result.content)}"


async def _log_three(context: ToolContext) -> None:
    for index, line in enumerate(LOG_LINES):
        if index:
            await anyio.sleep(LOG_GAP)
        context.log("info", line)


@tool
async def test_tool_with_logging(context: ToolContext) -> str:
    """Log three records at info level, 50 ms apart, then return."""
    await _log_three(context)
    return "Tool with logging executed successfully"


@tool
async def test_logging_tool(context: ToolContext) -> str:
    """Log three records (sent only to a caller that asked for log records)."""
    await _log_three(context)
    return "Logging tool executed"


@tool
async def test_sampling(context: ToolContext, prompt: str) -> str:
    """Ask the caller's model to answer ``prompt``."""
    result = await context.sample(prompt, max_tokens=100)
    return f"LLM response: {result.text}"


@tool
async def test_elicitation(context: ToolContext, message: str) -> str:
    """Ask the caller's user for a username and an email address."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    return f"User response: {described(await context.elicit(message, schema))}"


SEP1034_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {
            "type": "string",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "default": True},
    },
}
"""Defaults for every primitive type (SEP-1034)."""


@tool
async def test_elicitation_sep1034_defaults(context: ToolContext) -> str:
    """Ask with a default for every field."""
    result = await context.elicit("Please review your details", SEP1034_SCHEMA)
    return f"Elicitation completed: {described(result)}"


SEP1330_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}
"""The five enum forms (SEP-1330)."""


@tool
async def test_elicitation_sep1330_enums(context: ToolContext) -> str:
    """Ask with every kind of enum."""
    result = await context.elicit("Please choose your options", SEP1330_SCHEMA)
    return f"Elicitation completed: {described(result)}"


@tool
async def test_input_required_result_elicitation(context: ToolContext) -> str:
    """Ask the user's name (key ``user_name``) and greet them."""
    result = await context.ask(named_question("user_name", "What is your name?", NAME_SCHEMA))
    return f"Hello, {result.data.get('name', 'stranger')}!"


@tool
async def test_input_required_result_sampling(context: ToolContext) -> str:
    """Ask the caller's model a question (key ``capital_question``)."""
    request = named_sample("capital_question", "What is the capital of France?", 100)
    return f"Sampling response: {(await context.ask(request)).text}"


@tool
async def test_input_required_result_list_roots(context: ToolContext) -> str:
    """Name the caller's roots."""
    roots = await context.list_roots()
    return "Roots: " + ", ".join(f"{root.name or ''} ({root.uri})" for root in roots)


async def _confirmed(context: ToolContext) -> str:
    result = await context.ask(named_question("confirm", "Please confirm", OK_SCHEMA))
    return f"confirmed={result.data.get('ok')}"


@tool
async def test_input_required_result_request_state(context: ToolContext) -> str:
    """Ask for a confirmation; the answer comes back with the request's state."""
    return f"state-ok: {await _confirmed(context)}"


@tool
async def test_input_required_result_tampered_state(context: ToolContext) -> str:
    """Ask for a confirmation (the suite answers with a tampered state)."""
    return await _confirmed(context)


@tool
async def test_input_required_result_multiple_inputs(context: ToolContext) -> str:
    """Ask the user, the model and the roots at once."""
    answers: dict[str, str] = {}

    async def name() -> None:
        asked = named_question("user_name", "What is your name?", NAME_SCHEMA)
        answers["name"] = str((await context.ask(asked)).data.get("name"))

    async def greeting() -> None:
        answers["greeting"] = (
            await context.ask(named_sample("greeting", "Generate a greeting", 50))
        ).text

    async def roots() -> None:
        answers["roots"] = str(len(await context.list_roots()))

    async with anyio.create_task_group() as group:
        for ask in (name, greeting, roots):
            group.start_soon(ask)
    return f"{answers['greeting']} {answers['name']} ({answers['roots']} roots)"


@tool
async def test_input_required_result_multi_round(context: ToolContext) -> str:
    """Ask two questions, one after the other."""
    first = await context.ask(named_question("step1", "Step 1: What is your name?", NAME_SCHEMA))
    color_schema = {
        "type": "object",
        "properties": {"color": {"type": "string"}},
        "required": ["color"],
    }
    asked = named_question("step2", "Step 2: What is your favorite color?", color_schema)
    second = await context.ask(asked)
    return f"{first.data.get('name')} likes {second.data.get('color')}"


@tool
async def test_input_required_result_capabilities(context: ToolContext) -> str:
    """Ask only what the caller can answer."""
    done = []
    if context.caller_can("sample"):
        done.append((await context.ask(named_sample("model", "Say hello", 20))).text)
    if context.caller_can("elicit"):
        done.append(described(await context.ask(named_question("user", "Name?", NAME_SCHEMA))))
    return "; ".join(done) or "nothing to ask"


@tool
async def test_missing_capability(context: ToolContext) -> str:
    """Need the caller's model, without checking that the caller lends one."""
    return (await context.sample("Say hello", max_tokens=20)).text


@tool
async def test_streaming_elicitation(context: ToolContext) -> str:
    """Ask the user a question while the call's response is streamed."""
    result = await context.ask(named_question("confirm", "Continue?", OK_SCHEMA))
    return described(result)


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


# -- MCP Tasks (io.modelcontextprotocol/tasks): the fixture tools of the tasks-* scenarios --
# Tagged as the gateway reads them (argentic_tools.mcp.tasks): "long-running" is a task at
# once for a client that declares the extension, "task-only" needs the extension.

TASK_DELETE_SCHEMA = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}
TASK_STEP_SECONDS = 0.5
"""How long ``failing_job`` works before it fails."""
TASK_AFTER_ANSWER_SECONDS = 3.0
"""How long ``test_tool_with_task`` works after its answer: past the gateway's
``TASK_AFTER_SECONDS``, so that its call becomes a task."""


@tool
def greet(name: str) -> str:
    """Greet ``name`` at once (never a task)."""
    return f"Hello, {name}!"


@tool(tags=["long-running"])
async def slow_compute(seconds: float, label: str = "") -> str:
    """Work for ``seconds`` (a task), then say so; cancellable all along."""
    await anyio.sleep(seconds)
    return f"computed {label or 'result'} in {seconds:g} s"


@tool(tags=["task-only"])
async def failing_job() -> str:
    """Fail as a tool fails (``isError``), after a moment; runs only as a task."""
    await anyio.sleep(TASK_STEP_SECONDS)
    raise ToolError("failing_job failed, as it always does")


@tool(tags=["long-running"])
async def protocol_error_job(context: ToolContext) -> str:
    """End in a protocol error: it needs its caller's roots, which the suite never offers.

    An ordinary call would answer -32021 (missing client capability): its task fails with it.
    """
    roots = await context.list_roots()
    return f"{len(roots)} roots"


@tool(tags=["long-running"])
async def confirm_delete(context: ToolContext, filename: str) -> str:
    """Ask the user to confirm deleting ``filename`` (the task waits in input_required)."""
    result = await context.elicit(f"Delete {filename}?", TASK_DELETE_SCHEMA)
    confirmed = result.action == "accept" and bool(result.data.get("confirm"))
    return f"{'deleted' if confirmed else 'kept'} {filename}"


@tool(tags=["long-running"])
async def multi_input(context: ToolContext) -> str:
    """Ask two questions at once; the task waits until both are answered."""
    answers: dict[str, ElicitResult] = {}

    async def ask(key: str, message: str, schema: Mapping[str, Any]) -> None:
        answers[key] = await context.elicit(message, schema)

    async with anyio.create_task_group() as group:
        group.start_soon(ask, "name", "Your name?", NAME_SCHEMA)
        group.start_soon(ask, "confirm", "Go ahead?", TASK_DELETE_SCHEMA)
    return (
        f"name={answers['name'].data.get('name')}, confirm={answers['confirm'].data.get('confirm')}"
    )


@tool
async def test_tool_with_task(context: ToolContext) -> str:
    """Ask the user's name (in input_required rounds), then work long enough to be a task."""
    result = await context.ask(named_question("user_name", "What is your name?", NAME_SCHEMA))
    await anyio.sleep(TASK_AFTER_ANSWER_SECONDS)
    return f"Hello, {result.data.get('name', 'stranger')}!"


TASK_TOOLS = [
    greet,
    slow_compute,
    failing_job,
    protocol_error_job,
    confirm_delete,
    multi_input,
    test_tool_with_task,
]
"""The tasks-* scenarios' tools."""

# -- end of the MCP Tasks block --


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
        test_tool_with_logging,
        test_logging_tool,
        test_sampling,
        test_elicitation,
        test_elicitation_sep1034_defaults,
        test_elicitation_sep1330_enums,
        test_input_required_result_elicitation,
        test_input_required_result_sampling,
        test_input_required_result_list_roots,
        test_input_required_result_request_state,
        test_input_required_result_tampered_state,
        test_input_required_result_multiple_inputs,
        test_input_required_result_multi_round,
        test_input_required_result_capabilities,
        test_missing_capability,
        test_streaming_elicitation,
        *TASK_TOOLS,
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

"""The fleet as OpenAI Agents SDK tools, in the SDK's own agent loop (``make test-frameworks``).

Each run is driven by the SDK's ``ScriptedModel`` (no network, no API key) and calls the
real test tool processes over a real broker.
"""

import asyncio
import json
import pathlib
from typing import Any

import anyio
import pytest

from tests.support.framework_fleet import (
    check_received,
    every_setting,
    skip_unless_frameworks,
    wait_for_files,
)

skip_unless_frameworks()

from agents import (  # noqa: E402 - the framework is imported only when its tests run
    Agent,
    FunctionTool,
    RunConfig,
    Runner,
    ToolCallOutputItem,
    ToolOutputFileContent,
    ToolOutputImage,
)
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402
from agents.tracing import Span, Trace, TracingProcessor, set_trace_processors  # noqa: E402

from argentic_tools import (  # noqa: E402
    CallRef,
    ElicitRequest,
    LogRecord,
    ThreadToolPolicy,
    ToolManager,
    ToolService,
    Topics,
    tool,
)
from argentic_tools.integrations.openai_agents import PROGRESS_SPAN, FleetTools  # noqa: E402
from tests.support.brokers import Mosquitto  # noqa: E402

pytestmark = pytest.mark.anyio


def outputs(call: ModelCall) -> list[Any]:
    """The tool outputs the model receives in this call, in order."""
    items = call.input if isinstance(call.input, list) else []
    return [item["output"] for item in items if item.get("type") == "function_call_output"]


def answer_with_output(call: ModelCall) -> list[Any]:
    """A final answer repeating the last tool output (a step's responder)."""
    last = outputs(call)[-1]
    return [assistant_message(last if isinstance(last, str) else json.dumps(last))]


def config(**kwargs: Any) -> RunConfig:
    kwargs.setdefault("tracing_disabled", True)
    return RunConfig(**kwargs)


def tool_outputs(items: list[Any]) -> list[Any]:
    return [item.output for item in items if isinstance(item, ToolCallOutputItem)]


async def test_a_plain_call_reaches_the_tool_and_its_result_the_model(
    fleet: ToolManager,
) -> None:
    model = ScriptedModel(
        [
            [function_call("echo", {"message": "hello"}, call_id="c1")],
            ModelStep.respond(answer_with_output),
        ]
    )
    agent = Agent(name="a", model=model, tools=FleetTools(fleet).tools())
    with anyio.fail_after(30):
        result = await Runner.run(agent, "say hello", run_config=config())
    assert result.final_output == "hello"
    assert tool_outputs(result.new_items) == ["hello"]
    model.assert_complete()


async def test_the_schema_is_strict_and_a_null_for_an_optional_parameter_means_its_default(
    fleet: ToolManager,
) -> None:
    tools = {t.name: t for t in FleetTools(fleet).tools() if isinstance(t, FunctionTool)}
    steps = tools["steps"]
    assert steps.strict_json_schema is True
    schema = steps.params_json_schema
    assert schema["required"] == ["count", "interval", "label", "directory"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["label"]["type"] == ["string", "null"]
    arguments = {"count": 1, "interval": 0, "label": None, "directory": None}
    model = ScriptedModel(
        [
            [function_call("steps", arguments, call_id="c1")],
            ModelStep.respond(answer_with_output),
        ]
    )
    agent = Agent(name="a", model=model, tools=list(tools.values()))
    with anyio.fail_after(30):
        result = await Runner.run(agent, "one step", run_config=config())
    assert result.final_output == "1"


async def test_invalid_arguments_and_failures_reach_the_model_as_errors_it_reads(
    fleet: ToolManager,
) -> None:
    model = ScriptedModel(
        [
            [function_call("echo", {"message": 42}, call_id="c1")],
            [function_call("echo", "not json", call_id="c2")],
            [function_call("fail", {"reason": "no disk"}, call_id="c3")],
            ModelStep.respond(answer_with_output),
        ]
    )
    agent = Agent(name="a", model=model, tools=FleetTools(fleet).tools())
    with anyio.fail_after(30):
        result = await Runner.run(agent, "echo", run_config=config())
    invalid, unparsable, failed = tool_outputs(result.new_items)
    assert "Tool 'echo': invalid arguments" in invalid and "$.message" in invalid
    assert "not valid JSON" in unparsable
    assert "failing on purpose: no disk" in failed
    model.assert_complete()


async def test_the_thread_comes_from_the_run_and_the_trace_from_the_sdk_trace(
    fleet: ToolManager,
) -> None:
    model = ScriptedModel(
        [
            [function_call("whoami", {}, call_id="call-7")],
            ModelStep.respond(answer_with_output),
        ]
    )
    agent = Agent(name="a", model=model, tools=FleetTools(fleet, user_id="u1").tools())
    run_config = RunConfig(group_id="thread-9", trace_id="trace_" + "a" * 32)
    set_trace_processors([])  # the trace exists, nothing exports it
    with anyio.fail_after(30):
        result = await Runner.run(agent, "who", run_config=run_config)
    seen = json.loads(result.final_output)
    assert seen["thread_id"] == "thread-9"
    assert seen["trace_id"] == "trace_" + "a" * 32
    assert seen["call_id"] == "call-7"
    assert seen["user_id"] == "u1"


async def test_a_tool_the_policy_turns_off_for_the_runs_thread_is_not_offered(
    fleet: ToolManager,
) -> None:
    policy = ThreadToolPolicy()
    fleet.policy = policy
    model = ScriptedModel([[assistant_message("done")], [assistant_message("done")]])
    agent = Agent(name="a", model=model, tools=FleetTools(fleet).tools())
    # The SDK gives is_enabled no run config: the run's group_id is read from its trace.
    set_trace_processors([])
    with anyio.fail_after(30):
        await Runner.run(agent, "hi", run_config=RunConfig(group_id="t1"))
        policy.set_enabled_tools("t1", ["echo"])
        await Runner.run(agent, "hi", run_config=RunConfig(group_id="t1"))
    first, second = model.calls
    assert "whoami" in [tool.name for tool in first.tools]
    assert [tool.name for tool in second.tools] == ["echo"]


async def test_progress_reaches_the_handler_and_the_runs_trace(fleet: ToolManager) -> None:
    spans: list[dict[str, Any]] = []
    reports: list[tuple[str, float, float | None, str | None]] = []

    class Collector(TracingProcessor):
        def on_trace_start(self, trace: Trace) -> None: ...
        def on_trace_end(self, trace: Trace) -> None: ...
        def on_span_start(self, span: Span[Any]) -> None: ...
        def on_span_end(self, span: Span[Any]) -> None:
            exported = span.export() or {}
            data = exported.get("span_data", {})
            if data.get("name") == PROGRESS_SPAN:
                spans.append(data["data"])

        def shutdown(self) -> None: ...
        def force_flush(self) -> None: ...

    def on_progress(
        context: ToolContext[Any], progress: float, total: float | None, message: str | None
    ) -> None:
        reports.append((context.tool_call_id, progress, total, message))

    set_trace_processors([Collector()])
    model = ScriptedModel(
        [
            [function_call("steps", {"count": 3, "interval": 0.01}, call_id="c1")],
            ModelStep.respond(answer_with_output),
        ]
    )
    tools = FleetTools(fleet, on_progress=on_progress).tools()
    agent = Agent(name="a", model=model, tools=tools)
    with anyio.fail_after(30):
        result = await Runner.run(agent, "count", run_config=RunConfig())
    assert result.final_output == "3"
    # The tool's reports are rate-limited: the last one always comes, in order.
    assert reports[-1] == ("c1", 3.0, 3.0, "step 3 of 3")
    assert [progress for _, progress, _, _ in reports] == sorted({r[1] for r in reports})
    assert [(s["call_id"], s["progress"], s["total"], s["message"]) for s in spans] == reports


async def test_a_run_cancelled_mid_call_stops_the_tool(
    fleet: ToolManager, tmp_path: pathlib.Path
) -> None:
    started = anyio.Event()
    arguments = {"count": 500, "interval": 0.05, "label": "run", "directory": str(tmp_path)}
    model = ScriptedModel([[function_call("steps", arguments, call_id="c1")]])
    tools = FleetTools(fleet, on_progress=lambda *_: started.set()).tools()
    agent = Agent(name="a", model=model, tools=tools)
    run = asyncio.create_task(Runner.run(agent, "work", run_config=config()))
    with anyio.fail_after(30):
        await started.wait()
    run.cancel()
    with anyio.fail_after(30), pytest.raises(asyncio.CancelledError):
        await run
    await wait_for_files(tmp_path, ["run.stopped"])
    assert fleet.pending_calls == 0


async def test_a_streamed_run_cancelled_mid_call_stops_the_tool(
    fleet: ToolManager, tmp_path: pathlib.Path
) -> None:
    started = anyio.Event()
    arguments = {"count": 500, "interval": 0.05, "label": "stream", "directory": str(tmp_path)}
    model = ScriptedModel([[function_call("steps", arguments, call_id="c1")]])
    tools = FleetTools(fleet, on_progress=lambda *_: started.set()).tools()
    agent = Agent(name="a", model=model, tools=tools)
    result = Runner.run_streamed(agent, "work", run_config=config())
    with anyio.fail_after(30):
        async for _event in result.stream_events():
            if started.is_set():
                result.cancel()
    await wait_for_files(tmp_path, ["stream.stopped"])


async def test_streamed_chunks_reach_the_chunk_handler_in_order(fleet: ToolManager) -> None:
    chunks: list[Any] = []
    model = ScriptedModel(
        [
            [function_call("chunks", {"count": 3, "interval": 0}, call_id="c1")],
            ModelStep.respond(answer_with_output),
        ]
    )
    tools = FleetTools(fleet, on_chunk=lambda _context, chunk: chunks.append(chunk)).tools()
    agent = Agent(name="a", model=model, tools=tools)
    with anyio.fail_after(30):
        result = await Runner.run(agent, "stream", run_config=config())
    assert chunks == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert json.loads(result.final_output) == chunks


async def test_an_image_result_reaches_the_model_as_the_sdks_image_output(
    fleet: ToolManager,
) -> None:
    model = ScriptedModel(
        [
            [function_call("tiny_image", {}, call_id="c1")],
            [function_call("mixed", {}, call_id="c2")],
            [assistant_message("seen")],
        ]
    )
    agent = Agent(name="a", model=model, tools=FleetTools(fleet).tools())
    with anyio.fail_after(30):
        result = await Runner.run(agent, "show", run_config=config())
    single, mixed = tool_outputs(result.new_items)
    assert isinstance(single, list) and isinstance(single[0], ToolOutputImage)
    assert single[0].image_url is not None
    assert single[0].image_url.startswith("data:image/png;base64,iVBORw0KGgo")
    assert [part.type for part in mixed] == ["text", "image", "text", "text"]
    # What the model receives: the Responses API's input_image part.
    sent = outputs(model.calls[1])[0]
    assert sent[0]["type"] == "input_image"


async def test_a_tool_that_needs_approval_interrupts_the_run_until_approved(
    fleet: ToolManager,
) -> None:
    model = ScriptedModel(
        [
            [function_call("count", {}, call_id="c1")],
            ModelStep.respond(answer_with_output),
        ]
    )
    tools = FleetTools(fleet, needs_approval={"count"}).tools()
    agent = Agent(name="a", model=model, tools=tools)
    with anyio.fail_after(30):
        first = await Runner.run(agent, "count", run_config=config())
        assert [item.tool_name for item in first.interruptions] == ["count"]
        assert tool_outputs(first.new_items) == []
        state = first.to_state()
        state.approve(first.interruptions[0])
        resumed = await Runner.run(agent, state, run_config=config())
    assert int(resumed.final_output) >= 1


@tool
def late_joiner() -> str:
    """A tool that joins the fleet after the agent was built."""
    return "joined"


async def test_the_tools_follow_the_registry_between_runs(
    mosquitto: Mosquitto, fleet_topics: Topics, fleet: ToolManager
) -> None:
    fleet_tools = FleetTools(fleet)
    assert "late_joiner" not in [t.name for t in fleet_tools.tools()]
    model = ScriptedModel(
        [
            [function_call("late_joiner", {}, call_id="c1")],
            ModelStep.respond(answer_with_output),
            [assistant_message("nothing to call")],
        ]
    )
    with anyio.fail_after(30):
        async with ToolService(mosquitto.url, [late_joiner], topics=fleet_topics):
            info = await fleet.wait_for_tool("late_joiner", timeout=15)
            agent = Agent(name="a", model=model, tools=fleet_tools.tools())
            joined = await Runner.run(agent, "call the new one", run_config=config())
        await fleet.wait_for_tool_removed(info.id, timeout=15)
        await Runner.run(agent, "and now?", run_config=config())
    assert joined.final_output == "joined"
    # The agent still holds the tool; its is_enabled hides it once it left.
    assert "late_joiner" not in [t.name for t in model.calls[-1].tools]
    assert "echo" in [t.name for t in model.calls[-1].tools]


async def test_a_tools_question_is_answered_by_the_on_elicit_handler(fleet: ToolManager) -> None:
    asked: list[tuple[str, str | None]] = []

    def on_elicit(request: ElicitRequest, call: CallRef) -> dict[str, Any]:
        asked.append((request.message, call.call_id))
        return {"action": "accept", "content": {"name": "Ann"}}

    model = ScriptedModel(
        [
            [function_call("ask_name", {"label": "x"}, call_id="c1")],
            ModelStep.respond(answer_with_output),
        ]
    )
    agent = Agent(name="a", model=model, tools=FleetTools(fleet, on_elicit=on_elicit).tools())
    with anyio.fail_after(30):
        result = await Runner.run(agent, "who", run_config=config())
    assert asked == [("Who are you? (x)", "c1")]
    assert json.loads(result.final_output) == {
        "action": "accept",
        "data": {"name": "Ann"},
        "label": "x",
    }


async def test_a_binary_resource_is_a_file_output_and_audio_its_rendering(
    fleet: ToolManager,
) -> None:
    model = ScriptedModel(
        [
            [function_call("blob", {}, call_id="c1")],
            [function_call("beep", {}, call_id="c2")],
            [assistant_message("heard")],
        ]
    )
    agent = Agent(name="a", model=model, tools=FleetTools(fleet, thread_id="t").tools())
    with anyio.fail_after(30):
        result = await Runner.run(agent, "files", run_config=config())
    (blob,), (beep,) = tool_outputs(result.new_items)
    assert isinstance(blob, ToolOutputFileContent) and blob.filename == "data.bin"
    assert blob.file_data == "data:application/octet-stream;base64,AAECAwQFBgcICQoLDA0ODw=="
    assert beep.type == "text" and beep.text.startswith("[audio: audio/wav, ")


async def test_a_tools_log_records_reach_the_on_log_handler(fleet: ToolManager) -> None:
    records: list[tuple[str | None, str, Any]] = []

    def on_log(record: LogRecord, call: CallRef) -> None:
        records.append((call.call_id, record.message, record.data))

    model = ScriptedModel(
        [
            [function_call("chatty", {"count": 2}, call_id="c1")],
            ModelStep.respond(answer_with_output),
        ]
    )
    agent = Agent(name="a", model=model, tools=FleetTools(fleet, on_log=on_log).tools())
    with anyio.fail_after(30):
        result = await Runner.run(agent, "talk", run_config=config())
    assert result.final_output == "2"
    assert records == [("c1", "record 0", {"i": 0}), ("c1", "record 1", {"i": 1})]


async def test_every_setting_reaches_the_tool(fleet: ToolManager) -> None:
    reports = []
    for n, settings in enumerate(every_setting()):
        model = ScriptedModel(
            [
                [function_call("received", {}, call_id=f"call-{n}")],
                ModelStep.respond(answer_with_output),
            ]
        )
        tools = FleetTools(fleet, thread_id="thread-s", **settings).tools()
        agent = Agent(name="a", model=model, tools=tools)
        with anyio.fail_after(30):
            result = await Runner.run(agent, "report", run_config=config())
        reports.append(json.loads(result.final_output))
    check_received(reports, call_ids=["call-0", "call-1"], thread_id="thread-s")

"""The fleet as a PydanticAI toolset, in PydanticAI's own agent loop (``make test-frameworks``).

Each run is driven by PydanticAI's ``FunctionModel`` (no network) and calls the real test
tool processes over a real broker.
"""

import asyncio
import json
import pathlib
from collections.abc import AsyncIterable, AsyncIterator, Callable
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

from pydantic_ai import (  # noqa: E402 - the framework is imported only when its tests run
    Agent,
    BinaryContent,
    BinaryImage,
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    RunContext,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.messages import AgentStreamEvent  # noqa: E402
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel  # noqa: E402

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
from argentic_tools.integrations.pydantic_ai import (  # noqa: E402
    FleetChunkEvent,
    FleetLogEvent,
    FleetProgressEvent,
    FleetToolset,
)
from tests.support.brokers import Mosquitto  # noqa: E402

pytestmark = pytest.mark.anyio


Step = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


def call(name: str, arguments: dict[str, Any], call_id: str) -> Step:
    """A step: the model calls ``name``."""
    return lambda _messages, _info: ModelResponse(
        parts=[ToolCallPart(name, json.dumps(arguments), tool_call_id=call_id)]
    )


def answer(text: str) -> Step:
    """A step: the model answers ``text``."""
    return lambda _messages, _info: ModelResponse(parts=[TextPart(text)])


def last_returns(messages: list[ModelMessage]) -> list[Any]:
    """What the last request brought the model: tool returns and retry prompts."""
    request = messages[-1]
    assert isinstance(request, ModelRequest)
    return [p for p in request.parts if isinstance(p, ToolReturnPart | RetryPromptPart)]


def repeat_return(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
    """A step: the final answer is the last tool return's content, as text."""
    part = last_returns(messages)[-1]
    content = part.content
    return ModelResponse(
        parts=[TextPart(content if isinstance(content, str) else json.dumps(content))]
    )


def noting(returned: list[Any], then: Step) -> Step:
    """A step that keeps what the tools returned, then does ``then``."""

    def step(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned.extend(part.content for part in last_returns(messages))
        return then(messages, info)

    return step


class Script:
    """A ``FunctionModel`` answering each request with the next step, streamed or not."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.infos: list[AgentInfo] = []

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.infos.append(info)
        return self.steps.pop(0)(messages, info)

    async def stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | dict[int, DeltaToolCall]]:
        response = self.respond(messages, info)
        for index, part in enumerate(response.parts):
            if isinstance(part, TextPart):
                yield part.content
            elif isinstance(part, ToolCallPart):
                delta = DeltaToolCall(
                    part.tool_name, part.args_as_json_str(), tool_call_id=part.tool_call_id
                )
                yield {index: delta}

    def model(self) -> FunctionModel:
        return FunctionModel(self.respond, stream_function=self.stream)


class Events:
    """An ``event_stream_handler`` keeping the run's events."""

    def __init__(self) -> None:
        self.seen: list[AgentStreamEvent] = []
        self.progressed = anyio.Event()

    async def __call__(
        self, _ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]
    ) -> None:
        async for event in events:
            self.seen.append(event)
            if isinstance(event, FleetProgressEvent):
                self.progressed.set()

    def of(self, kind: type[Any]) -> list[Any]:
        return [event for event in self.seen if isinstance(event, kind)]


async def test_a_plain_call_reaches_the_tool_and_its_result_the_model(fleet: ToolManager) -> None:
    script = Script(call("echo", {"message": "hello"}, "c1"), repeat_return)
    agent = Agent(script.model(), toolsets=[FleetToolset(fleet)])
    with anyio.fail_after(30):
        result = await agent.run("say hello")
    assert result.output == "hello"
    assert "echo" in [tool.name for tool in script.infos[0].function_tools]


async def test_a_null_for_an_optional_parameter_means_its_default(fleet: ToolManager) -> None:
    arguments = {"count": 1, "interval": 0, "label": None, "directory": None}
    script = Script(call("steps", arguments, "c1"), repeat_return)
    agent = Agent(script.model(), toolsets=[FleetToolset(fleet)])
    with anyio.fail_after(30):
        result = await agent.run("one step")
    assert result.output == "1"


async def test_invalid_arguments_ask_the_model_to_retry_and_a_failure_is_final(
    fleet: ToolManager,
) -> None:
    seen: list[list[Any]] = []

    def keep(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(last_returns(messages))
        return call("fail", {"reason": "no disk"}, "c3")(messages, info)

    def finish(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(last_returns(messages))
        return ModelResponse(parts=[TextPart("gave up")])

    def again(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(last_returns(messages))
        return call("echo", {"message": "ok"}, "c2")(messages, info)

    script = Script(call("echo", {"message": 42}, "c1"), again, keep, finish)
    agent = Agent(script.model(), toolsets=[FleetToolset(fleet)])
    with anyio.fail_after(30):
        result = await agent.run("echo")
    assert result.output == "gave up"
    (retry,), (echoed,), (failed,) = seen
    # A ModelRetry: the model sees the error with an instruction to fix its call.
    assert isinstance(retry, ToolReturnPart) and retry.outcome == "retried"
    problem = str(retry.content)
    assert "Tool 'echo': invalid arguments" in problem and "$.message" in problem
    assert isinstance(echoed, ToolReturnPart) and echoed.content == "ok"
    assert isinstance(failed, ToolReturnPart) and failed.outcome == "failed"
    assert "failing on purpose: no disk" in str(failed.content)


async def test_the_thread_and_trace_come_from_the_run(fleet: ToolManager) -> None:
    script = Script(call("whoami", {}, "call-7"), repeat_return)
    agent = Agent(script.model(), toolsets=[FleetToolset(fleet, user_id="u1")])
    with anyio.fail_after(30):
        result = await agent.run("who", conversation_id="thread-9")
    seen = json.loads(result.output)
    assert seen["thread_id"] == "thread-9"
    assert seen["trace_id"] == result.run_id
    assert seen["call_id"] == "call-7"
    assert seen["user_id"] == "u1"


async def test_the_toolset_reads_the_registry_and_policy_at_every_step(fleet: ToolManager) -> None:
    policy = ThreadToolPolicy()
    fleet.policy = policy

    def narrow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        policy.set_enabled_tools("t1", ["echo", "count"])
        return call("count", {}, "c1")(messages, info)

    script = Script(narrow, lambda _m, _i: ModelResponse(parts=[TextPart("done")]))
    agent = Agent(script.model(), toolsets=[FleetToolset(fleet)])
    with anyio.fail_after(30):
        await agent.run("hi", conversation_id="t1")
    first, second = ([tool.name for tool in info.function_tools] for info in script.infos)
    assert {"whoami", "steps", "count"} <= set(first)
    assert sorted(second) == ["count", "echo"]


async def test_progress_chunks_and_logs_reach_the_runs_event_stream(fleet: ToolManager) -> None:
    script = Script(
        call("steps", {"count": 3, "interval": 0.01}, "p1"),
        call("chunks", {"count": 3, "interval": 0}, "s1"),
        call("chatty", {"count": 2}, "l1"),
        lambda _m, _i: ModelResponse(parts=[TextPart("done")]),
    )
    events = Events()
    records: list[tuple[str | None, str]] = []

    def on_log(record: LogRecord, call_ref: CallRef) -> None:
        records.append((call_ref.call_id, record.message))

    agent = Agent(script.model(), toolsets=[FleetToolset(fleet, on_log=on_log)])
    with anyio.fail_after(30):
        await agent.run("work", event_stream_handler=events)
    progress = events.of(FleetProgressEvent)
    # The tool's reports are rate-limited: the last one always comes, in order.
    assert (progress[-1].progress, progress[-1].total) == (3.0, 3.0)
    assert {event.tool_call_id for event in progress} == {"p1"}
    assert {event.tool_name for event in progress} == {"steps"}
    chunks = events.of(FleetChunkEvent)
    assert [(event.tool_call_id, event.chunk) for event in chunks] == [
        ("s1", {"i": 0}),
        ("s1", {"i": 1}),
        ("s1", {"i": 2}),
    ]
    logs = events.of(FleetLogEvent)
    assert [(e.tool_call_id, e.message, e.value) for e in logs] == [
        ("l1", "record 0", {"i": 0}),
        ("l1", "record 1", {"i": 1}),
    ]
    assert records == [("l1", "record 0"), ("l1", "record 1")]


async def test_a_run_cancelled_mid_call_stops_the_tool(
    fleet: ToolManager, tmp_path: pathlib.Path
) -> None:
    arguments = {"count": 500, "interval": 0.05, "label": "run", "directory": str(tmp_path)}
    events = Events()
    agent = Agent(Script(call("steps", arguments, "c1")).model(), toolsets=[FleetToolset(fleet)])
    run = asyncio.create_task(agent.run("work", event_stream_handler=events))
    with anyio.fail_after(30):
        await events.progressed.wait()
    run.cancel()
    with anyio.fail_after(30), pytest.raises(asyncio.CancelledError):
        await run
    await wait_for_files(tmp_path, ["run.stopped"])
    assert fleet.pending_calls == 0


async def test_an_image_result_reaches_the_model_as_a_binary_image(fleet: ToolManager) -> None:
    returned: list[Any] = []

    script = Script(
        call("tiny_image", {}, "c1"),
        noting(returned, call("mixed", {}, "c2")),
        noting(returned, answer("seen")),
    )
    agent = Agent(script.model(), toolsets=[FleetToolset(fleet)])
    with anyio.fail_after(30):
        await agent.run("show")
    single, mixed = returned
    assert isinstance(single, BinaryImage) and single.media_type == "image/png"
    assert single.data.startswith(b"\x89PNG")
    assert [type(part).__name__ for part in mixed] == ["str", "BinaryImage", "str", "str"]
    assert mixed[2] == "[resource link chart.csv: file:///chart.csv]"
    assert json.loads(mixed[3]) == {"rows": 3}


async def test_a_tool_that_needs_approval_is_deferred_until_approved(fleet: ToolManager) -> None:
    script = Script(call("count", {}, "c1"), repeat_return)
    toolset = FleetToolset(fleet, needs_approval={"count"})
    agent = Agent(script.model(), toolsets=[toolset], output_type=[str, DeferredToolRequests])
    with anyio.fail_after(30):
        first = await agent.run("count")
        assert isinstance(first.output, DeferredToolRequests)
        assert [part.tool_name for part in first.output.approvals] == ["count"]
        approved = DeferredToolResults(approvals={"c1": True})
        resumed = await agent.run(
            message_history=first.all_messages(), deferred_tool_results=approved
        )
    assert isinstance(resumed.output, str) and int(resumed.output) >= 1


@tool
def late_joiner() -> str:
    """A tool that joins the fleet after the agent was built."""
    return "joined"


async def test_the_toolset_follows_tools_joining_and_leaving(
    mosquitto: Mosquitto, fleet_topics: Topics, fleet: ToolManager
) -> None:
    script = Script(answer("before"), call("late_joiner", {}, "c1"), repeat_return, answer("after"))
    agent = Agent(script.model(), toolsets=[FleetToolset(fleet)])
    with anyio.fail_after(30):
        await agent.run("before")
        async with ToolService(mosquitto.url, [late_joiner], topics=fleet_topics):
            info = await fleet.wait_for_tool("late_joiner", timeout=15)
            joined = await agent.run("call the new one")
        await fleet.wait_for_tool_removed(info.id, timeout=15)
        await agent.run("after")
    before, during, _, after = ([t.name for t in i.function_tools] for i in script.infos)
    assert "late_joiner" not in before and "late_joiner" not in after
    assert "late_joiner" in during
    assert joined.output == "joined"


async def test_a_tools_question_is_answered_by_the_on_elicit_handler(fleet: ToolManager) -> None:
    asked: list[tuple[str, str | None]] = []

    def on_elicit(request: ElicitRequest, call_ref: CallRef) -> dict[str, Any]:
        asked.append((request.message, call_ref.call_id))
        return {"action": "accept", "content": {"name": "Ann"}}

    script = Script(call("ask_name", {"label": "x"}, "c1"), repeat_return)
    agent = Agent(script.model(), toolsets=[FleetToolset(fleet, on_elicit=on_elicit)])
    with anyio.fail_after(30):
        result = await agent.run("who")
    assert asked == [("Who are you? (x)", "c1")]
    assert json.loads(result.output) == {"action": "accept", "data": {"name": "Ann"}, "label": "x"}


async def test_audio_and_a_binary_resource_reach_the_model_as_binary_content(
    fleet: ToolManager,
) -> None:
    returned: list[Any] = []

    script = Script(
        call("blob", {}, "c1"),
        noting(returned, call("beep", {}, "c2")),
        noting(returned, answer("heard")),
    )
    agent = Agent(script.model(), toolsets=[FleetToolset(fleet, thread_id="t")])
    with anyio.fail_after(30):
        await agent.run("files")
    blob, beep = returned
    assert isinstance(blob, BinaryContent) and blob.data == bytes(range(16))
    assert blob.media_type == "application/octet-stream"
    assert isinstance(beep, BinaryContent) and beep.media_type == "audio/wav"


async def test_every_setting_reaches_the_tool(fleet: ToolManager) -> None:
    reports = []
    for n, settings in enumerate(every_setting()):
        script = Script(call("received", {}, f"call-{n}"), repeat_return)
        toolset = FleetToolset(fleet, thread_id="thread-s", **settings)
        agent = Agent(script.model(), toolsets=[toolset])
        with anyio.fail_after(30):
            result = await agent.run("report")
        reports.append(json.loads(result.output))
    check_received(reports, call_ids=["call-0", "call-1"], thread_id="thread-s")

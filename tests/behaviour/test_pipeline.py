"""The agent-side pipeline: ART-style batches, thread policy, observations, typed errors,
output validation, tags and LLM exports, all over a real broker."""

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import aiomqtt
import anyio
import pytest
from pydantic import Field

from argentic_tools import (
    CallContext,
    InMemoryRecorder,
    InputValidationError,
    JsonLinesRecorder,
    Observation,
    OutputValidationError,
    TaskErrorMessage,
    ThreadToolPolicy,
    ToolCallError,
    ToolError,
    ToolExecutionError,
    ToolManager,
    ToolNotEnabledError,
    ToolNotFoundError,
    ToolOfflineError,
    ToolResult,
    ToolsError,
    ToolService,
    ToolTimeoutError,
    Topics,
    tool,
)
from tests.support.brokers import Mosquitto
from tests.support.clients import manager_for, messager_for
from tests.support.observers import Rendezvous, spy_on_calls
from tests.support.processes import ToolProcess, ready

pytestmark = pytest.mark.anyio


@tool(tags=["math"])
def add(a: Annotated[int, Field(description="First addend")], b: int = 1) -> int:
    """Add two integers."""
    return a + b


@tool(tags=["math", "broken"])
def liar(a: int) -> int:
    """Claims to return an integer but returns text."""
    return "not an int"  # type: ignore[return-value]


@tool(tags=["text"])
def refuse(text: str) -> int:
    """Always refuses; declares an int output."""
    raise ToolError(f"refusing {text!r}")


@tool
async def nap(seconds: float) -> float:
    """Sleep, then return the seconds slept."""
    await anyio.sleep(seconds)
    return seconds


TOOLS = [add, liar, refuse, nap]


@dataclass
class ParsedToolCall:
    call_id: str
    tool_name: str
    arguments: Any


@pytest.fixture
async def recorder() -> InMemoryRecorder:
    return InMemoryRecorder()


@pytest.fixture
async def policy() -> ThreadToolPolicy:
    return ThreadToolPolicy()


@pytest.fixture
async def agent(
    mosquitto: Mosquitto, topics: Topics, recorder: InMemoryRecorder, policy: ThreadToolPolicy
) -> AsyncIterator[ToolManager]:
    # The manager first: it confirms each registration, so the service starts at once
    # instead of waiting out its confirmation timeout.
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, policy=policy, recorder=recorder) as manager,
        ToolService(mosquitto.url, TOOLS, topics=topics),
    ):
        for item in ("add", "liar", "refuse", "nap"):
            await manager.wait_for_tool(item, timeout=10)
        yield manager


async def test_execute_tools_runs_parsed_calls_concurrently_and_keeps_call_ids(
    agent: ToolManager, mosquitto: Mosquitto, topics: Topics
) -> None:
    # Each `meet` call returns only once all three run at the same time: executed one
    # after another, the first would never return and the bound below would fail the test.
    rendezvous = Rendezvous(parties=3)
    calls = [
        ParsedToolCall("c1", "meet", {}),
        {"call_id": "c2", "tool_name": "add", "arguments": {"a": 2}},
        {"callId": "c3", "toolName": "nope", "arguments": {}},
        ParsedToolCall("c4", "meet", {}),
        ParsedToolCall("c5", "meet", {}),
    ]
    async with ToolService(mosquitto.url, [rendezvous.tool], topics=topics, grace_period=1):
        await agent.wait_for_tool("meet", timeout=10)
        with anyio.fail_after(20):
            results = await agent.execute_tools(calls, thread_id="th", trace_id="tr")
    assert [r.call_id for r in results] == ["c1", "c2", "c3", "c4", "c5"]
    assert [r.tool_name for r in results] == ["meet", "add", "nope", "meet", "meet"]
    assert [results[i].result for i in (0, 3, 4)] == [3, 3, 3]
    assert results[1].result == 3
    assert isinstance(results[2], TaskErrorMessage)
    assert all(r.duration_ms is not None for r in results)


async def test_thread_policy_blocks_calls_before_publishing_and_filters_listings(
    agent: ToolManager, policy: ThreadToolPolicy, mosquitto: Mosquitto, topics: Topics
) -> None:
    policy.set_enabled_tools("restricted", ["add"])
    listed = {t.name for t in agent.get_available_tools(enabled_for_thread_id="restricted")}
    assert listed == {"add"}
    assert {t.name for t in agent.get_available_tools()} == {"add", "liar", "refuse", "nap"}
    nap_id = agent.tools_by_name["nap"]["id"]
    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as spy:
        await spy.subscribe(topics.call(nap_id), qos=1)
        blocked = await agent.execute_tool(
            "nap", {"seconds": 0}, context=CallContext(thread_id="restricted")
        )
        assert isinstance(blocked, TaskErrorMessage)
        assert blocked.error_code == "not_enabled"
        assert "not enabled for thread 'restricted'" in blocked.error
        allowed = await agent.execute_tool(
            "nap", {"seconds": 0}, context=CallContext(thread_id="other")
        )
        assert allowed.ok
        with anyio.fail_after(5):
            first = await anext(aiter(spy.messages))
        assert json.loads(first.payload)["task_id"] == allowed.task_id
    exported = agent.export_tools("openai", thread_id="restricted")
    assert [e["function"]["name"] for e in exported] == ["add"]


async def test_listing_filters_by_tags(agent: ToolManager) -> None:
    assert {t.name for t in agent.get_available_tools(tags=["math"])} == {"add", "liar"}
    assert {t.name for t in agent.get_available_tools(tags=["math", "broken"])} == {"liar"}
    assert agent.get_available_tools(tags=["nothing"]) == []


async def test_every_attempt_produces_one_observation(
    agent: ToolManager, recorder: InMemoryRecorder, policy: ThreadToolPolicy
) -> None:
    policy.set_enabled_tools("locked", [])
    context = CallContext(thread_id="t9", trace_id="trace-1")
    await agent.execute_tool("add", {"a": 1}, call_id="ok", context=context)
    await agent.execute_tool("refuse", {"text": "x"}, call_id="tool-error", context=context)
    await agent.execute_tool("nap", {"seconds": 5}, call_id="slow", timeout=0.1, context=context)
    await agent.execute_tool("ghost", {}, call_id="missing", context=context)
    await agent.execute_tool(
        "add", {"a": 1}, call_id="locked", context=CallContext(thread_id="locked")
    )
    await agent.execute_tool("add", {"a": "one"}, call_id="invalid", context=context)
    await agent.flush_observations()
    by_call = {o.call_id: o for o in recorder.observations}
    assert set(by_call) == {"ok", "tool-error", "slow", "missing", "locked", "invalid"}
    assert by_call["ok"].status == "success"
    assert by_call["ok"].result == 2
    assert by_call["ok"].thread_id == "t9"
    assert by_call["ok"].trace_id == "trace-1"
    assert by_call["ok"].arguments == {"a": 1}
    assert by_call["tool-error"].error_code == "execution_error"
    assert by_call["slow"].status == "timeout"
    assert by_call["missing"].error_code == "not_found"
    assert by_call["locked"].error_code == "not_enabled"
    assert by_call["invalid"].error_code == "invalid_arguments"
    assert all(o.duration_ms >= 0 for o in recorder.observations)


async def test_offline_tool_is_observed_too(
    mosquitto: Mosquitto, topics: Topics, prefix: str
) -> None:
    recorder = InMemoryRecorder()
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, recorder=recorder) as manager,
    ):
        with ToolProcess("tests.support.tool_proc", mosquitto.url, prefix) as proc:
            await ready(manager)
            sleep_id = manager.tools_by_name["sleep"]["id"]
            async with spy_on_calls(mosquitto.url, topics, sleep_id) as spy:
                pending = asyncio.create_task(
                    manager.execute_tool("sleep", {"seconds": 60}, call_id="doomed")
                )
                # The task reached the tool's topic before the tool dies.
                assert await spy.wait_for_calls(1) == ["doomed"]
            proc.kill()
            with anyio.fail_after(20):
                result = await pending
        await manager.flush_observations()
    assert isinstance(result, TaskErrorMessage)
    assert result.error_code == "tool_offline"
    assert [o.error_code for o in recorder.observations if o.call_id == "doomed"] == [
        "tool_offline"
    ]


async def test_jsonlines_recorder_writes_one_line_per_call(
    mosquitto: Mosquitto, topics: Topics, tmp_path: Path
) -> None:
    path = tmp_path / "observations.jsonl"
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, recorder=JsonLinesRecorder(path)) as manager,
        ToolService(mosquitto.url, [add], topics=topics),
    ):
        await manager.wait_for_tool("add", timeout=10)
        await manager.execute_tool("add", {"a": 5}, call_id="a")
        await manager.execute_tool("add", {"a": "x"}, call_id="b")
        await manager.flush_observations()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(line["call_id"], line["status"]) for line in lines] == [
        ("a", "success"),
        ("b", "failed"),
    ]
    assert lines[0]["result"] == 6


class StuckRecorder:
    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.seen: list[Observation] = []

    async def record(self, observation: Observation) -> None:
        self.seen.append(observation)
        await self.release.wait()


class BrokenRecorder:
    def record(self, observation: Observation) -> None:
        raise RuntimeError("recorder is down")


@pytest.mark.parametrize("make", [StuckRecorder, BrokenRecorder])
async def test_slow_or_failing_recorder_never_delays_or_breaks_calls(
    mosquitto: Mosquitto, topics: Topics, make: type
) -> None:
    rec = make()
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, recorder=rec) as manager,
        ToolService(mosquitto.url, [add], topics=topics),
    ):
        await manager.wait_for_tool("add", timeout=10)
        with anyio.fail_after(5):
            results = [await manager.execute_tool("add", {"a": i}) for i in range(20)]
        assert [r.result for r in results] == [i + 1 for i in range(20)]
        if isinstance(rec, StuckRecorder):
            rec.release.set()


async def test_output_that_violates_the_declared_schema_becomes_an_output_error(
    agent: ToolManager,
) -> None:
    result = await agent.execute_tool("liar", {"a": 1})
    assert isinstance(result, TaskErrorMessage)
    assert result.error_code == "invalid_output"
    assert "output" in result.error
    assert result.details[0]["path"] == "$"
    with pytest.raises(OutputValidationError):
        result.raise_for_status()


async def test_a_tools_own_error_is_never_replaced_by_output_validation(
    agent: ToolManager,
) -> None:
    result = await agent.execute_tool("refuse", {"text": "no"})
    assert isinstance(result, TaskErrorMessage)
    assert result.error_code == "execution_error"
    assert "refusing 'no'" in result.error


async def test_results_raise_the_matching_typed_exception(
    agent: ToolManager, policy: ThreadToolPolicy
) -> None:
    policy.set_enabled_tools("none", [])
    cases: list[tuple[ToolResult, type[ToolCallError]]] = [
        (await agent.execute_tool("ghost", {}), ToolNotFoundError),
        (
            await agent.execute_tool("add", {"a": 1}, context=CallContext(thread_id="none")),
            ToolNotEnabledError,
        ),
        (await agent.execute_tool("add", {"a": "x"}), InputValidationError),
        (await agent.execute_tool("refuse", {"text": "t"}), ToolExecutionError),
        (await agent.execute_tool("nap", {"seconds": 3}, timeout=0.05), ToolTimeoutError),
    ]
    for result, expected in cases:
        with pytest.raises(expected) as caught:
            result.raise_for_status()
        assert caught.value.tool_name == result.tool_name
    assert issubclass(ToolOfflineError, ToolsError)
    ok = await agent.execute_tool("add", {"a": 1})
    assert ok.raise_for_status() is ok


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"a": "seven"}, "$.a: 'seven' is not of type 'integer'"),
        ({"a": 1, "c": 2}, "'c' was unexpected"),
        ({}, "'a' is a required property"),
    ],
)
async def test_messy_llm_arguments_get_messages_that_say_what_to_fix(
    agent: ToolManager, arguments: dict[str, Any], fragment: str
) -> None:
    result = await agent.execute_tool("add", arguments)
    assert isinstance(result, TaskErrorMessage)
    assert fragment in result.error
    assert result.error.startswith("Tool 'add': invalid arguments")


async def test_unknown_tool_error_lists_what_exists(agent: ToolManager) -> None:
    result = await agent.execute_tool("ad", {"a": 1})
    assert isinstance(result, TaskErrorMessage)
    assert result.error == "Tool 'ad' not found. Did you mean 'add'?"
    assert set(result.details["available"]) >= {"add", "nap"}
    assert result.details["suggestion"] == "add"


async def test_exports_match_each_providers_documented_shape(agent: ToolManager) -> None:
    openai = {e["function"]["name"]: e for e in agent.export_tools("openai")}
    add_fn = openai["add"]
    assert add_fn["type"] == "function"
    assert set(add_fn["function"]) == {"name", "description", "parameters", "strict"}
    params = add_fn["function"]["parameters"]
    # Strict mode: every property required, no extra properties, optional ones nullable.
    assert params["required"] == ["a", "b"]
    assert params["additionalProperties"] is False
    assert params["properties"]["b"]["type"] == ["integer", "null"]
    assert "default" not in params["properties"]["b"]
    assert add_fn["function"]["description"] == "Add two integers."
    non_strict = agent.export_tools("openai", strict=False)
    assert all("strict" not in e["function"] for e in non_strict)

    anthropic = {e["name"]: e for e in agent.export_tools("anthropic")}
    assert set(anthropic["add"]) == {"name", "description", "input_schema"}
    assert anthropic["add"]["input_schema"]["required"] == ["a"]

    mcp = {e["name"]: e for e in agent.export_tools("mcp")}
    assert {"name", "description", "inputSchema"} <= set(mcp["add"])
    assert mcp["add"]["inputSchema"]["type"] == "object"
    assert "outputSchema" not in mcp["add"]  # an integer output is not an MCP object schema

    prompt = agent.export_tools("prompt")
    assert prompt == json.loads(agent.generate_tool_descriptions_for_prompt())
    assert {"tool_id", "name", "description", "parameters"} == set(prompt[0])
    with pytest.raises(ValueError, match="unknown export format"):
        agent.export_tools("gemini")  # type: ignore[arg-type]  # deliberately not a format


async def test_closing_the_manager_does_not_wait_forever_for_a_stuck_recorder(
    mosquitto: Mosquitto, topics: Topics
) -> None:
    stuck = StuckRecorder()
    async with messager_for(mosquitto.url, topics) as messager:
        manager = manager_for(messager, topics, recorder=stuck, recorder_close_timeout=0.1)
        await manager.async_init()
        async with ToolService(mosquitto.url, [add], topics=topics):
            await manager.wait_for_tool("add", timeout=10)
            assert (await manager.execute_tool("add", {"a": 1})).ok
            with anyio.fail_after(15):
                await manager.aclose()  # the recorder never returns; close still ends
    assert len(stuck.seen) == 1

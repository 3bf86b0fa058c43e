"""Calling tools through a real mosquitto: results, errors, timeouts and batches."""

import asyncio
import gc
import json
from typing import Any

import aiomqtt
import anyio
import pytest

from argentic_tools import (
    CallContext,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    TaskStatus,
    ThreadToolPolicy,
    ToolCallRequest,
    ToolManager,
    ToolRegisteredMessage,
    ToolResult,
    ToolService,
    ToolUnavailableError,
    Topics,
    parse_message,
    tool,
)
from argentic_tools._agent.calls.batches import freezing
from argentic_tools._agent.calls.running import delivery
from argentic_tools._agent.fleet import settling
from tests.support.brokers import Mosquitto
from tests.support.clients import manager_for, messager_for
from tests.support.observers import Rendezvous, spy_on_calls
from tests.support.processes import ToolProcess, ready

pytestmark = pytest.mark.anyio


async def test_execute_tool_returns_the_tools_result(
    manager: ToolManager, tool_process: ToolProcess
) -> None:
    await ready(manager)
    result = await manager.execute_tool("echo", {"message": "hello"})
    assert isinstance(result, TaskResultMessage)
    assert result.status == TaskStatus.SUCCESS
    assert result.result == "hello"
    assert result.tool_name == "echo"
    assert result.duration_ms is not None and result.duration_ms > 0


async def test_execute_tool_by_id_works_like_by_name(
    manager: ToolManager, tool_process: ToolProcess
) -> None:
    info = await manager.wait_for_tool("echo", timeout=15)
    result = await manager.execute_tool(info.id, {"message": "by id"})
    assert result.result == "by id"
    assert manager.tools_by_id[info.id]["name"] == "echo"
    assert manager.tools_by_name["echo"]["id"] == info.id
    assert json.loads(manager.tools_by_id[info.id]["parameters"])["required"] == ["message"]


async def test_a_call_made_as_the_manager_starts_finds_the_running_tool(
    manager: ToolManager,
    tool_process: ToolProcess,
    mosquitto: Mosquitto,
    topics: Topics,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await ready(manager, ("echo",))  # the tool is up before the new manager starts
    # The window is 0.5 s; a loaded test machine can take longer to answer the
    # announcement. The call still returns as soon as the tool has registered again, and
    # with a window of 0 it ends not_found.
    monkeypatch.setattr(settling, "STARTUP_SETTLE_SECONDS", 5.0)
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics) as fresh,
    ):
        # No wait_for_tool: the manager waits (up to STARTUP_SETTLE_SECONDS) for the
        # fleet to answer its announcement before it would answer not_found.
        with anyio.fail_after(15):
            result = await fresh.execute_tool("echo", {"message": "first"}, timeout=10)
    assert result.ok, result
    assert result.result == "first"


async def test_execute_tool_with_unknown_name_returns_not_found_error(
    manager: ToolManager,
) -> None:
    result = await manager.execute_tool("nonexistent_tool", {})
    assert isinstance(result, TaskErrorMessage)
    assert result.error == "Tool 'nonexistent_tool' not found."
    assert result.error_code == "not_found"


async def test_invalid_arguments_give_an_error_before_anything_is_published(
    mosquitto: Mosquitto, manager: ToolManager, tool_process: ToolProcess, topics: Topics
) -> None:
    info = await manager.wait_for_tool("echo", timeout=15)
    async with spy_on_calls(mosquitto.url, topics, info.id) as spy:
        bad = await manager.execute_tool("echo", {"message": 42, "extra": True})
        assert isinstance(bad, TaskErrorMessage)
        assert bad.error_code == "invalid_arguments"
        assert "Tool 'echo'" in bad.error
        assert "$.message" in bad.error
        assert {p["path"] for p in bad.details} >= {"$.message", "$"}
        good = await manager.execute_tool("echo", {"message": "ok"})
        assert good.ok
        # The first task the tool topic ever saw is the valid call: the invalid one never left.
        [first_task] = await spy.wait_for_tasks(1, timeout=5)
        assert first_task.task_id == good.task_id


async def test_text_utf8_cannot_carry_is_refused_and_never_sent(
    mosquitto: Mosquitto, manager: ToolManager, tool_process: ToolProcess, topics: Topics
) -> None:
    info = await manager.wait_for_tool("echo", timeout=15)
    async with spy_on_calls(mosquitto.url, topics, info.id) as spy:
        # A lone surrogate: a Python str, but no UTF-8 (so no JSON on the wire) for it.
        in_arguments = await manager.execute_tool("echo", {"message": "half \ud800"})
        assert isinstance(in_arguments, TaskErrorMessage)
        assert in_arguments.error_code == "invalid_arguments"
        assert in_arguments.error == (
            "Tool 'echo': invalid arguments: $.message is a string that UTF-8 cannot "
            "carry (a lone surrogate)"
        )
        in_a_key = await manager.execute_tool("echo", {"message": "ok", "\udfff": 1})
        assert isinstance(in_a_key, TaskErrorMessage)
        assert "$ has a key that UTF-8 cannot carry" in in_a_key.error
        in_context = await manager.execute_tool(
            "echo", {"message": "ok"}, context=CallContext(thread_id="\ud800")
        )
        assert isinstance(in_context, TaskErrorMessage)
        assert in_context.error_code == "invalid_arguments"
        assert in_context.error == (
            "Tool 'echo': the context's thread_id is a string that UTF-8 cannot carry "
            "(a lone surrogate)"
        )
        good = await manager.execute_tool("echo", {"message": "ok"})
        assert good.ok, good
        [first_task] = await spy.wait_for_tasks(1, timeout=5)
        assert first_task.task_id == good.task_id
    assert manager.pending_calls == 0


class _Disguised(str):
    """Text that claims to be plain ASCII: only the JSON encoder finds it out."""

    def isascii(self) -> bool:
        return True

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        return b"?"


async def test_a_task_that_cannot_be_encoded_when_its_turn_comes_ends_the_call(
    mosquitto: Mosquitto, manager: ToolManager, tool_process: ToolProcess, topics: Topics
) -> None:
    info = await manager.wait_for_tool("echo", timeout=15)
    async with spy_on_calls(mosquitto.url, topics, info.id) as spy:
        result = await manager.execute_tool("echo", {"message": _Disguised("\ud800")})
        assert isinstance(result, TaskErrorMessage)
        assert result.error_code == "invalid_arguments"
        assert result.error.startswith(
            "Tool 'echo': invalid arguments: they cannot be sent as JSON: "
        )
        good = await manager.execute_tool("echo", {"message": "ok"})
        assert good.ok, good
        [first_task] = await spy.wait_for_tasks(1, timeout=5)
        assert first_task.task_id == good.task_id
    assert manager.pending_calls == 0


class _SessionContext(CallContext):
    """An application's own context, with a field that is not the protocol's."""

    session_secret: str = "not for the tool"


async def test_a_context_subclass_sends_only_the_protocols_fields(
    mosquitto: Mosquitto, manager: ToolManager, tool_process: ToolProcess, topics: Topics
) -> None:
    info = await manager.wait_for_tool("echo", timeout=15)
    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as spy:
        await spy.subscribe(topics.call(info.id), qos=1)
        context = _SessionContext(thread_id="t-1")
        result = await manager.execute_tool("echo", {"message": "hi"}, context=context)
        assert result.ok, result
        with anyio.fail_after(5):
            sent = await anext(aiter(spy.messages))
    assert isinstance(sent.payload, bytes)
    assert json.loads(sent.payload)["context"] == {"thread_id": "t-1"}


async def test_arguments_given_as_a_json_string_are_refused_with_a_fix(
    manager: ToolManager, tool_process: ToolProcess
) -> None:
    await ready(manager)
    result = await manager.execute_tool("echo", '{"message": "hi"}')  # type: ignore[arg-type]
    assert isinstance(result, TaskErrorMessage)
    assert "must be a JSON object" in result.error
    assert "not a string" in result.error


async def test_slow_tool_times_out_with_timeout_status(
    mosquitto: Mosquitto, manager: ToolManager, tool_process: ToolProcess, topics: Topics
) -> None:
    await ready(manager)
    sleep_id = manager.tools_by_name["sleep"]["id"]
    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as spy:
        # The tool answers on the caller's own reply topic, below its response topic.
        await spy.subscribe(topics.response(sleep_id) + "/#", qos=1)
        result = await manager.execute_tool("sleep", {"seconds": 30}, timeout=0.3)
        assert isinstance(result, TaskErrorMessage)
        assert result.status == TaskStatus.TIMEOUT
        assert "Tool 'sleep' timed out" in result.error
        assert manager.pending_calls == 0
        # The manager tells the tool to stop: the tool answers that it cancelled the task
        # (so it is not left sleeping for the rest of its 30 s).
        with anyio.fail_after(10):
            message = await anext(aiter(spy.messages))
        assert message.topic.value == topics.reply(sleep_id, manager.messager.client_id)
        cancelled = parse_message(message.payload)
        assert isinstance(cancelled, TaskErrorMessage)
        assert cancelled.task_id == result.task_id
        assert cancelled.status == TaskStatus.CANCELLED


async def test_timeout_of_zero_means_zero_not_the_default(
    manager: ToolManager, tool_process: ToolProcess
) -> None:
    await ready(manager)
    result = await manager.execute_tool("echo", {"message": "x"}, timeout=0)
    assert result.status == TaskStatus.TIMEOUT


async def test_tool_error_comes_back_as_failed_with_its_message_and_no_traceback(
    manager: ToolManager, tool_process: ToolProcess
) -> None:
    await ready(manager)
    result = await manager.execute_tool("fail", {"reason": "disk full"})
    assert isinstance(result, TaskErrorMessage)
    assert result.status == TaskStatus.FAILED
    assert "failing on purpose: disk full" in result.error
    assert "Tool 'fail'" in result.error
    assert result.traceback is None


async def test_unexpected_exception_is_reported_with_its_type(
    manager: ToolManager, tool_process: ToolProcess
) -> None:
    await ready(manager)
    result = await manager.execute_tool("crash", {})
    assert isinstance(result, TaskErrorMessage)
    assert "ZeroDivisionError: division by zero" in result.error


async def test_unserialisable_result_fails_clearly_and_the_connection_survives(
    manager: ToolManager, tool_process: ToolProcess
) -> None:
    await ready(manager)
    result = await manager.execute_tool("unserialisable", {})
    assert isinstance(result, TaskErrorMessage)
    assert "not JSON-serialisable" in result.error
    assert (await manager.execute_tool("echo", {"message": "still here"})).result == "still here"


async def test_get_tool_results_runs_concurrently_and_keeps_request_order(
    mosquitto: Mosquitto, manager: ToolManager, tool_process: ToolProcess, topics: Topics
) -> None:
    # Each `meet` call returns only once all ten run at the same time: executed one after
    # another, the first would never return and the bound below would fail the test.
    rendezvous = Rendezvous(parties=10)
    requests = [ToolCallRequest(tool_id="meet", arguments={}) for _ in range(10)]
    requests.insert(3, ToolCallRequest(tool_id="echo", arguments={"message": "third"}))
    requests.append(ToolCallRequest(tool_id="missing", arguments={}))
    async with ToolService(mosquitto.url, [rendezvous.tool], topics=topics, grace_period=1):
        await ready(manager, ("echo", "meet"))
        with anyio.fail_after(20):
            results, any_errors = await manager.get_tool_results(requests)
    assert [r.tool_name for r in results] == [
        "meet",
        "meet",
        "meet",
        "echo",
        *["meet"] * 7,
        "missing",
    ]
    assert [r.result for r in results if r.tool_name == "meet"] == [10] * 10
    assert results[3].result == "third"
    assert any_errors is True


async def test_tasks_wait_their_turn_to_be_published_and_none_is_lost(
    mosquitto: Mosquitto, tool_process: ToolProcess, topics: Topics, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delivery, "SENDING", 4)
    inside = peak = 0
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics) as manager,
    ):
        await ready(manager)
        publish = messager.publish

        async def counting(topic: str, payload: Any, *args: Any, **kwargs: Any) -> None:
            nonlocal inside, peak
            if not topic.startswith(topics.call_base + "/"):
                return await publish(topic, payload, *args, **kwargs)
            inside += 1
            peak = max(peak, inside)
            try:
                await publish(topic, payload, *args, **kwargs)
            finally:
                inside -= 1

        monkeypatch.setattr(messager, "publish", counting)
        requests = [
            ToolCallRequest(tool_id="echo", arguments={"message": f"m{n}"}) for n in range(200)
        ]
        with anyio.fail_after(60):
            results, failed = await manager.get_tool_results(requests)
    assert not failed
    assert [r.result for r in results] == [f"m{n}" for n in range(200)]
    assert peak == 4  # the turn came to four tasks at a time, never more


async def test_a_call_cancelled_while_it_waits_for_its_turn_is_never_sent(
    mosquitto: Mosquitto, tool_process: ToolProcess, topics: Topics, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delivery, "SENDING", 1)
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics) as manager,
    ):
        info = await manager.wait_for_tool("echo", timeout=15)
        async with aiomqtt.Client("127.0.0.1", mosquitto.port) as spy:
            await spy.subscribe(topics.call(info.id), qos=1)
            results: dict[str, Any] = {}

            async def call(n: int) -> None:
                results[f"c{n}"] = await manager.execute_tool(
                    "echo", {"message": f"m{n}"}, task_id_override=f"c{n}"
                )

            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:
                    for n in range(30):
                        group.start_soon(call, n)
                    # The last call is queued behind 29 others, one at a time.
                    while not await manager.cancel("c29", reason="changed my mind"):
                        await anyio.lowlevel.checkpoint()
                # Everything the manager sent is in front of this marker.
                await messager.publish(topics.call(info.id), b"marker")
                tasks = []
                async for message in spy.messages:
                    if message.payload == b"marker":
                        break
                    parsed = parse_message(message.payload)
                    if type(parsed) is TaskMessage:
                        tasks.append(parsed.arguments)
    assert results["c29"].status == TaskStatus.CANCELLED
    assert [results[f"c{n}"].result for n in range(29)] == [f"m{n}" for n in range(29)]
    assert len(tasks) == 29 and {"message": "m29"} not in tasks


async def test_each_batch_request_carries_its_own_timeout(
    manager: ToolManager, tool_process: ToolProcess
) -> None:
    await ready(manager)
    results, any_errors = await manager.get_tool_results(
        [
            ToolCallRequest(tool_id="sleep", arguments={"seconds": 5}, timeout=0.2),
            ToolCallRequest(tool_id="sleep", arguments={"seconds": 0}, timeout=10, call_id="fast"),
        ]
    )
    assert results[0].status == TaskStatus.TIMEOUT
    # call_id is the caller's label; the task id is the manager's own, unique per call.
    assert results[1].ok and results[1].call_id == "fast" and results[1].task_id != "fast"
    assert any_errors


class AuditedManager(ToolManager):
    """A subclass that wraps every call, as an application adding its own audit would."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.audited: list[tuple[str, str | None, float | None]] = []

    async def execute_tool(
        self,
        tool_name_or_id: str,
        arguments: dict[str, Any],
        task_id_override: str | None = None,
        timeout: float | None = None,
        **options: Any,
    ) -> ToolResult:
        self.audited.append((tool_name_or_id, options.get("call_id"), timeout))
        return await super().execute_tool(
            tool_name_or_id, arguments, task_id_override, timeout, **options
        )


async def test_a_subclass_execute_tool_sees_batched_calls_too(
    mosquitto: Mosquitto, tool_process: ToolProcess, topics: Topics
) -> None:
    async with (
        messager_for(mosquitto.url, topics) as messager,
        AuditedManager(messager, topics=topics) as manager,
    ):
        await ready(manager)
        results, _ = await manager.get_tool_results(
            [ToolCallRequest(tool_id="echo", arguments={"message": "a"}, call_id="a", timeout=9)]
        )
        parsed = [{"call_id": "b", "tool_name": "echo", "arguments": {"message": "b"}}]
        results += await manager.execute_tools(parsed, timeout=8)
    assert [r.result for r in results] == ["a", "b"]
    assert manager.audited == [("echo", "a", 9), ("echo", "b", 8)]


async def test_execute_tool_takes_thread_trace_and_user_ids_as_execute_tools_does(
    manager: ToolManager, tool_process: ToolProcess
) -> None:
    await ready(manager)
    result = await manager.execute_tool(
        "whoami",
        {},
        context=CallContext(thread_id="ignored", user_id="u-3"),
        thread_id="t-1",
        trace_id="tr-9",
    )
    assert result.ok
    assert result.result["thread_id"] == "t-1"  # the id given beside the context wins
    assert result.result["trace_id"] == "tr-9"
    assert result.result["user_id"] == "u-3"
    policy = ThreadToolPolicy()
    policy.set_enabled_tools("t-2", ["echo"])
    manager.policy = policy
    refused = await manager.execute_tool("whoami", {}, thread_id="t-2")
    assert isinstance(refused, TaskErrorMessage) and refused.error_code == "not_enabled"


class RenamingManager(ToolManager):
    """An override that names the label and timeout its own way, passing them on by position."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.labels: list[str | None] = []

    async def execute_tool(  # type: ignore[override]  # renamed on purpose: the test's point
        self,
        name: str,
        args: dict[str, Any],
        label: str | None = None,
        wait: float | None = None,
        **options: Any,
    ) -> ToolResult:
        self.labels.append(label)
        return await super().execute_tool(name, args, label, wait, **options)


async def test_a_subclass_may_name_the_label_and_timeout_its_own_way(
    mosquitto: Mosquitto, tool_process: ToolProcess, topics: Topics
) -> None:
    async with (
        messager_for(mosquitto.url, topics) as messager,
        RenamingManager(messager, topics=topics) as manager,
    ):
        await ready(manager)
        results, any_failed = await manager.get_tool_results(
            [ToolCallRequest(tool_id="echo", arguments={"message": "a"}, timeout=9)]
        )
        parsed = [{"call_id": "b", "tool_name": "echo", "arguments": {"message": "b"}}]
        results += await manager.execute_tools(parsed, timeout=8)
    assert [r.result for r in results] == ["a", "b"] and not any_failed
    assert manager.labels == [None, None]


@pytest.mark.parametrize("manager_class", [ToolManager, AuditedManager])
async def test_a_batch_with_a_bad_idle_timeout_raises_before_any_call_is_sent(
    mosquitto: Mosquitto,
    tool_process: ToolProcess,
    topics: Topics,
    manager_class: type[ToolManager],
) -> None:
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_class(messager, topics=topics) as manager,
    ):
        await ready(manager)
        echo_id = manager.tools_by_name["echo"]["id"]
        async with spy_on_calls(mosquitto.url, topics, echo_id) as spy:
            good = ToolCallRequest(tool_id="echo", arguments={"message": "a"}, call_id="good")
            bad = ToolCallRequest(tool_id="echo", arguments={"message": "b"}, idle_timeout=0)
            with pytest.raises(ValueError, match="idle_timeout must be a positive number"):
                await manager.get_tool_results([good, bad])
            parsed = [{"call_id": "c", "tool_name": "echo", "arguments": {"message": "c"}}]
            with pytest.raises(ValueError, match="max_duration must be a positive number"):
                await manager.execute_tools(parsed, max_duration=-1)
            after = await manager.execute_tool("echo", {"message": "d"}, call_id="after")
            assert after.ok
            # The first task on the call topic is the one made after both refusals.
            assert await spy.wait_for_calls(1) == ["after"]
    if isinstance(manager, AuditedManager):
        assert [call_id for _, call_id, _ in manager.audited] == ["after"]


async def test_context_and_call_id_reach_the_tool(
    manager: ToolManager, tool_process: ToolProcess
) -> None:
    await ready(manager)
    context = CallContext(thread_id="t-1", trace_id="tr-9", user_id="u-3")
    result = await manager.execute_tool("whoami", {}, call_id="call-7", context=context)
    assert result.ok
    assert result.call_id == "call-7"
    assert result.result["thread_id"] == "t-1"
    assert result.result["trace_id"] == "tr-9"
    assert result.result["user_id"] == "u-3"
    assert result.result["call_id"] == "call-7"


async def test_registration_is_confirmed_on_the_status_topic(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics, prefix: str
) -> None:
    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as spy:
        await spy.subscribe(topics.status + "/#", qos=1)
        async with ToolProcess("tests.support.tool_proc", mosquitto.url, prefix):
            info = await manager.wait_for_tool("echo", timeout=15)
            with anyio.fail_after(10):
                async for message in spy.messages:
                    parsed = parse_message(message.payload)
                    if isinstance(parsed, ToolRegisteredMessage) and parsed.tool_name == "echo":
                        break
            assert isinstance(parsed, ToolRegisteredMessage)
            assert parsed.tool_id == info.id
            assert parsed.source == manager.messager.client_id
            # Addressed to the registering process alone, on its own status topic.
            assert message.topic.value == f"{topics.status}/{info.source}"


async def test_prompt_description_lists_each_tool_with_its_schema(
    manager: ToolManager, tool_process: ToolProcess
) -> None:
    await ready(manager)
    described = json.loads(manager.generate_tool_descriptions_for_prompt())
    assert manager.get_tools_description() == manager.generate_tool_descriptions_for_prompt()
    by_name = {d["name"]: d for d in described}
    assert set(by_name) == set(manager.get_tool_names())
    assert set(by_name) >= {"echo", "sleep", "fail", "whoami"}
    assert by_name["echo"]["description"] == "Return the message unchanged."
    assert by_name["echo"]["parameters"]["properties"]["message"]["type"] == "string"
    assert by_name["echo"]["tool_id"] == manager.tools_by_name["echo"]["id"]


async def test_clean_shutdown_unregisters_every_tool(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str
) -> None:
    async with ToolProcess("tests.support.tool_proc", mosquitto.url, prefix) as proc:
        info = await manager.wait_for_tool("echo", timeout=15)
        assert await proc.stop() == 0
        await manager.wait_for_tool_removed(info.id, timeout=10)
    assert "echo" not in manager.get_tool_names()
    assert info.id not in manager.tools_by_id


async def test_set_log_level_accepts_names(manager: ToolManager) -> None:
    manager.set_log_level("DEBUG")
    assert manager.logger.level == 10
    manager.set_log_level("warning")
    assert manager.logger.level == 30
    with pytest.raises(ValueError, match="unknown log level"):
        manager.set_log_level("LOUD")


async def test_waiting_for_a_missing_tool_says_what_is_registered_and_what_was_meant(
    manager: ToolManager, mosquitto: Mosquitto, topics: Topics
) -> None:
    @tool
    def multiply(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    async with ToolService(mosquitto.url, [multiply], topics=topics):
        await manager.wait_for_tool("multiply", timeout=10)
        with pytest.raises(ToolUnavailableError) as caught:
            await manager.wait_for_tool("multply", timeout=0.05)
        assert isinstance(caught.value, TimeoutError)
        text = str(caught.value)
        assert text.startswith(f"Tool 'multply' is not registered on {mosquitto.url}")
        assert "Did you mean 'multiply'? Registered: multiply." in text
        result = await manager.execute_tool("Multiply", {"a": 2, "b": 3})
        assert isinstance(result, TaskErrorMessage)
        assert result.error == "Tool 'Multiply' not found. Did you mean 'multiply'?"


async def test_a_big_batch_is_started_while_the_event_loop_keeps_turning(
    manager: ToolManager, tool_process: ToolProcess
) -> None:
    await ready(manager, ("sleep",))
    calls = 3_000
    requests = [
        ToolCallRequest(tool_id="sleep", arguments={"seconds": 600}, timeout=900)
        for _ in range(calls)
    ]
    seen: list[int] = []

    async def probe() -> None:
        # One look per turn of the event loop, until every call of the batch is pending.
        while not seen or seen[-1] < calls:
            seen.append(manager.pending_calls)
            await asyncio.sleep(0)

    watching = asyncio.ensure_future(probe())
    batch = asyncio.ensure_future(manager.get_tool_results(requests))
    with anyio.fail_after(60):
        await watching
    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await batch
    # Other work ran between the batch's first calls and its last: it was not started
    # (checked, validated, sent) in one turn of the loop.
    assert any(0 < pending < calls for pending in seen)
    assert manager.pending_calls == 0
    # The tool stops the sleeps it had started: on a loaded machine, a process stopped
    # before the cancellations reached it gave them its whole grace period (10 s).
    with anyio.fail_after(60):
        while any(
            entry.in_flight
            for answer in await manager.fleet_stats(wait=10)
            for entry in answer.tools
        ):
            await anyio.lowlevel.checkpoint()


@pytest.mark.parametrize(
    ("gc_freeze", "calls", "freezes"),
    [
        (False, 400, False),
        (True, 400, True),  # more than a slice (128), which a manager that asks freezes after
        (None, 400, False),  # the default: small batches never
        (None, freezing.AUTO_CALLS, True),  # the default: big batches do
    ],
)
async def test_a_batch_freezes_the_garbage_collector_only_when_big_or_asked(
    mosquitto: Mosquitto,
    topics: Topics,
    tool_process: ToolProcess,
    gc_freeze: bool | None,
    calls: int,
    freezes: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requests = [ToolCallRequest(tool_id="sleep", arguments={"seconds": 0.01}) for _ in range(calls)]
    # Every freeze the batch makes, with the count of frozen objects right after it. (A
    # probe looking at each turn of the event loop instead kept a core busy all along,
    # and slowed the batch it watched by half on two cores.)
    frozen: list[int] = []
    freeze = gc.freeze

    def counted_freeze() -> None:
        freeze()
        frozen.append(gc.get_freeze_count())

    monkeypatch.setattr(gc, "freeze", counted_freeze)
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, default_timeout=60, gc_freeze=gc_freeze) as manager,
    ):
        await ready(manager, ("sleep",))
        with anyio.fail_after(60):
            results, failed = await manager.get_tool_results(requests)
        assert not failed and len(results) == calls
        # The batch's objects are out of the full collections while it runs (and never
        # for a small batch unless asked); collectable again once it has ended.
        assert (bool(frozen) and max(frozen) > 0) if freezes else frozen == []
        assert gc.get_freeze_count() == 0

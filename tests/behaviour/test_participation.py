"""The caller takes part: a real tool process elicits, samples, lists roots and logs, and a
real manager answers through its handlers (or cannot, and the tool hears so at once)."""

import asyncio
import pathlib
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest

from argentic_tools import (
    CallRef,
    ElicitRequest,
    ElicitResult,
    InMemoryRecorder,
    LogRecord,
    Root,
    SampleRequest,
    SampleResult,
    TaskErrorMessage,
    TaskResultMessage,
    ToolAnswerMessage,
    ToolCallRequest,
    ToolManager,
    ToolResult,
    Topics,
)
from argentic_tools._tools.call.asking import LOG_BURST
from tests.support import asking_proc
from tests.support.brokers import Mosquitto
from tests.support.clients import manager_with_tools, messager_for
from tests.support.processes import ToolProcess, serving

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def asking_prefix() -> str:
    return f"a{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def asking_process(mosquitto: Mosquitto, asking_prefix: str) -> Iterator[ToolProcess]:
    """One process serving ``tests.support.asking_proc`` for the whole module."""
    with serving(
        "tests.support.asking_proc", mosquitto.url, asking_prefix, asking_proc.NAMES
    ) as process:
        yield process


@pytest.fixture
async def asking_manager(
    mosquitto: Mosquitto, asking_prefix: str, asking_process: ToolProcess
) -> AsyncIterator[ToolManager]:
    topics = Topics.with_prefix(asking_prefix)
    async with manager_with_tools(
        mosquitto.url, topics, asking_proc.NAMES, default_timeout=10
    ) as manager:
        yield manager


def answering(action: str, **content: Any) -> Any:
    """An ``on_elicit`` handler that answers every question the same way."""

    def on_elicit(request: ElicitRequest, call: CallRef) -> ElicitResult:
        return ElicitResult(action=action, content=content or None)

    return on_elicit


def ok(result: ToolResult) -> Any:
    assert isinstance(result, TaskResultMessage), result
    return result.result


def failed(result: ToolResult) -> TaskErrorMessage:
    assert isinstance(result, TaskErrorMessage), result
    return result


async def test_a_question_is_answered_accepted_declined_or_cancelled(
    asking_manager: ToolManager,
) -> None:
    seen: list[tuple[str, str, dict[str, Any]]] = []

    async def on_elicit(request: ElicitRequest, call: CallRef) -> ElicitResult:
        seen.append((request.message, call.tool_name, request.requested_schema))
        return ElicitResult(action="accept", content={"name": "Ada", "age": 36})

    accepted = ok(
        await asking_manager.execute_tool("ask_name", {"label": "x"}, on_elicit=on_elicit)
    )
    assert accepted == {"action": "accept", "data": {"name": "Ada", "age": 36}, "label": "x"}
    message, tool_name, schema = seen[0]
    assert message == "Who are you? (x)" and tool_name == "ask_name"
    assert schema["properties"]["name"]["type"] == "string"

    for action in ("decline", "cancel"):
        result = ok(await asking_manager.execute_tool("ask_name", {}, on_elicit=answering(action)))
        assert result["action"] == action and result["data"] == {}


async def test_several_questions_of_one_call_and_of_concurrent_calls_never_cross(
    asking_manager: ToolManager,
) -> None:
    async def echo_question(request: ElicitRequest, call: CallRef) -> dict[str, Any]:
        await anyio.sleep(0.01 * (hash(request.message) % 5))  # answers come out of order
        return {"action": "accept", "content": {"value": request.message}}

    labels = [f"call{i}" for i in range(12)]
    results = await asyncio.gather(
        *(
            asking_manager.execute_tool(
                "ask_many", {"label": label, "together": 3}, on_elicit=echo_question
            )
            for label in labels
        )
    )
    for label, result in zip(labels, results, strict=True):
        assert ok(result) == [f"{label}:0", f"{label}:1", f"{label}:2", f"{label}:last"]


async def test_the_callers_model_completes_and_the_roots_are_named(
    asking_manager: ToolManager,
) -> None:
    asked: list[SampleRequest] = []

    def on_sample(request: SampleRequest, call: CallRef) -> SampleResult:
        asked.append(request)
        return SampleResult(content="short", model="test-model", stop_reason="endTurn")

    summary = ok(
        await asking_manager.execute_tool("summarize", {"text": "a long text"}, on_sample=on_sample)
    )
    assert summary == {"text": "short", "model": "test-model", "stop": "endTurn"}
    request = asked[0]
    assert request.max_tokens == 50 and request.system_prompt == "You summarise."
    assert request.messages[0].role == "user"
    assert getattr(request.messages[0].content, "text", None) == "Summarise: a long text"

    roots = ok(
        await asking_manager.execute_tool(
            "where", {}, on_roots=lambda call: [Root(uri="file:///work", name="work")]
        )
    )
    assert roots == ["file:///work"]


async def test_log_records_arrive_in_order_and_the_rate_limit_says_what_it_left_out(
    asking_manager: ToolManager,
) -> None:
    records: list[LogRecord] = []
    result = await asking_manager.execute_tool(
        "chatty", {"count": 5}, on_log=lambda record, call: records.append(record)
    )
    assert ok(result) == 5
    assert [r.message for r in records] == [f"record {i}" for i in range(5)]
    assert records[0].data == {"i": 0} and records[0].logger == "chatty"
    assert records[0].level == "info"

    flood: list[LogRecord] = []

    async def on_log(record: LogRecord, call: CallRef) -> None:
        flood.append(record)

    count = 3 * LOG_BURST
    assert ok(await asking_manager.execute_tool("chatty", {"count": count}, on_log=on_log)) == count
    sent = [r for r in flood if r.logger == "chatty"]
    notices = [r for r in flood if r.logger == "argentic_tools"]
    assert LOG_BURST <= len(sent) < count
    # Every record is accounted for: sent, or counted in the notice of the next one sent
    # (those left out after the last record sent are not reported: nothing follows them).
    left_out = sum(int(n.message.split()[0]) for n in notices)
    indices = [r.data["i"] for r in sent]
    assert indices == sorted(indices)
    assert len(sent) + left_out == indices[-1] + 1


async def test_a_caller_without_handlers_makes_the_tool_fail_at_once_with_one_result(
    asking_manager: ToolManager, tmp_path: pathlib.Path
) -> None:
    # The call's timeout is long: the tool must not wait for an answer that cannot come.
    result = failed(
        await asking_manager.execute_tool(
            "ask_name", {"label": "nobody", "directory": str(tmp_path)}, timeout=60
        )
    )
    assert result.error_code == "ask_not_supported" and result.details == {"kind": "elicit"}
    assert "ask_name" in result.error and "cannot answer questions" in result.error
    assert (tmp_path / "nobody.refused").exists()
    # A tool that checks first goes on without asking.
    assert ok(await asking_manager.execute_tool("polite", {})) == "nobody to ask"
    assert ok(await asking_manager.execute_tool("polite", {}, on_elicit=answering("decline"))) == (
        "asked: decline"
    )
    # Only the kinds given: a sampling handler does not answer questions.
    only_sample = failed(
        await asking_manager.execute_tool(
            "ask_name", {}, on_sample=lambda r, c: {"content": "x", "model": "m"}
        )
    )
    assert "cannot answer questions" in only_sample.error


async def test_a_failing_handler_or_a_wrong_answer_reaches_the_tool_as_its_error(
    asking_manager: ToolManager,
) -> None:
    def broken(request: ElicitRequest, call: CallRef) -> ElicitResult:
        raise RuntimeError("the person walked away")

    result = failed(await asking_manager.execute_tool("ask_name", {}, on_elicit=broken))
    assert "RuntimeError: the person walked away" in result.error
    assert "ask_name" in result.error
    # An answer that does not match the question's schema is refused in the tool.
    refused = ok(
        await asking_manager.execute_tool(
            "ask_badly", {}, on_elicit=answering("accept", n="not a number")
        )
    )
    assert refused.startswith("refused: ") and "schema" in refused


async def test_waiting_for_an_answer_does_not_run_the_idle_timeout_but_max_duration_does(
    asking_manager: ToolManager, tmp_path: pathlib.Path
) -> None:
    async def slow_person(request: ElicitRequest, call: CallRef) -> ElicitResult:
        await anyio.sleep(1.0)  # longer than the idle timeout, twice over
        return ElicitResult(action="accept", content={"name": "Bo"})

    patient = ok(
        await asking_manager.execute_tool(
            "ask_name", {"label": "slow"}, idle_timeout=0.4, on_elicit=slow_person
        )
    )
    assert patient["data"] == {"name": "Bo"}

    never = anyio.Event()
    cancelled: list[str] = []

    async def absent_person(request: ElicitRequest, call: CallRef) -> ElicitResult:
        try:
            await never.wait()
        except anyio.get_cancelled_exc_class():
            cancelled.append(call.task_id)
            raise
        raise AssertionError("unreachable")

    ended = failed(
        await asking_manager.execute_tool(
            "ask_name",
            {"label": "absent", "directory": str(tmp_path)},
            "my-label",
            idle_timeout=0.3,
            max_duration=1.5,
            on_elicit=absent_person,
        )
    )
    assert ended.error_code == "timeout"
    with anyio.fail_after(10):
        while not cancelled:  # the handler is cancelled with the call
            await anyio.sleep(0.01)
        while not (tmp_path / "absent.stopped").exists():  # the tool stopped waiting
            await anyio.sleep(0.02)
    assert cancelled == ["my-label"]
    # The tool was heard from while the person did not answer: it is not suspected.
    assert asking_manager._liveness.suspects == []


async def test_a_sync_tool_asks_samples_lists_roots_and_logs_blocking(
    asking_manager: ToolManager,
) -> None:
    records: list[str] = []
    result = await asking_manager.execute_tool(
        "sync_asker",
        {"text": "hello"},
        on_elicit=answering("accept", go=True),
        on_sample=lambda r, c: SampleResult(content="hi back", model="m"),
        on_roots=lambda c: {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]},
        on_log=lambda record, call: records.append(f"{record.level}:{record.message}"),
    )
    assert ok(result) == {"go": True, "text": "hi back", "roots": 2}
    assert records == ["notice:starting", "info:done"]


async def test_manager_defaults_batches_and_streams_take_part_and_the_exchange_is_recorded(
    mosquitto: Mosquitto, asking_prefix: str, asking_process: ToolProcess
) -> None:
    recorder = InMemoryRecorder()
    topics = Topics.with_prefix(asking_prefix)
    async with manager_with_tools(
        mosquitto.url,
        topics,
        asking_proc.NAMES,
        recorder=recorder,
        on_elicit=answering("accept", name="Default"),
    ) as manager:
        single = ok(await manager.execute_tool("ask_name", {}))
        assert single["data"] == {"name": "Default"}
        # A call's own handler wins over the manager's.
        own = ok(await manager.execute_tool("ask_name", {}, on_elicit=answering("decline")))
        assert own["action"] == "decline"

        batch = await manager.execute_tools(
            [
                {"tool_name": "ask_name", "arguments": {"label": "b1"}, "call_id": "c1"},
                {"tool_name": "chatty", "arguments": {"count": 2}, "call_id": "c2"},
            ],
            on_log=lambda record, call: logged.append((call.call_id, record.message)),
        )
        logged: list[tuple[str | None, str]] = []
        assert ok(batch[0])["data"] == {"name": "Default"}
        results, any_failed = await manager.get_tool_results(
            [ToolCallRequest(tool_id="ask_name")], on_elicit=answering("cancel")
        )
        assert not any_failed and ok(results[0])["action"] == "cancel"

        stream = manager.stream_tool("ask_name", {"label": "s"})
        async with stream:
            chunks = [chunk async for chunk in stream]
        assert chunks == [] and stream.result is not None
        assert ok(stream.result)["data"] == {"name": "Default"}

        await manager.flush_observations()
    exchanges = [o.exchanges for o in recorder.observations if o.tool_name == "ask_name"]
    first = exchanges[0]
    assert first is not None and first[0]["kind"] == "elicit"
    assert first[0]["request"]["message"] == "Who are you? ()"
    assert first[0]["answer"] == {"action": "accept", "content": {"name": "Default"}}
    chatty = next(o for o in recorder.observations if o.tool_name == "chatty")
    assert chatty.exchanges is not None
    assert [e["record"]["message"] for e in chatty.exchanges] == ["record 0", "record 1"]


async def test_a_forged_answer_from_another_client_is_ignored(
    mosquitto: Mosquitto, asking_manager: ToolManager, asking_prefix: str
) -> None:
    topics = Topics.with_prefix(asking_prefix)
    asked = anyio.Event()
    release = anyio.Event()
    questions: list[CallRef] = []

    async def on_elicit(request: ElicitRequest, call: CallRef) -> ElicitResult:
        questions.append(call)
        asked.set()
        await release.wait()
        return ElicitResult(action="accept", content={"name": "real"})

    async with anyio.create_task_group() as group, messager_for(mosquitto.url, topics) as forger:

        async def call() -> None:
            result = await asking_manager.execute_tool("ask_name", {}, on_elicit=on_elicit)
            outcomes.append(result)

        outcomes: list[ToolResult] = []
        group.start_soon(call)
        with anyio.fail_after(10):
            await asked.wait()
        pending = next(iter(asking_manager._calls.pending.values()))  # the wire task id
        forged = ToolAnswerMessage(
            source="forger",
            task_id=pending.task_id,
            tool_id=pending.tool_id,
            ask_id="1",
            result={"action": "accept", "content": {"name": "forged"}},
        )
        await forger.publish(topics.call(pending.tool_id), forged)  # out before the real one
        release.set()
    assert ok(outcomes[0])["data"] == {"name": "real"}


async def test_a_tool_killed_while_its_question_waits_ends_the_call_offline_once(
    mosquitto: Mosquitto, tmp_path: pathlib.Path
) -> None:
    prefix = f"k{uuid.uuid4().hex[:10]}"
    topics = Topics.with_prefix(prefix)
    asked = anyio.Event()
    cancelled: list[bool] = []

    async def waiting_person(request: ElicitRequest, call: CallRef) -> ElicitResult:
        asked.set()
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise
        raise AssertionError("unreachable")

    async with (
        ToolProcess("tests.support.asking_proc", mosquitto.url, prefix) as process,
        manager_with_tools(mosquitto.url, topics, ["ask_name"]) as manager,
    ):
        results: list[ToolResult] = []

        async def call() -> None:
            results.append(
                await manager.execute_tool("ask_name", {}, timeout=60, on_elicit=waiting_person)
            )

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            with anyio.fail_after(15):
                await asked.wait()
            process.kill()
        with anyio.fail_after(10):
            while not cancelled:
                await anyio.sleep(0.01)
    assert len(results) == 1
    offline = failed(results[0])
    assert offline.error_code == "tool_offline" and "ask_name" in offline.error

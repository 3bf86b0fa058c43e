"""ToolService in this process, called through a real mosquitto by a ToolManager.

Each test builds its tools inline, so what the tool does (block a thread, wait on an
event, count concurrent runs) is visible next to the assertion that relies on it.
"""

import dataclasses
import functools
import logging
import threading
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, ConfigDict

from argentic_tools import (
    BaseTool,
    CallContext,
    RegistrationError,
    TaskErrorMessage,
    TaskResultMessage,
    ToolContext,
    ToolManager,
    ToolResult,
    ToolService,
    Topics,
    tool,
)
from tests.support.brokers import Mosquitto
from tests.support.clients import manager_for, messager_for

pytestmark = pytest.mark.anyio


def info_named(manager: ToolManager, name: str) -> Any:
    return next((info for info in manager.get_available_tools() if info.name == name), None)


async def wait_until(predicate: Any, timeout: float = 10) -> None:
    """Poll a condition that no event reports, under a bound."""
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.01)


@tool
def echo(message: str) -> str:
    """Return the message unchanged."""
    return message


# -- sync and async tools --------------------------------------------------------------------


async def test_sync_tool_runs_in_a_worker_thread_so_an_async_tool_can_release_it(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    started = threading.Event()
    release = threading.Event()

    @tool
    def blocking() -> dict[str, bool]:
        """Block this thread until `unblock` is called."""
        started.set()
        released = release.wait(timeout=10)
        return {
            "released": released,
            "worker_thread": threading.current_thread() is not threading.main_thread(),
        }

    @tool
    async def unblock() -> bool:
        """Release `blocking`."""
        release.set()
        return True

    results: dict[str, ToolResult] = {}

    async def call(name: str) -> None:
        results[name] = await manager.execute_tool(name, {}, timeout=15)

    async with ToolService(mosquitto.url, [blocking, unblock], topics=topics, grace_period=1):
        await manager.wait_for_tool("blocking", timeout=10)
        await manager.wait_for_tool("unblock", timeout=10)
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "blocking")
                assert await anyio.to_thread.run_sync(started.wait, 10)
                # `blocking` holds its thread now; this call is served only if the loop is free.
                await call("unblock")
    assert results["unblock"].ok and results["unblock"].result is True
    assert results["blocking"].ok
    assert results["blocking"].result == {"released": True, "worker_thread": True}


# -- concurrency limits ----------------------------------------------------------------------


async def test_max_concurrency_caps_simultaneous_runs_of_a_tool_and_every_call_succeeds(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    active = 0
    peak = 0
    two_running = anyio.Event()
    gate = anyio.Event()

    @tool(max_concurrency=2)
    async def limited(n: int) -> int:
        """Hold until the gate opens, counting how many run at once."""
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        if active == 2:
            two_running.set()
        try:
            await gate.wait()
        finally:
            active -= 1
        return n

    @tool
    async def ping() -> str:
        """Answer at once."""
        return "pong"

    results: dict[int, ToolResult] = {}

    async def call(n: int) -> None:
        results[n] = await manager.execute_tool("limited", {"n": n}, timeout=20)

    async with ToolService(
        mosquitto.url, [limited, ping], topics=topics, grace_period=1
    ) as service:
        await manager.wait_for_tool("limited", timeout=10)
        await manager.wait_for_tool("ping", timeout=10)
        (endpoint,) = [e for e in service.endpoints if e.tool.name == "limited"]
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                for n in range(6):
                    tg.start_soon(call, n)
                await two_running.wait()
                # The manager never hands a tool more tasks than its advertised limit: the
                # other four wait in the manager, not in the broker or the tool.
                await wait_until(lambda: manager.pending_calls == 6)
                # Another tool of the same service is not held up by this tool's limit, and
                # this round trip lets any task sent too many reach the tool.
                pong = await manager.execute_tool("ping", {}, timeout=10)
                assert pong.ok and pong.result == "pong"
                assert endpoint.in_flight == 2
                assert (active, peak) == (2, 2)
                gate.set()
    assert peak == 2
    assert sorted(results) == list(range(6))
    assert all(isinstance(r, TaskResultMessage) and r.ok for r in results.values())
    assert [results[n].result for n in range(6)] == list(range(6))


async def test_concurrency_limit_is_announced_in_registration_metadata(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    @tool(max_concurrency=2)
    def narrow() -> None:
        """At most two at once."""

    async with ToolService(mosquitto.url, [narrow, echo], topics=topics, max_concurrency=5):
        await manager.wait_for_tool("narrow", timeout=10)
        await manager.wait_for_tool("echo", timeout=10)
        # A tool's own limit wins; the service's limit applies to the others.
        assert info_named(manager, "narrow").metadata == {"max_concurrency": 2}
        assert info_named(manager, "echo").metadata == {"max_concurrency": 5}


# -- failures stay with the failing tool -----------------------------------------------------


async def test_failing_or_unserialisable_tool_does_not_affect_other_tools_in_the_service(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    @tool
    def broken(x: int) -> int:
        """Always raise."""
        raise ValueError(f"bad x {x}")

    @tool
    async def broken_async() -> int:
        """Always raise, asynchronously."""
        raise RuntimeError("async boom")

    @tool
    def unserialisable() -> Any:
        """Return something JSON cannot carry."""
        return {"when": object()}

    @tool
    def liar() -> int:
        """Return a value its own output schema forbids."""
        return "not an int"  # type: ignore[return-value]

    tools = [broken, broken_async, unserialisable, liar, echo]
    async with ToolService(mosquitto.url, tools, topics=topics):
        for name in ("broken", "broken_async", "unserialisable", "liar", "echo"):
            await manager.wait_for_tool(name, timeout=10)
        with anyio.fail_after(20):
            for round_number in range(2):  # the failures repeat; nothing got stuck
                failed = await manager.execute_tool("broken", {"x": 3})
                assert isinstance(failed, TaskErrorMessage)
                assert failed.error_code == "execution_error"
                assert failed.error == "Tool 'broken' failed: ValueError: bad x 3"
                assert failed.traceback is None

                failed_async = await manager.execute_tool("broken_async", {})
                assert isinstance(failed_async, TaskErrorMessage)
                assert failed_async.error == "Tool 'broken_async' failed: RuntimeError: async boom"

                odd = await manager.execute_tool("unserialisable", {})
                assert isinstance(odd, TaskErrorMessage)
                assert odd.error_code == "execution_error"
                assert "Tool 'unserialisable' failed" in odd.error
                assert "not JSON-serialisable" in odd.error

                lie = await manager.execute_tool("liar", {})
                assert isinstance(lie, TaskErrorMessage)
                assert lie.error_code == "invalid_output"
                assert "output schema" in lie.error

                fine = await manager.execute_tool("echo", {"message": f"round {round_number}"})
                assert fine.ok and fine.result == f"round {round_number}"


async def test_a_tool_a_manager_refuses_is_left_out_and_the_services_other_tools_serve(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics, caplog: pytest.LogCaptureFixture
) -> None:
    @tool(name="echo")
    def loud_echo(message: str, volume: int) -> str:
        """Return the message, louder (echo's name, another schema)."""
        return message * volume

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async with ToolService(mosquitto.url, [echo], topics=topics):
        first = await manager.wait_for_tool("echo", timeout=10)
        with caplog.at_level(logging.WARNING, logger="argentic_tools.service"):
            async with ToolService(mosquitto.url, [loud_echo, add], topics=topics) as service:
                assert list(service.refused) == ["echo"]
                assert "different schema" in service.refused["echo"]
                assert [e.tool_name for e in service.endpoints] == ["add"]
                await manager.wait_for_tool("add", timeout=10)
                assert (await manager.execute_tool("add", {"a": 2, "b": 3})).result == 5
                echo_result = await manager.execute_tool("echo", {"message": "hi"})
                assert echo_result.result == "hi"
                assert [i["id"] for i in manager.tools_by_id.values() if i["name"] == "echo"] == [
                    first.id
                ]
    (line,) = [r.getMessage() for r in caplog.records if "is not served" in r.getMessage()]
    assert line.startswith("tool 'echo' is not served: its registration was refused: ")
    assert "different schema" in line


async def test_a_service_whose_every_tool_is_refused_raises_naming_each(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    @tool(name="echo")
    def loud_echo(message: str, volume: int) -> str:
        """Return the message, louder (echo's name, another schema)."""
        return message * volume

    @tool(name="add")
    def add_text(a: str, b: str) -> str:
        """Join two strings (add's name, another schema)."""
        return a + b

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async with ToolService(mosquitto.url, [echo, add], topics=topics):
        await manager.wait_for_tool("echo", timeout=10)
        await manager.wait_for_tool("add", timeout=10)
        with pytest.raises(RegistrationError) as refused:
            async with ToolService(mosquitto.url, [loud_echo, add_text], topics=topics):
                pass
        assert "tool 'echo': " in str(refused.value)
        assert "tool 'add': " in str(refused.value)
        assert str(refused.value).count("different schema") == 2


async def test_debug_service_sends_the_traceback_of_a_failing_tool(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    @tool
    def broken() -> int:
        """Always raise."""
        raise ValueError("with a trace")

    async with ToolService(mosquitto.url, [broken], topics=topics, debug=True):
        await manager.wait_for_tool("broken", timeout=10)
        with anyio.fail_after(10):
            failed = await manager.execute_tool("broken", {})
    assert isinstance(failed, TaskErrorMessage)
    assert failed.traceback is not None
    assert "ValueError: with a trace" in failed.traceback
    assert "Traceback (most recent call last)" in failed.traceback


# -- the call's context ------------------------------------------------------------------------


async def test_tool_context_reaches_a_tool_function_through_its_context_parameter(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    @tool
    def whoami(label: str, context: ToolContext) -> dict[str, Any]:
        """Report the call's context."""
        return dataclasses.asdict(context) | {"label": label}

    async with ToolService(mosquitto.url, [whoami], topics=topics):
        info = await manager.wait_for_tool("whoami", timeout=10)
        with anyio.fail_after(10):
            result = await manager.execute_tool(
                "whoami",
                {"label": "x"},
                call_id="call-1",
                context=CallContext(thread_id="thread-1", trace_id="trace-1", user_id="user-1"),
            )
            bare = await manager.execute_tool("whoami", {"label": "y"})
    assert result.ok, result
    seen = result.result
    assert isinstance(seen["deadline"], float)
    assert seen == {
        "label": "x",
        "task_id": result.task_id,
        "tool_id": info.id,
        "tool_name": "whoami",
        "call_id": "call-1",
        "thread_id": "thread-1",
        "trace_id": "trace-1",
        "user_id": "user-1",
        "deadline": seen["deadline"],
        "source": manager.messager.client_id,
    }
    assert bare.ok
    assert (bare.result["call_id"], bare.result["thread_id"], bare.result["user_id"]) == (
        None,
        None,
        None,
    )
    assert bare.result["task_id"] == bare.task_id != result.task_id


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WhoAmI(BaseTool):
    def __init__(self) -> None:
        super().__init__("whoami_class", "Report the call's context.", "", NoArguments)

    async def _execute(self, **kwargs: Any) -> Any:
        context = self.context
        assert context is not None
        return {
            "task_id": context.task_id,
            "tool_name": context.tool_name,
            "thread_id": context.thread_id,
            "trace_id": context.trace_id,
            "user_id": context.user_id,
        }


async def test_base_tool_reads_the_call_context_from_self_context(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    instance = WhoAmI()
    assert instance.context is None  # outside a call there is no context
    async with ToolService(mosquitto.url, [instance], topics=topics):
        await manager.wait_for_tool("whoami_class", timeout=10)
        with anyio.fail_after(10):
            result = await manager.execute_tool(
                "whoami_class",
                {},
                context=CallContext(thread_id="th", trace_id="tr", user_id="us"),
            )
    assert result.ok, result
    assert result.result == {
        "task_id": result.task_id,
        "tool_name": "whoami_class",
        "thread_id": "th",
        "trace_id": "tr",
        "user_id": "us",
    }
    assert instance.context is None


# -- what a service refuses to build -------------------------------------------------------


async def test_starting_a_running_service_again_raises(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    async with ToolService(mosquitto.url, [echo], topics=topics) as service:
        with pytest.raises(RuntimeError, match="already running"):
            await service.start()
        await manager.wait_for_tool("echo", timeout=10)
        assert (await manager.execute_tool("echo", {"message": "still"}, timeout=10)).ok


# -- shutdown ---------------------------------------------------------------------------------


async def test_stopping_the_service_lets_an_in_flight_call_finish_within_the_grace_period(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    entered = anyio.Event()
    release = anyio.Event()
    finished: list[str] = []

    @tool
    async def hold(label: str) -> str:
        """Hold until released."""
        entered.set()
        await release.wait()
        finished.append(label)
        return label

    service = ToolService(mosquitto.url, [hold], topics=topics, grace_period=10)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            await tg.start(functools.partial(service.run, handle_signals=False))
            info = await manager.wait_for_tool("hold", timeout=10)
            tg.start_soon(functools.partial(manager.execute_tool, "hold", {"label": "first"}))
            await entered.wait()
            service.stop()
            # The unregistration is out, so the service is shutting down, waiting for the call.
            await manager.wait_for_tool_removed(info.id, timeout=10)
            assert finished == []
            release.set()
        # run() returned only after the held call ran to its end.
    assert finished == ["first"]


async def test_caller_gets_the_result_of_a_call_that_finishes_during_graceful_shutdown(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    entered = anyio.Event()
    release = anyio.Event()
    results: list[ToolResult] = []

    @tool
    async def hold(label: str) -> str:
        """Hold until released."""
        entered.set()
        await release.wait()
        return label

    async def call() -> None:
        results.append(await manager.execute_tool("hold", {"label": "first"}, timeout=15))

    service = ToolService(mosquitto.url, [hold], topics=topics, grace_period=10)
    await service.start()
    try:
        info = await manager.wait_for_tool("hold", timeout=10)
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await entered.wait()
                tg.start_soon(service.aclose)
                await manager.wait_for_tool_removed(info.id, timeout=10)
                release.set()
    finally:
        await service.aclose()
    (result,) = results
    assert result.ok, result
    assert result.result == "first"


async def test_calls_still_running_after_the_grace_period_are_cancelled(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    entered = anyio.Event()
    never = anyio.Event()
    outcome: list[str] = []
    results: list[ToolResult] = []

    @tool
    async def stuck() -> str:
        """Wait for something that never happens."""
        entered.set()
        try:
            await never.wait()
        except BaseException:
            outcome.append("cancelled")
            raise
        return "impossible"

    async def call() -> None:
        results.append(await manager.execute_tool("stuck", {}, timeout=15))

    service = ToolService(mosquitto.url, [stuck], topics=topics, grace_period=0.2)
    await service.start()
    try:
        await manager.wait_for_tool("stuck", timeout=10)
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await entered.wait()
                await service.aclose()
    finally:
        await service.aclose()
    assert outcome == ["cancelled"]
    (result,) = results
    assert not result.ok
    assert manager.pending_calls == 0


# -- broker loss ---------------------------------------------------------------------------


async def test_service_registers_again_and_serves_after_the_broker_restarts(
    private_mosquitto: Mosquitto, topics: Topics
) -> None:
    broker = private_mosquitto
    async with (
        messager_for(broker.url, topics) as messager,
        manager_for(messager, topics) as manager,
        ToolService(broker.url, [echo], topics=topics),
    ):
        before = await manager.wait_for_tool("echo", timeout=10)
        with anyio.fail_after(10):
            first = await manager.execute_tool("echo", {"message": "before"})
        assert first.ok and first.result == "before"

        broker.kill()
        await anyio.to_thread.run_sync(broker.start)

        # Each registration the manager accepts makes a new ToolInfo.
        await wait_until(lambda: info_named(manager, "echo") is not before, timeout=20)
        after = info_named(manager, "echo")
        assert after.id == before.id  # the tool keeps its id across the outage
        with anyio.fail_after(15):
            second = await manager.execute_tool("echo", {"message": "after"}, timeout=10)
        assert second.ok, second
        assert second.result == "after"


# -- arguments the tool's schema refuses -----------------------------------------------------


@pytest.mark.anyio
async def test_extra_argument_through_the_broker_gives_invalid_arguments_naming_the_key(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    @tool
    def greet(name: str) -> str:
        """Greet."""
        return f"hello {name}"

    async with ToolService(mosquitto.url, [greet], topics=topics):
        info = await manager.wait_for_tool("greet", timeout=10)
        assert info.input_schema["additionalProperties"] is False
        with anyio.fail_after(10):
            bad = await manager.execute_tool("greet", {"name": "Ada", "shout": True})
            good = await manager.execute_tool("greet", {"name": "Ada"})
    assert isinstance(bad, TaskErrorMessage)
    assert bad.error_code == "invalid_arguments"
    assert "Tool 'greet'" in bad.error
    assert "'shout' was unexpected" in bad.error
    assert good.ok and good.result == "hello Ada"


async def test_a_service_without_a_manager_says_in_one_line_that_its_tools_serve_unconfirmed(
    mosquitto: Mosquitto, topics: Topics, caplog: pytest.LogCaptureFixture
) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def mul(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    with caplog.at_level(logging.INFO, logger="argentic_tools"):
        async with ToolService(
            mosquitto.url, [echo, add, mul], topics=topics, confirm_timeout=0.3
        ) as service:
            assert [e.tool_name for e in service.endpoints] == ["echo", "add", "mul"]
    started = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert started == [
        f"serving 3 tool(s) on {service.messager.url}: echo, add, mul (no manager confirmed "
        "them yet: registering again when one announces itself)"
    ]

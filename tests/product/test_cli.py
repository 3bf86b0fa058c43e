"""The ``argentic-tools`` command line, run as real subprocesses against a real broker."""

import json
import shlex
import signal
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from argentic_tools import (
    BaseMessage,
    ClientOfflineMessage,
    ManagerOnlineMessage,
    Messager,
    RegisterToolMessage,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    TaskStatus,
    ToolCancelMessage,
    ToolManager,
    ToolProgressMessage,
    ToolRegisteredMessage,
    ToolRegistrationErrorMessage,
    ToolUnregisteredMessage,
    Topics,
    UnregisterToolMessage,
    parse_message,
)
from tests.support.brokers import Mosquitto, free_port
from tests.support.cli import (
    TIMEOUT,
    cli_process,
    connection,
    lines,
    one_error_line,
    processes_mentioning,
    read_rest,
    read_until,
    run_cli,
)
from tests.support.clients import messager_for
from tests.support.processes import ROOT, TEST_TOOLS, ToolProcess, ready

pytestmark = pytest.mark.anyio

EXPECT_SERVED = ("--expect", "echo", "--expect", "sleep", "--wait", "20")
"""``list``/``describe`` options that return once the ``served`` tools are registered."""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """One event loop for the module, so one ``serve`` process can serve many tests."""
    return "asyncio"


@pytest.fixture(scope="module")
async def served(mosquitto: Mosquitto) -> AsyncIterator[str]:
    """``serve`` hosting the echo and sleep test tools; yields its topic prefix.

    Shared by the tests that only read from it (list, describe, call): starting a
    process per test cost more than the tests themselves.
    """
    prefix = f"cli{uuid.uuid4().hex[:10]}"
    specs = ("tests.support.tool_proc:echo", "tests.support.tool_proc:sleep")
    async with cli_process("serve", *specs, *connection(mosquitto.url, prefix)):
        completed = await run_cli(
            "list", "--json", *EXPECT_SERVED, *connection(mosquitto.url, prefix)
        )
        assert {tool["name"] for tool in json.loads(completed.stdout)} == {"echo", "sleep"}
        yield prefix


async def test_help_lists_every_command() -> None:
    completed = await run_cli("--help")
    assert completed.returncode == 0
    commands = ("broker", "serve", "list", "call", "describe", "watch", "demo", "bench", "soak")
    for command in commands:
        assert command in completed.stdout.decode()


async def test_the_examples_in_the_help_of_call_and_list_work_as_written(
    mosquitto: Mosquitto, prefix: str
) -> None:
    specs = ("tool_clients.calculator", "tool_clients.units", "tool_clients.clock")
    where = connection(mosquitto.url, prefix)
    async with cli_process("serve", *specs, *where):
        expected = (
            "--expect",
            "calculate",
            "--expect",
            "convert_units",
            "--expect",
            "current_time",
        )
        registered = await run_cli("list", "--json", *expected, "--wait", "20", *where)
        assert len(json.loads(registered.stdout)) == 3, registered.stderr
        outputs = []
        for command in ("call", "list"):
            help_text = (await run_cli(command, "--help")).stdout.decode()
            for example in help_text.split("\nExamples:\n", 1)[1].strip().splitlines():
                argv = shlex.split(example, comments=True)
                completed = await run_cli(*argv[1:], *where)
                assert completed.returncode == 0, (example, completed.stderr)
                outputs.append(completed.stdout.decode())
    assert json.loads(outputs[0]) == 14  # calculate expression='2 * (3 + 4)'
    assert json.loads(outputs[1]) == 4.0  # sqrt(16)
    assert "calculate" in outputs[-2]  # list --wide


async def test_list_json_shows_the_served_tools_with_their_schemas(
    served: str, mosquitto: Mosquitto
) -> None:
    prefix = served
    completed = await run_cli("list", "--json", *EXPECT_SERVED, *connection(mosquitto.url, prefix))
    assert completed.returncode == 0, completed.stderr
    tools = {tool["name"]: tool for tool in json.loads(completed.stdout)}
    assert set(tools) == {"echo", "sleep"}
    assert "message" in tools["echo"]["input_schema"]["properties"]
    assert tools["echo"]["description"] == "Return the message unchanged."
    assert tools["echo"]["source"]


async def test_list_prints_a_table_of_the_tools(served: str, mosquitto: Mosquitto) -> None:
    prefix = served
    completed = await run_cli("list", *EXPECT_SERVED, *connection(mosquitto.url, prefix))
    assert completed.returncode == 0, completed.stderr
    table = completed.stdout.decode()
    assert "2 tool(s)" in table
    assert "echo" in table
    assert "sleep" in table
    assert "message: string" in table and "seconds: number" in table
    assert max(len(line) for line in table.splitlines()) <= 80
    wide = await run_cli("list", "--wide", *EXPECT_SERVED, *connection(mosquitto.url, prefix))
    assert wide.returncode == 0, wide.stderr
    assert "Id" in wide.stdout.decode() and "Source" in wide.stdout.decode()


async def test_list_at_80_columns_never_breaks_a_name_and_keeps_a_description_to_a_line(
    mosquitto: Mosquitto, prefix: str
) -> None:
    long_name = "convert_currency_at_the_historical_rate"
    specs = ("tests.support.tool_proc:echo", f"tests.support.tool_proc:{long_name}")
    async with cli_process("serve", *specs, *connection(mosquitto.url, prefix)):
        completed = await run_cli(
            "list",
            *("--expect", "echo", "--expect", long_name, "--wait", "20"),
            *connection(mosquitto.url, prefix),
            env={"COLUMNS": "80"},
        )
    assert completed.returncode == 0, completed.stderr
    table = completed.stdout.decode().splitlines()
    assert max(len(line) for line in table) <= 80
    cells = [line.split("│")[1:-1] for line in table if line.startswith("│ ")]
    names = [row[0].strip() for row in cells if row[0].strip()]
    assert names == [long_name, "echo"]
    # The description is its first sentence, cut on its one line; the rest is left out.
    descriptions = [row[2].strip() for row in cells if row[2].strip()]
    assert len(descriptions) == 2
    assert descriptions[0].startswith("Convert an") and descriptions[0].endswith("…")
    assert "long name" not in completed.stdout.decode()


async def test_call_prints_the_result_as_json_and_exits_0(
    served: str, mosquitto: Mosquitto
) -> None:
    prefix = served
    # The broker from the environment, typed as people do: host:port, no scheme.
    completed = await run_cli(
        "call",
        "echo",
        '{"message": "hi"}',
        "--topic-prefix",
        prefix,
        env={"ARGENTIC_TOOLS_BROKER": f"127.0.0.1:{mosquitto.port}"},
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == "hi"
    assert completed.stderr == b""
    refused = await run_cli("call", "echo", "{}", "--timeout", "-1")
    assert refused.returncode == 2
    assert "--timeout: '-1': give a number of seconds above 0" in refused.stderr.decode()


async def test_call_takes_its_topic_prefix_from_the_environment(
    served: str, mosquitto: Mosquitto
) -> None:
    completed = await run_cli(
        "call",
        "echo",
        "message=hi",
        "--broker",
        mosquitto.url,
        env={"ARGENTIC_TOOLS_TOPIC_PREFIX": served},
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == "hi"


async def test_call_with_invalid_arguments_exits_1_naming_the_problem(
    served: str, mosquitto: Mosquitto
) -> None:
    prefix = served
    # KEY=VALUE typed by the tool's schema: a number, so the schema's minimum applies.
    completed = await run_cli("call", "sleep", "seconds=-1", *connection(mosquitto.url, prefix))
    assert completed.returncode == 1
    line = one_error_line(completed)
    assert "$.seconds: -1 is less than the minimum of 0" in line
    assert "[invalid_arguments]" in line
    # ... and a string stays a string, even when it looks like a number.
    echoed = await run_cli("call", "echo", "message=42", *connection(mosquitto.url, prefix))
    assert echoed.returncode == 0, echoed.stderr
    assert json.loads(echoed.stdout) == "42"


async def test_call_that_times_out_exits_1_with_one_line(served: str, mosquitto: Mosquitto) -> None:
    prefix = served
    completed = await run_cli(
        "call",
        "sleep",
        '{"seconds": 30}',
        "--timeout",
        "0.5",
        *connection(mosquitto.url, prefix),
    )
    assert completed.returncode == 1
    line = one_error_line(completed)
    assert "timed out after 0.5 s" in line
    assert "[timeout]" in line


async def test_call_with_invalid_json_exits_2_with_one_line(
    served: str, mosquitto: Mosquitto
) -> None:
    # Served: the CLI looks the tool up to suggest arguments, and with no such tool it
    # would wait its whole --wait (5 s) before answering.
    prefix = served
    completed = await run_cli("call", "echo", '{"message":', *connection(mosquitto.url, prefix))
    assert completed.returncode == 2
    assert "ARGS '{\"message\":' are neither KEY=VALUE pairs nor a JSON object" in one_error_line(
        completed
    )
    assert completed.stdout == b""


async def test_call_with_a_json_array_exits_2_asking_for_an_object(
    mosquitto: Mosquitto, prefix: str
) -> None:
    completed = await run_cli("call", "echo", '["hi"]', *connection(mosquitto.url, prefix))
    assert completed.returncode == 2
    assert "must be a JSON object" in one_error_line(completed)


async def test_call_with_plain_words_suggests_them_as_the_tools_one_string_parameter(
    served: str, mosquitto: Mosquitto
) -> None:
    prefix = served
    completed = await run_cli("call", "echo", "hello", *connection(mosquitto.url, prefix))
    assert completed.returncode == 2
    assert one_error_line(completed).endswith(
        """; try: argentic-tools call echo message=hello (or '{"message": "hello"}')"""
    )
    assert completed.stdout == b""


async def test_call_of_an_unknown_tool_exits_1_with_one_line(
    served: str, mosquitto: Mosquitto
) -> None:
    prefix = served
    completed = await run_cli(
        # A typo fails once the served tools have answered the CLI manager's
        # announcement, not after the whole --wait (which would outlast the test's bound).
        "call",
        "ecko",
        "{}",
        "--wait",
        "300",
        "--debug",  # a message of ours: one line still, no traceback of the CLI
        *connection(mosquitto.url, prefix),
    )
    assert completed.returncode == 1
    line = one_error_line(completed)
    assert "'ecko' not found" in line
    assert prefix in line
    assert "Did you mean 'echo'?" in line
    assert "Registered: echo, sleep." in line


async def test_call_by_the_name_the_exports_gave_with_typed_pairs(
    mosquitto: Mosquitto, prefix: str
) -> None:
    async with cli_process(
        "serve", "tests.support.tool_proc:email_sender", *connection(mosquitto.url, prefix)
    ):
        completed = await run_cli(
            "call",
            "Email_Sender",  # what describe --format openai calls "Email Sender"
            "to=ana",
            "copies=2",  # typed by the schema: an integer, not the string "2"
            "--wait",
            "5",
            *connection(mosquitto.url, prefix),
        )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == "sent to ana x2"


async def test_call_debug_shows_the_tools_own_traceback(mosquitto: Mosquitto, prefix: str) -> None:
    # A tool process run with --debug sends the traceback of an unexpected exception.
    serve = (
        "serve",
        "tests.support.tool_proc:crash",
        "--debug",
        *connection(mosquitto.url, prefix),
    )
    async with cli_process(*serve):
        call = ("call", "crash", "--wait", "5", *connection(mosquitto.url, prefix))
        plain = await run_cli(*call)
        debug = await run_cli(*call, "--debug")
    assert plain.returncode == debug.returncode == 1
    assert "division by zero" in one_error_line(plain)
    errors = debug.stderr.decode()
    assert "Traceback" in errors
    assert "tool_proc.py" in errors and "ZeroDivisionError" in errors  # the tool's frames
    assert "argentic_tools/cli" not in errors  # not the command line's own


async def test_call_against_an_unreachable_broker_exits_2_with_one_line(prefix: str) -> None:
    port = free_port()
    completed = await run_cli("call", "echo", "{}", *connection(f"mqtt://127.0.0.1:{port}", prefix))
    assert completed.returncode == 2
    assert f"cannot connect to the MQTT broker at 127.0.0.1:{port}" in one_error_line(completed)


async def test_an_invalid_broker_url_exits_2_with_one_line(prefix: str) -> None:
    completed = await run_cli("list", *connection("http://127.0.0.1:1", prefix))
    assert completed.returncode == 2
    assert "unsupported broker URL scheme" in one_error_line(completed)


async def test_describe_prompt_prints_every_tool_as_text_for_a_system_prompt(
    served: str, mosquitto: Mosquitto
) -> None:
    prefix = served
    completed = await run_cli(
        "describe", "--format", "prompt", *EXPECT_SERVED, *connection(mosquitto.url, prefix)
    )
    assert completed.returncode == 0, completed.stderr
    echo, sleep = completed.stdout.decode().strip().split("\n\n## ")
    assert echo.splitlines()[:2] == ["## echo", "Return the message unchanged."]
    parameters = echo.splitlines()[-1].removeprefix("Parameters (JSON Schema): ")
    assert json.loads(parameters)["required"] == ["message"]
    assert sleep.startswith("sleep\n")


@pytest.mark.parametrize("fmt", ["openai", "openai-responses", "anthropic", "mcp"])
async def test_describe_exports_the_registry_for_llm_providers(
    served: str, mosquitto: Mosquitto, fmt: str
) -> None:
    prefix = served
    completed = await run_cli(
        "describe", "--format", fmt, *EXPECT_SERVED, *connection(mosquitto.url, prefix)
    )
    assert completed.returncode == 0, completed.stderr
    exported = json.loads(completed.stdout)
    assert isinstance(exported, list)
    assert len(exported) == 2
    assert '"echo"' in completed.stdout.decode()


async def test_list_expecting_a_tool_that_never_registers_says_so_after_wait(
    served: str, mosquitto: Mosquitto
) -> None:
    prefix = served
    completed = await run_cli(
        "list",
        "--json",
        # Long enough for echo to answer the announcement even on a loaded machine.
        *("--expect", "echo", "--expect", "ghost", "--wait", "2"),
        *connection(mosquitto.url, prefix),
    )
    assert completed.returncode == 0, completed.stderr
    assert "echo" in {tool["name"] for tool in json.loads(completed.stdout)}
    assert "Not registered after 2 s: ghost." in completed.stderr.decode()


@pytest.mark.parametrize("command", [("list", "--json"), ("describe", "--format", "mcp")])
async def test_list_and_describe_return_once_registrations_stop_not_after_their_wait(
    served: str, mosquitto: Mosquitto, command: tuple[str, ...]
) -> None:
    # Without --expect, the command ends once the live tools have registered again; it
    # would take 300 s (past the test's bound) if it spent its --wait.
    completed = await run_cli(*command, "--wait", "300", *connection(mosquitto.url, served))
    assert completed.returncode == 0, completed.stderr
    assert {tool["name"] for tool in json.loads(completed.stdout)} == {"echo", "sleep"}


async def test_list_without_expect_collects_for_wait_seconds(
    served: str, mosquitto: Mosquitto
) -> None:
    prefix = served
    completed = await run_cli("list", "--json", "--wait", "0.2", *connection(mosquitto.url, prefix))
    assert completed.returncode == 0, completed.stderr
    # Whatever re-registered within the wait, and nothing else.
    assert {tool["name"] for tool in json.loads(completed.stdout)} <= {"echo", "sleep"}


async def test_serve_of_a_module_that_does_not_import_exits_2_with_one_line(
    mosquitto: Mosquitto, prefix: str
) -> None:
    completed = await run_cli("serve", "no.such.module:x", *connection(mosquitto.url, prefix))
    assert completed.returncode == 2
    assert "cannot import module 'no.such.module'" in one_error_line(completed)


async def test_serve_of_a_missing_object_exits_2_with_one_line(
    mosquitto: Mosquitto, prefix: str
) -> None:
    completed = await run_cli(
        "serve", "tests.support.tool_proc:nothing", *connection(mosquitto.url, prefix)
    )
    assert completed.returncode == 2
    assert "has no 'nothing'" in one_error_line(completed)


async def test_serve_of_a_module_serves_every_tool_in_it(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str
) -> None:
    async with cli_process("serve", "tests.support.tool_proc", *connection(mosquitto.url, prefix)):
        await ready(manager, TEST_TOOLS)
        result = await manager.execute_tool("echo", {"message": "module"}, timeout=10)
    assert result.ok
    assert result.result == "module"


async def test_serve_of_a_list_serves_every_tool_in_the_list(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str
) -> None:
    tools = "tests.support.tool_proc:TOOLS"
    async with cli_process("serve", tools, *connection(mosquitto.url, prefix)):
        await ready(manager, TEST_TOOLS)


async def test_serve_pins_tool_ids_given_with_tool_id(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str
) -> None:
    spec, pin = "tests.support.tool_proc:echo", "--tool-id=echo=pinned-echo"
    async with cli_process("serve", spec, pin, *connection(mosquitto.url, prefix)):
        info = await manager.wait_for_tool("echo", timeout=TIMEOUT)
        result = await manager.execute_tool("pinned-echo", {"message": "by id"}, timeout=10)
    assert info.id == "pinned-echo"
    assert result.result == "by id"


async def test_serve_refuses_a_tool_id_without_a_name_with_one_line(
    mosquitto: Mosquitto, prefix: str
) -> None:
    spec = "tests.support.tool_proc:echo"
    completed = await run_cli(
        "serve", spec, "--tool-id", "pinned", *connection(mosquitto.url, prefix)
    )
    assert completed.returncode == 2
    assert "--tool-id expects NAME=ID, got 'pinned'" in one_error_line(completed)


async def test_sigint_stops_serve_after_unregistering_its_tools(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str
) -> None:
    args = ("serve", "tests.support.tool_proc:echo", *connection(mosquitto.url, prefix))
    async with cli_process(*args) as process:
        info = await manager.wait_for_tool("echo", timeout=15)
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(TIMEOUT):
            status = await process.wait()
        errors = lines(await read_rest(process.stderr))
        # The tool said goodbye: the manager drops it without waiting for a Last Will.
        await manager.wait_for_tool_removed(info.id, timeout=10)
    assert status == 130
    assert errors[-1] == "interrupted"
    assert not any("Traceback" in line for line in errors)
    assert processes_mentioning(prefix) == []


async def test_watch_prints_a_registration_as_it_happens(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str
) -> None:
    # The manager (up before watch starts) confirms the registration, so serve is started
    # at once instead of waiting out its confirmation timeout.
    watch_args = ("watch", "--count", "1", *connection(mosquitto.url, prefix))
    serve_args = ("serve", "tests.support.tool_proc:echo", *connection(mosquitto.url, prefix))
    async with cli_process(*watch_args) as watch:
        assert watch.stderr is not None
        await read_until(watch.stderr, b"Watching")  # subscribed: nothing can be missed now
        async with cli_process(*serve_args):
            with anyio.fail_after(TIMEOUT):
                status = await watch.wait()
        events = lines(await read_rest(watch.stdout))
    assert status == 0
    assert len(events) == 1
    assert " register " in events[0]
    assert "echo id=" in events[0]


async def test_broker_command_serves_mqtt_until_ctrl_c() -> None:
    port = free_port()
    async with cli_process("broker", "--port", str(port)) as broker:
        assert broker.stdout is not None
        await read_until(broker.stdout, b"listening")
        with anyio.fail_after(TIMEOUT):
            async with Messager(f"mqtt://127.0.0.1:{port}", will_topic=None) as messager:
                assert messager.is_connected()
        broker.send_signal(signal.SIGINT)
        with anyio.fail_after(TIMEOUT):
            status = await broker.wait()
        errors = lines(await read_rest(broker.stderr))
    assert status == 130
    assert errors == ["interrupted"]


async def test_watch_prints_one_line_per_protocol_message(
    mosquitto: Mosquitto, topics: Topics, prefix: str
) -> None:
    register = RegisterToolMessage(tool_name="adder", tool_id="t1", source="proc-1")
    published: list[tuple[str, BaseMessage | bytes]] = [
        (topics.register, register),
        (topics.register, register),  # registering again (a manager started): not shown
        (topics.register, UnregisterToolMessage(tool_id="t1", source="proc-1")),
        (topics.register, ClientOfflineMessage(source="proc-1")),
        (topics.register, b"not json"),
        (topics.status, ManagerOnlineMessage(source="manager-1")),
        (topics.status, ToolRegisteredMessage(tool_id="t1", tool_name="adder")),
        (topics.status, ToolRegistrationErrorMessage(tool_name="bad", error="no schema")),
        (topics.status, ToolUnregisteredMessage(tool_id="t1", tool_name="adder", reason="offline")),
        (topics.call("t1"), TaskMessage(tool_id="t1", tool_name="adder", arguments={"a": 1})),
        (
            topics.response("t1"),
            TaskResultMessage(
                tool_id="t1", tool_name="adder", status=TaskStatus.SUCCESS, result=3, duration_ms=2
            ),
        ),
        (
            topics.response("t1"),
            TaskErrorMessage(
                tool_id="t1", tool_name="adder", error="boom", error_code="execution_error"
            ),
        ),
        (topics.call("t1"), ToolCancelMessage(task_id="k", tool_id="t1", reason="timed out")),
        (
            topics.response("t1"),
            ToolProgressMessage(task_id="k", tool_id="t1", progress=2, total=4),
        ),
    ]
    shown = len(published) - 1
    watch_args = ("watch", "--count", str(shown), *connection(mosquitto.url, prefix))
    async with cli_process(*watch_args) as watch:
        assert watch.stderr is not None
        await read_until(watch.stderr, b"Watching")
        async with messager_for(mosquitto.url, topics, will_topic=None) as publisher:
            for topic, message in published:
                await publisher.publish(topic, message)
        with anyio.fail_after(TIMEOUT):
            status = await watch.wait()
        events = lines(await read_rest(watch.stdout))
    assert status == 0
    assert len(events) == shown
    kinds = {line.split()[1]: line for line in events}
    assert set(kinds) == {
        "cancel",
        "progress",
        "register",
        "unregister",
        "offline",
        "malformed",
        "manager",
        "registered",
        "refused",
        "removed",
        "call",
        "result",
        "error",
    }
    assert 'adder {"a": 1}' in kinds["call"]
    assert "adder success in 2.0 ms -> 3" in kinds["result"]
    assert "adder [execution_error] boom" in kinds["error"]
    assert "refused" in kinds["refused"] and "no schema" in kinds["refused"]
    assert "task=k tool=t1: timed out" in kinds["cancel"]
    assert "2/4 task=k" in kinds["progress"]


async def test_watch_filters_by_kind_and_tool(
    mosquitto: Mosquitto, topics: Topics, prefix: str
) -> None:
    watch_args = (
        *("watch", "--count", "1", "--type", "call", "--tool", "adder"),
        *connection(mosquitto.url, prefix),
    )
    async with cli_process(*watch_args) as watch:
        assert watch.stderr is not None
        await read_until(watch.stderr, b"Watching")
        async with messager_for(mosquitto.url, topics, will_topic=None) as publisher:
            for message in (
                RegisterToolMessage(tool_name="adder", tool_id="t1", source="proc-1"),
                TaskMessage(tool_id="t2", tool_name="other", arguments={}),
                TaskMessage(tool_id="t1", tool_name="adder", arguments={"a": 7}),
            ):
                await publisher.publish(topics.call(message.tool_id or "t1"), message)
        with anyio.fail_after(TIMEOUT):
            assert await watch.wait() == 0
        (line,) = lines(await read_rest(watch.stdout))
    assert 'call        adder {"a": 7}' in line


async def test_watch_shows_the_result_and_the_error_a_default_manager_receives(
    manager: ToolManager, tool_process: ToolProcess, mosquitto: Mosquitto, prefix: str
) -> None:
    # A default manager has its results sent to its own inbox, one level below the
    # tool's response topic, and sends its tasks as a plain Argentic caller would.
    watch_args = (
        *("watch", "--count", "2", "--type", "result", "--type", "error"),
        *("--tool", "echo", "--tool", "fail"),
        *connection(mosquitto.url, prefix),
    )
    await ready(manager, ("echo", "fail"))
    async with cli_process(*watch_args) as watch:
        assert watch.stderr is not None
        await read_until(watch.stderr, b"Watching")
        echoed = await manager.execute_tool("echo", {"message": "seen"}, timeout=10)
        failed = await manager.execute_tool("fail", {"reason": "on show"}, timeout=10)
        with anyio.fail_after(TIMEOUT):
            status = await watch.wait()
        events = lines(await read_rest(watch.stdout))
    assert echoed.ok and not failed.ok
    assert status == 0
    kinds = [line.split()[1] for line in events]
    assert kinds.count("result") == 1, events
    assert kinds.count("error") == 1, events
    (result,) = (line for line in events if line.split()[1] == "result")
    (error,) = (line for line in events if line.split()[1] == "error")
    assert "echo success" in result and '-> "seen"' in result
    assert "fail [execution_error]" in error and "failing on purpose: on show" in error


async def test_sigterm_to_a_waiting_call_exits_143_with_one_line(
    mosquitto: Mosquitto, topics: Topics, prefix: str
) -> None:
    announced = anyio.Event()

    async def on_status(message: Any) -> None:
        if isinstance(parse_message(message.payload), ManagerOnlineMessage):
            announced.set()

    async with messager_for(mosquitto.url, topics, will_topic=None) as observer:
        await observer.subscribe(topics.status, on_status)
        args = ("call", "absent", "{}", "--wait", "60", *connection(mosquitto.url, prefix))
        async with cli_process(*args) as call:
            with anyio.fail_after(TIMEOUT):
                await announced.wait()  # its manager is up, so its signal handlers are too
            call.send_signal(signal.SIGTERM)
            with anyio.fail_after(TIMEOUT):
                status = await call.wait()
            errors = lines(await read_rest(call.stderr))
    assert status == 143
    assert errors == ["terminated"]


async def test_an_invalid_topic_prefix_exits_2_with_one_line(mosquitto: Mosquitto) -> None:
    completed = await run_cli("list", *connection(mosquitto.url, "bad/+/prefix"))
    assert completed.returncode == 2
    assert "--topic-prefix 'bad/+/prefix'" in one_error_line(completed)


async def test_an_unknown_log_level_is_a_usage_error() -> None:
    completed = await run_cli("list", "--log-level", "chatty")
    assert completed.returncode == 2
    assert "unknown log level 'chatty'" in completed.stderr.decode()


@pytest.mark.parametrize(("command", "module"), [("bench", "run"), ("soak", "soak")])
async def test_bench_and_soak_hand_every_argument_to_their_benchmark_module(
    command: str, module: str
) -> None:
    completed = await run_cli(command, "--help")
    if (ROOT / "benchmarks" / f"{module}.py").is_file():
        assert completed.returncode == 0, completed.stderr
        help_text = completed.stdout.decode()
        assert help_text.startswith(f"usage: argentic-tools {command} [-h]")
        assert f"\nExamples:\n  argentic-tools {command}" in help_text
        assert "python -m benchmarks" not in help_text.split("Examples:")[1]
        refused = await run_cli(command, "--bogus")
        assert refused.returncode == 2
        assert lines(refused.stderr)[-1] == (
            f"argentic-tools {command}: error: unrecognized arguments: --bogus"
        )
    else:
        assert completed.returncode == 2
        assert "from a source checkout" in one_error_line(completed)


async def test_broker_on_a_busy_port_says_so_in_one_line(mosquitto: Mosquitto) -> None:
    completed = await run_cli("broker", "--port", str(mosquitto.port))
    assert completed.returncode == 2
    line = one_error_line(completed)
    assert f"cannot listen on 127.0.0.1:{mosquitto.port}" in line
    assert "address already in use" in line

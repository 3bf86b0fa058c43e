"""The fleet in the MCP ecosystem, with real components only: the official MCP client
against ``argentic-tools mcp serve`` (stdio and streamable HTTP, both protocol eras), and
the real third-party ``mcp-server-time`` brought onto the bus by the bridge.

The full loop (MCP client -> gateway -> MQTT -> ``argentic-tools mcp bridge`` ->
``mcp-server-time``) runs as the README shows it, in ``tests/product/test_readme.py``."""

import functools
import logging
import os
import pathlib
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from typing import Any, cast

import anyio
import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import mcp_types as types  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from argentic_tools import (  # noqa: E402
    ThreadToolPolicy,
    ToolManager,
    ToolService,
    Topics,
    tool,
)
from argentic_tools.mcp.bridge import McpBridge  # noqa: E402
from argentic_tools.mcp.gateway import McpGateway  # noqa: E402
from argentic_tools.mcp.gateway.names import is_mcp_name  # noqa: E402
from tests.support.brokers import Mosquitto, child_env, free_port  # noqa: E402
from tests.support.clients import manager_for, messager_for  # noqa: E402
from tests.support.gateways import gateway_command, http_gateway, stdio_gateway  # noqa: E402
from tests.support.processes import ROOT, ToolProcess  # noqa: E402

pytestmark = pytest.mark.anyio

TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def lookup(key: str) -> dict[str, str]:
    """Look a key up."""
    return {"key": key, "value": key.upper()}


@tool(name="Email Sender")
def email_sender(to: str) -> str:
    """Pretend to send an email."""
    return f"sent to {to}"


@tool(name="Email_Sender")
def email_sender_plain(to: str) -> str:
    """Another tool whose name is what 'Email Sender' would naively become."""
    return f"plain {to}"


@pytest.fixture(scope="module")
def mcp_prefix() -> str:
    return f"m{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def long_tools(mosquitto: Mosquitto, mcp_prefix: str) -> Iterator[ToolProcess]:
    """The long-running test tools in their own process, for the whole module."""
    with ToolProcess("tests.support.long_proc", mosquitto.url, mcp_prefix) as process:
        process.wait_registered(mosquitto.url, mcp_prefix, ("steps", "sync_steps", "chunks"))
        yield process


class Notifications:
    """Server notifications a client received (the handshake era's message handler)."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self._arrived = anyio.Event()
        self._consumed: dict[str, int] = {}

    async def __call__(self, message: Any) -> None:
        if not isinstance(message, Exception):
            self.methods.append(message.method)
            self._arrived.set()
            self._arrived = anyio.Event()

    async def next(self, method: str) -> None:
        """Wait for the next ``method`` notification after those already counted."""
        target = self._consumed.get(method, 0) + 1
        while self.methods.count(method) < target:
            await self._arrived.wait()
        self._consumed[method] = target


class Progress:
    """Progress notifications as a client's callback receives them."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []
        self.first = anyio.Event()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))
        self.first.set()


async def wait_for_file(directory: pathlib.Path, name: str) -> None:
    with anyio.fail_after(15):
        while name not in os.listdir(directory):
            await anyio.sleep(0.02)


async def check_calls(call: Callable[..., Any], tmp_path: pathlib.Path, label: str) -> None:
    """What every client, in every era and over every transport, must see."""
    progress = Progress()
    result = await call(
        "steps",
        {"count": 3, "interval": 0.12},
        progress_callback=progress,
        meta={"traceparent": TRACEPARENT},
    )
    assert not result.is_error, result
    assert result.structured_content == {"result": 3}
    assert text_of(result) == "3"
    assert [p for p, _, _ in progress.seen] == [1.0, 2.0, 3.0]
    invalid = await call("steps", {"count": "three", "interval": 0.1})
    assert invalid.is_error
    assert "Tool 'steps': invalid arguments: $.count" in text_of(invalid)
    # A cancelled call stops the work in the tool's process.
    started = Progress()
    async with anyio.create_task_group() as group:

        async def slow_call() -> None:
            await call(
                "steps",
                {"count": 100, "interval": 0.1, "label": label, "directory": str(tmp_path)},
                progress_callback=started,
            )

        group.start_soon(slow_call)
        with anyio.fail_after(15):
            await started.first.wait()
        group.cancel_scope.cancel()
    await wait_for_file(tmp_path, f"{label}.stopped")
    assert f"{label}.done" not in os.listdir(tmp_path)


async def test_the_stdio_gateway_serves_both_eras_and_follows_the_fleet(
    mosquitto: Mosquitto, mcp_prefix: str, long_tools: ToolProcess, tmp_path: pathlib.Path
) -> None:
    topics = Topics.with_prefix(mcp_prefix)
    server = stdio_gateway(mosquitto.url, mcp_prefix)
    for mode in ("auto", "legacy"):
        notes = Notifications()
        async with Client(server, mode=mode, message_handler=notes) as client:
            assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == sorted(names)
            assert {"steps", "chunks", "sync_steps"} <= set(names)
            await check_calls(client.call_tool, tmp_path, mode)
            # Tools joining and leaving while the client is connected.
            async with AsyncExitStack() as stack:
                if mode == "auto":  # 2026-07-28: changes come on a subscription
                    changes = await stack.enter_async_context(
                        client.listen(tools_list_changed=True)
                    )
                    next_change = functools.partial(anext, aiter(changes))
                else:  # the handshake era: on the connection
                    next_change = functools.partial(notes.next, "notifications/tools/list_changed")
                async with ToolService(
                    mosquitto.url, [lookup, email_sender, email_sender_plain], topics=topics
                ):
                    with anyio.fail_after(15):
                        await next_change()
                    await check_joined(client)
                with anyio.fail_after(15):
                    await next_change()
                listed = [t.name for t in (await client.list_tools(cache_mode="refresh")).tools]
                assert "lookup" not in listed
            if mode == "legacy":
                await check_sigterm_drains(client)


async def check_sigterm_drains(client: Client) -> None:
    """SIGTERM to the gateway: the call in flight still gets its result, then it exits."""
    (gateway,) = children_running(b"serve")
    started = Progress()
    results: list[types.CallToolResult] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:

            async def long_call() -> None:
                arguments = {"count": 5, "interval": 0.1}
                results.append(
                    await client.call_tool("steps", arguments, progress_callback=started)
                )

            group.start_soon(long_call)
            await started.first.wait()
            os.kill(gateway, signal.SIGTERM)
        while gateway in children_running(b"serve"):
            await anyio.sleep(0.05)
    assert results[0].structured_content == {"result": 5}


async def check_joined(client: Client) -> None:
    """The tools that joined are listed with valid, distinct names, and callable."""
    await wait_for_tool_listed(client, "lookup")
    listed = {t.name: t for t in (await client.list_tools(cache_mode="refresh")).tools}
    assert "Email_Sender" in listed and "Email Sender" not in listed
    mapped = next(n for n in listed if n.startswith("Email_Sender_"))
    assert all(is_mcp_name(name) for name in listed)
    assert text_of(await client.call_tool(mapped, {"to": "ana"})) == "sent to ana"
    assert text_of(await client.call_tool("Email_Sender", {"to": "ana"})) == "plain ana"
    found = listed["lookup"]
    assert found.annotations is not None and found.annotations.read_only_hint
    looked = await client.call_tool("lookup", {"key": "k"})
    assert looked.structured_content == {"key": "k", "value": "K"}


def text_of(result: types.CallToolResult) -> str:
    """The text of a result's first content block."""
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def wait_for_tool_listed(client: Client, name: str) -> None:
    with anyio.fail_after(15):
        while name not in [t.name for t in (await client.list_tools(cache_mode="refresh")).tools]:
            await anyio.sleep(0.05)


async def wait_for_tool_gone(client: Client, name: str) -> None:
    with anyio.fail_after(15):
        while name in [t.name for t in (await client.list_tools(cache_mode="refresh")).tools]:
            await anyio.sleep(0.05)


async def initialize_at(session: ClientSession, version: str) -> types.InitializeResult:
    """A handshake offering ``version`` (the SDK's own client offers only its latest)."""
    result = await session.send_request(
        types.InitializeRequest(
            params=types.InitializeRequestParams(
                protocol_version=version,
                capabilities=types.ClientCapabilities(),
                client_info=types.Implementation(name="argentic-tools-tests", version="0"),
            )
        ),
        types.InitializeResult,
    )
    session.adopt(result)
    await session.send_notification(types.InitializedNotification())
    return result


async def test_the_http_gateway_serves_every_era_and_per_thread_views(
    mosquitto: Mosquitto, mcp_prefix: str, long_tools: ToolProcess, tmp_path: pathlib.Path
) -> None:
    async with http_gateway(mosquitto.url, mcp_prefix) as (url, _):
        for mode in ("auto", "legacy"):
            async with Client(url, mode=mode) as client:
                await check_calls(client.call_tool, tmp_path, f"http-{mode}")
        async with AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(streamable_http_client(url))
            session = await stack.enter_async_context(ClientSession(read, write))
            assert (await initialize_at(session, "2025-06-18")).protocol_version == "2025-06-18"
            names = [t.name for t in (await session.list_tools()).tools]
            assert "steps" in names
            result = await session.call_tool("steps", {"count": 1, "interval": 0})
            assert result.structured_content == {"result": 1}


async def test_the_gateway_serves_http_on_the_transport_and_path_given(
    mosquitto: Mosquitto, mcp_prefix: str, long_tools: ToolProcess
) -> None:
    options = ("--transport", "streamable-http", "--path", "/fleet/mcp")
    async with http_gateway(mosquitto.url, mcp_prefix, *options) as (url, _):
        assert url.endswith("/fleet/mcp")
        async with Client(url) as client:
            assert "steps" in [t.name for t in (await client.list_tools()).tools]


async def gateway_start_text(url: str, prefix: str, host: str) -> str:
    """What ``mcp serve --http HOST:0`` says on stderr until it listens (then it is stopped)."""
    command = gateway_command(url, prefix, "--http", f"{host}:0", "--wait", "0.1")
    process = await anyio.open_process(command, cwd=ROOT, env=child_env())
    async with process:
        assert process.stderr is not None
        text = b""
        with anyio.fail_after(20):
            while b"/mcp\n" not in text:
                text += await process.stderr.receive()
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(15):
            await process.wait()
    return " ".join(text.decode().split())


async def test_a_gateway_open_to_the_network_without_auth_warns_at_start(
    mosquitto: Mosquitto, mcp_prefix: str
) -> None:
    warning = "open to the network without authentication"
    public = await gateway_start_text(mosquitto.url, mcp_prefix, "0.0.0.0")
    assert "WARNING" in public
    assert warning in public
    assert "--auth keys FILE" in public
    assert warning not in await gateway_start_text(mosquitto.url, mcp_prefix, "127.0.0.1")


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions in ``error``, however deeply grouped."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_of_a_gateway_whose_broker_is_down_is_told_why(mode: str) -> None:
    dead = f"mqtt://127.0.0.1:{free_port()}"  # nothing listens there
    reasons: list[str] = []
    with anyio.fail_after(30):
        try:
            async with Client(stdio_gateway(dead, "unused"), mode=mode):
                pass
        except* MCPError as refused:
            reasons = [str(error) for error in leaves(refused)]
    (reason,) = reasons
    assert reason.startswith("argentic-tools mcp serve: cannot connect to the MQTT broker at")


async def test_a_broker_outage_ends_mcp_calls_with_a_clear_error(
    private_mosquitto: Mosquitto, topics: Topics
) -> None:
    broker = private_mosquitto
    async with (
        ToolService(broker.url, [lookup], topics=topics),
        messager_for(broker.url, topics) as messager,
        manager_for(messager, topics) as manager,
    ):
        await manager.wait_for_tool("lookup", timeout=10)
        gateway = McpGateway(manager, timeout=1)
        async with Client(gateway.server) as client:  # the SDK's in-process transport
            assert (await client.call_tool("lookup", {"key": "a"})).structured_content
            broker.kill()
            with anyio.fail_after(10):
                result = await client.call_tool("lookup", {"key": "b"})
            assert result.is_error
            assert text_of(result).startswith("Tool 'lookup'")
            # Back, so that the tool and the manager shut down without waiting on it.
            await anyio.to_thread.run_sync(broker.start)


async def test_a_thread_sees_and_calls_only_the_tools_its_policy_allows(
    mosquitto: Mosquitto, topics: Topics
) -> None:
    policy = ThreadToolPolicy()
    policy.set_enabled_tools("support", ["lookup"])
    async with (
        ToolService(mosquitto.url, [lookup, email_sender], topics=topics),
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, policy=policy) as manager,
        anyio.create_task_group() as group,
    ):
        await manager.wait_for_tool("lookup", timeout=10)
        await manager.wait_for_tool("Email Sender", timeout=10)
        stop = anyio.Event()
        gateway = McpGateway(manager)
        port = await group.start(
            functools.partial(gateway.serve_http, "127.0.0.1", 0, stop=stop.wait)
        )
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            everything = [t.name for t in (await client.list_tools()).tools]
            assert len(everything) == 2 and "lookup" in everything
            support = cast(types.RequestParamsMeta, {"argentic/thread": "support"})
            seen = await client.list_tools(meta=support, cache_mode="bypass")
            assert [t.name for t in seen.tools] == ["lookup"]
            mapped = next(name for name in everything if name != "lookup")
            refused = await client.call_tool(mapped, {"to": "x"}, meta=support)
            assert refused.is_error
            assert "not enabled for thread 'support'" in text_of(refused)
            allowed = await client.call_tool("lookup", {"key": "a"}, meta=support)
            assert allowed.structured_content == {"key": "a", "value": "A"}
            # The policy changes, the fleet does not: the thread's next listing follows it.
            policy.set_enabled_tools("support", ["lookup", "Email Sender"])
            widened = await client.list_tools(meta=support, cache_mode="bypass")
            assert [t.name for t in widened.tools] == everything
        stop.set()


def time_server_pids() -> list[int]:
    """Processes of ``mcp_server_time`` started by this test process."""
    return children_running(b"mcp_server_time")


def children_running(marker: bytes) -> list[int]:
    """Child processes of this test process whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = pathlib.Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            status = pathlib.Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        parent = next(
            (int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:")), 0
        )
        if any(marker in part for part in cmdline) and parent == os.getpid():
            found.append(int(entry))
    return found


async def test_the_bridge_brings_a_real_mcp_server_onto_the_bus_and_restarts_it(
    mosquitto: Mosquitto,
    topics: Topics,
    prefix: str,
    manager: ToolManager,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="argentic_tools.mcp")
    bridge = McpBridge(mosquitto.url, command=TIME_SERVER, topic_prefix=prefix)
    async with anyio.create_task_group() as group:
        await group.start(bridge.run)
        info = await manager.wait_for_tool("get_current_time", timeout=15)
        assert info.annotations["readOnlyHint"] is True
        assert info.output_schema is not None
        result = await manager.execute_tool("get_current_time", {"timezone": "Europe/Warsaw"})
        assert result.ok, result
        assert result.result["timezone"] == "Europe/Warsaw"
        bad = await manager.execute_tool("get_current_time", {"timezone": "Not/AZone"})
        assert not bad.ok and "Invalid timezone" in getattr(bad, "error", "")
        # Kill the MCP server: its tools leave the registry, and it comes back by itself.
        (pid,) = time_server_pids()
        os.kill(pid, signal.SIGKILL)
        await manager.wait_for_tool_removed(info.id, timeout=10)
        again = await manager.wait_for_tool("get_current_time", timeout=15)
        assert again.id != info.id
        assert bridge.restarts == 1
        (stopped,) = [r.getMessage() for r in caplog.records if "stopped:" in r.getMessage()]
        assert "stopped: it was killed by SIGKILL" in stopped
        result = await manager.execute_tool("get_current_time", {"timezone": "UTC"})
        assert result.ok, result
        group.cancel_scope.cancel()

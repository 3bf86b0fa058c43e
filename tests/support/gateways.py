"""``argentic-tools mcp serve`` as MCP clients reach it in tests (over stdio and over HTTP),
and an MCP server bridged onto the bus."""

import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
from anyio.abc import Process
from mcp.client.stdio import StdioServerParameters

from argentic_tools.mcp.bridge import McpBridge
from tests.support.brokers import child_env
from tests.support.processes import ROOT


def gateway_command(url: str, prefix: str, *extra: str) -> list[str]:
    """The command line of a gateway on the broker at ``url``, under topic prefix ``prefix``."""
    return [
        sys.executable,
        "-m",
        "argentic_tools",
        "mcp",
        "serve",
        "--broker",
        url,
        "--topic-prefix",
        prefix,
        *extra,
    ]


def stdio_gateway(url: str, prefix: str) -> StdioServerParameters:
    """A gateway as an MCP client starts it: a command speaking MCP on its stdin/stdout."""
    command = gateway_command(url, prefix)
    return StdioServerParameters(command=command[0], args=command[1:], env=child_env(), cwd=ROOT)


@contextlib.asynccontextmanager
async def http_gateway(url: str, prefix: str, *options: str) -> AsyncIterator[tuple[str, Process]]:
    """``argentic-tools mcp serve --http`` on a free port; yields its MCP URL and process.

    ``options`` come after ``--http 127.0.0.1:0``; the path they choose ends with /mcp.
    The test may stop or kill the process itself.
    """
    process = await anyio.open_process(
        gateway_command(url, prefix, "--http", "127.0.0.1:0", "--log-level", "INFO", *options),
        cwd=ROOT,
        env=child_env(),
    )
    try:
        assert process.stderr is not None
        text = b""
        with anyio.fail_after(20):
            while b"/mcp\n" not in text:
                text += await process.stderr.receive()
        line = text.split(b"listening on ", 1)[1].split(b"\n", 1)[0].decode()
        yield line.strip(), process
    finally:
        if process.returncode is None:  # a test may have stopped it already
            process.send_signal(signal.SIGTERM)
            with anyio.move_on_after(15):
                await process.wait()
            if process.returncode is None:
                process.kill()
        await process.aclose()


@contextlib.asynccontextmanager
async def bridged(
    broker: str, prefix: str, command: Sequence[str] | None, **options: Any
) -> AsyncIterator[McpBridge]:
    """The MCP server ``command`` bridged onto the broker at ``broker``; entered once its tools
    were offered, left with the bridge and the server stopped. ``options`` go to
    :class:`McpBridge` (``url=`` for a server reached over HTTP, with ``command`` None)."""
    bridge = McpBridge(broker, command=command, topic_prefix=prefix, **options)
    async with anyio.create_task_group() as group:
        with anyio.fail_after(60):
            await group.start(bridge.run)
        yield bridge
        group.cancel_scope.cancel()

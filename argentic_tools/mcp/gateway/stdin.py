"""The gateway's stdin: read without a worker thread, and refused with a reason.

:func:`cancellable_stdin` gives the SDK's stdio transport lines a cancellation does not
wait for; :func:`refuse_stdio` answers a client when the gateway cannot serve it.
"""

import asyncio
import os
import stat
import sys
from typing import Any

import anyio
import mcp_types as types

REFUSE_SECONDS = 30.0
"""How long :func:`refuse_stdio` answers a client that does not go away."""

STDIN_LINE_LIMIT = 64 * 1024 * 1024
"""Longest JSON-RPC message read from stdin."""


async def refuse_stdio(reason: str, *, seconds: float = REFUSE_SECONDS) -> None:
    """Answer each request on stdin with a JSON-RPC error carrying ``reason``.

    For a gateway that cannot serve (its broker is down): an MCP client shows the
    reason on its first request (``initialize``, or ``server/discover``) instead of
    just "Connection closed". Returns when the client closes stdin, or after
    ``seconds``; at once when stdin is a terminal (nobody there speaks JSON-RPC).
    """
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    if sys.stdin is None or sys.stdin.isatty():
        return
    stdin = await cancellable_stdin()
    error = types.ErrorData(code=types.INTERNAL_ERROR, message=reason)
    with anyio.move_on_after(seconds):
        async with stdio_server(stdin=stdin) as (read, write):
            async for message in read:
                if isinstance(message, Exception):
                    continue
                request = message.message
                if isinstance(request, types.JSONRPCRequest):
                    answer = types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error)
                    await write.send(SessionMessage(answer))


class StdinLines:
    """Lines of stdin read without a worker thread, so a stopping gateway is not held up.

    The SDK reads stdin in a thread, which a cancellation must wait for (until the
    client writes or closes): a gateway stopped by SIGTERM would hang there.
    """

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> "StdinLines":
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


async def cancellable_stdin() -> Any:
    """Stdin as :class:`StdinLines` when it is a pipe or a socket; else None (the SDK's).

    Not for a terminal: reading it this way makes it non-blocking, and a terminal is
    shared with the shell that started us.
    """
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):
        return None
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STDIN_LINE_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except (ValueError, OSError):  # a regular file or /dev/null: the SDK reads it
        return None
    return StdinLines(reader)

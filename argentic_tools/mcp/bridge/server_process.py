"""The MCP server a bridge starts: its process, its stdio streams, how it ended.

The SDK's ``stdio_client`` hides the process, so a server that dies is only an
``ExceptionGroup`` ("unhandled errors in a TaskGroup"). :class:`ServerProcess` is the
same transport (one JSON-RPC message a line on stdin and stdout, the server in its
own process group) that keeps what a log line needs: the exit status, the last
lines of stderr (which still reach the bridge's own stderr as they come), and a
clear error when the command does not exist. It also tells which call each message
of the server belongs to, from the order of the messages on the pipe
(:class:`~argentic_tools.mcp.bridge.origins.WireOrder`): each message the server writes
reaches the MCP client with that :data:`~argentic_tools.mcp.bridge.origins.ORIGIN`.
"""

import contextlib
import contextvars
import logging
import os
import signal
import sys
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence

import anyio
import anyio.abc
import mcp_types as types
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from .origins import (
    OUTSIDE_ANY_CALL,
    ContextReceiveStream,
    ContextSendStream,
    WireOrder,
    context_with,
)

logger = logging.getLogger("argentic_tools.mcp")

STDERR_LINES = 5
"""How many of the server's last stderr lines a log line quotes."""

STOP_SECONDS = 2.0
"""How long a server has to exit after its stdin closes, then after SIGTERM."""

INHERITED = "HOME, PATH, SHELL and TERM"
"""The bridge's variables a server gets (the MCP SDK's choice); others need ``env``."""


class ServerNotFoundError(OSError):
    """The command that starts the MCP server cannot be run (missing, not executable)."""


def leaves_of(exc: BaseException) -> list[BaseException]:
    """The exceptions an exception group holds, however nested (``exc`` itself otherwise)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves_of(inner)]
    return [exc]


def not_found_in(exc: BaseException) -> ServerNotFoundError | None:
    """The :class:`ServerNotFoundError` among ``exc``'s leaves, if any."""
    return next((leaf for leaf in leaves_of(exc) if isinstance(leaf, ServerNotFoundError)), None)


def failure_text(exc: BaseException) -> str:
    """Every leaf of ``exc`` in one line (its message, or its type when it has none)."""
    return "; ".join(str(leaf) or type(leaf).__name__ for leaf in leaves_of(exc))


class ServerProcess:
    """One MCP server command with its environment, started by :meth:`connect`.

    Args:
        command: The executable and its arguments.
        env: Variables set for the server on top of :data:`INHERITED`.

    """

    def __init__(self, command: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        self.command = list(command)
        self.env = dict(env or {})
        self.returncode: int | None = None
        """The exit status of the last run (negative: killed by that signal)."""
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_LINES)
        """The last lines the last run wrote to stderr."""
        self.exited = anyio.Event()
        """Set when the running server's stdout closes (it exited, or is exiting)."""

    def ending(self) -> str:
        """How the last run ended, for a log line: status and last stderr lines."""
        code = self.returncode
        if code is None:
            status = "closed its stdout"
        elif code < 0:
            try:
                status = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                status = f"was killed by signal {-code}"
        else:
            status = f"exited with status {code}"
        if self.stderr_tail:
            status += "; its last stderr lines: " + " | ".join(self.stderr_tail)
        return status

    @contextlib.asynccontextmanager
    async def connect(
        self,
    ) -> AsyncIterator[
        tuple[
            ContextReceiveStream[SessionMessage | Exception],
            ContextSendStream[SessionMessage],
        ]
    ]:
        """Start the server; yield the streams an MCP client session reads and writes.

        Each message read comes with the context its handler runs in, where
        :data:`~argentic_tools.mcp.bridge.origins.ORIGIN` says which call it belongs to.

        Raises:
            ServerNotFoundError: The command cannot be run.

        """
        self.returncode = None
        self.stderr_tail.clear()
        self.exited = anyio.Event()
        try:
            process = await anyio.open_process(
                self.command,
                env=get_default_environment() | self.env,
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            raise ServerNotFoundError(
                f"cannot start the MCP server {self.command[0]!r}: {exc.strerror}"
            ) from None
        incoming, received = anyio.create_memory_object_stream[
            tuple[contextvars.Context, SessionMessage | Exception]
        ](0)
        sending, outgoing = anyio.create_memory_object_stream[
            tuple[contextvars.Context, SessionMessage]
        ](0)
        read_stream = ContextReceiveStream(received)
        write_stream = ContextSendStream(sending)
        order = WireOrder()
        stderr_done = anyio.Event()

        async def read_stdout() -> None:
            assert process.stdout is not None
            buffer = b""
            async with incoming:
                with contextlib.suppress(
                    anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
                ):
                    async for chunk in process.stdout:
                        *lines, buffer = (buffer + chunk).split(b"\n")
                        for line in lines:
                            if line.strip():
                                item = _parse(line)
                                origin = (
                                    order.received(item.message)
                                    if isinstance(item, SessionMessage)
                                    else OUTSIDE_ANY_CALL
                                )
                                await incoming.send((context_with(origin), item))
            self.exited.set()

        async def write_stdin() -> None:
            assert process.stdin is not None
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async with outgoing:
                    async for sender, message in outgoing:
                        order.sent(message.message, sender)
                        text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await process.stdin.send(text.encode() + b"\n")

        async def read_stderr() -> None:
            assert process.stderr is not None
            buffer = b""
            try:
                with contextlib.suppress(
                    anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
                ):
                    async for chunk in process.stderr:
                        _echo(chunk)
                        *lines, buffer = (buffer + chunk).split(b"\n")
                        self.stderr_tail.extend(_text(line) for line in lines if line.strip())
                if buffer.strip():
                    self.stderr_tail.append(_text(buffer))
            finally:
                stderr_done.set()

        async with anyio.create_task_group() as group:
            group.start_soon(read_stdout)
            group.start_soon(write_stdin)
            group.start_soon(read_stderr)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                    self.returncode = process.returncode
                    with anyio.move_on_after(STOP_SECONDS):
                        await stderr_done.wait()  # the last lines it wrote before exiting
                group.cancel_scope.cancel()


async def _stop(process: anyio.abc.Process) -> None:
    """Close the server's stdin, then SIGTERM, then SIGKILL its process group."""
    assert process.stdin is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        with anyio.move_on_after(STOP_SECONDS):
            # Not wait(): it also waits for pipe EOF, which a server's child can hold off.
            while process.returncode is None:  # noqa: ASYNC110 - no event for an exit
                await anyio.sleep(0.01)
        if process.returncode is not None:
            return


def _echo(chunk: bytes) -> None:
    """The server's stderr on ours, as it comes."""
    buffer = getattr(sys.stderr, "buffer", None)
    if buffer is not None:
        buffer.write(chunk)
    else:
        sys.stderr.write(chunk.decode("utf-8", errors="replace"))
    sys.stderr.flush()


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


def _text(line: bytes) -> str:
    return line.decode("utf-8", errors="replace").rstrip()

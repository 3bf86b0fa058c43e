"""Streamed calls: :class:`ToolStream`, what ``ToolManager.stream_tool`` returns."""

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ...._protocol.messages import TaskErrorMessage, TaskStatus, ToolResult
from ..pending.progress import BrokenStreamError

if TYPE_CHECKING:
    from ..pending.pending import CallSpec

STREAM_CLOSE_SECONDS = 5.0
"""How long closing a stream early waits for its call to end (its TOOL_CANCEL is sent)."""

STREAM_BUFFER_CHUNKS = 1000
"""How many chunks a stream holds that its caller has not read yet, for a tool that does
not pace its stream by the reader (older than protocol 3; a tool that does never sends
more than :data:`~..pending.progress.STREAM_WINDOW` unread chunks). One more ends the call with
``stream_interrupted`` (``details``: ``unread``, ``limit``) and cancels it at the tool,
instead of holding every chunk the tool sends while nobody reads."""


class ToolStream:
    """The chunks of one streamed call, then its result.

    Iterate it with ``async for``; the call starts on the first iteration. Each
    chunk comes once, in the order the tool sent it. When the iteration ends,
    :attr:`result` holds the call's :class:`~argentic_tools.ToolResult` (for a
    generator tool, the list of all chunks); a failed call simply ends the
    iteration with its error as the result. Use ``async with`` (or call
    :meth:`aclose`) to cancel the call at the tool when you stop early.

    The stream is paced by its reader: the tool sends at most
    :data:`~..pending.progress.STREAM_WINDOW` chunks beyond those read, and waits while the
    reader is slower or stops reading; nothing is dropped. A reader that stops until
    the call's timeout ends the call with ``timeout`` (the error names the window and
    how many chunks were delivered), and reads the chunks already held before that
    result. A tool older than protocol 3 does not wait: past
    :data:`STREAM_BUFFER_CHUNKS` unread chunks its call ends with
    ``stream_interrupted`` naming that limit (the tool is told to stop).

    Example:
        >>> async with manager.stream_tool("crawl", {"url": url}) as stream:  # doctest: +SKIP
        ...     async for page in stream:
        ...         print(page)
        >>> stream.result.ok  # doctest: +SKIP
        True

    """

    def __init__(self, call: Callable[["CallSpec"], Awaitable[ToolResult]]) -> None:
        self._call = call
        self.spec: CallSpec | None = None
        """The call, as the manager checked it."""
        self.result: ToolResult | None = None
        """The final result once the iteration has ended (None before); ``cancelled``
        when the stream was closed before the end."""
        self._chunks: deque[Any] = deque()
        self._runner: asyncio.Task[None] | None = None
        self._wakeup: asyncio.Future[None] | None = None

    def chunk_arrived(self, chunk: Any) -> None:
        """Queue a chunk for the iteration (called in order, once per chunk).

        Raises:
            BrokenStreamError: :data:`STREAM_BUFFER_CHUNKS` chunks are unread already.

        """
        unread = len(self._chunks)
        if unread >= STREAM_BUFFER_CHUNKS:
            raise BrokenStreamError(
                f"the caller left {unread} chunks unread (a stream holds at most "
                f"{STREAM_BUFFER_CHUNKS}); read a stream as it comes, or call "
                "execute_tool for the whole result",
                {"unread": unread, "limit": STREAM_BUFFER_CHUNKS},
            )
        self._chunks.append(chunk)
        self._wake()

    def _wake(self) -> None:
        waiter = self._wakeup
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _start(self) -> asyncio.Task[None]:
        if self._runner is None:
            self._runner = asyncio.get_running_loop().create_task(
                self._run(), name=f"stream:{self.spec.name if self.spec else '?'}"
            )
            self._runner.add_done_callback(lambda _: self._wake())
        return self._runner

    async def _run(self) -> None:
        assert self.spec is not None
        self.result = await self._call(self.spec)

    def __aiter__(self) -> "ToolStream":
        return self

    async def __anext__(self) -> Any:
        runner = self._start()
        while True:
            if self._chunks:
                chunk = self._chunks.popleft()
                watch = self.spec.watch if self.spec is not None else None
                if watch is not None:
                    watch.taken()
                return chunk
            if runner.done():
                runner.result()  # a bug in the call itself surfaces here
                raise StopAsyncIteration
            self._wakeup = asyncio.get_running_loop().create_future()
            try:
                await self._wakeup
            finally:
                self._wakeup = None

    async def collect(self) -> ToolResult:
        """Run the call to its end, dropping the chunks, and return the result."""
        async for _ in self:
            pass
        assert self.result is not None
        return self.result

    async def aclose(self) -> None:
        """Stop: a call still running is cancelled at the tool (its TOOL_CANCEL is sent).

        :attr:`result` then says so (status ``cancelled``).
        """
        runner = self._runner
        if runner is None or runner.done():
            return
        runner.cancel()
        await asyncio.wait({runner}, timeout=STREAM_CLOSE_SECONDS)
        if self.result is None and self.spec is not None:
            name = self.spec.name
            self.result = TaskErrorMessage(
                task_id=self.spec.label or "",
                tool_id="unknown",
                tool_name=name,
                arguments=self.spec.arguments if isinstance(self.spec.arguments, dict) else None,
                call_id=self.spec.call_id,
                status=TaskStatus.CANCELLED,
                error=f"Tool '{name}' call was cancelled: the stream was closed before its end.",
                error_code="cancelled",
            )

    async def __aenter__(self) -> "ToolStream":
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

"""Which call a bridged server's request or log record belongs to.

An MCP server asks its client questions (``elicitation/create``,
``sampling/createMessage``) and logs to it (``notifications/message``) while it
serves one of the client's requests. The bridge is one client for all its callers,
so it must find the call behind each such message, and give it to that call's
caller only. :data:`ORIGIN` holds the answer in the context the MCP SDK runs its
callbacks in; the SDK's dispatcher runs each callback in the context that came with
the message on its read stream.

- **Streamable HTTP**: the server sends a request's messages on that request's own
  response stream. The SDK reads each such stream in a copy of the context of the task
  that sent the request, so a message on the stream of a call's ``tools/call`` comes
  with that call's :data:`ORIGIN`, set by the bridge around the call. Messages on the
  session's standalone stream come with none: they belong to no call.
- **stdio**: MCP says nothing on the wire about which request a message belongs to.
  :class:`WireOrder` sees the messages in the order they cross the pipe: a message read
  while exactly one request of the bridge is outstanding, and that request is a call's
  ``tools/call``, belongs to that call; with none or several outstanding it belongs to
  none (never guessed). A call the caller cancelled counts as outstanding for
  :data:`CANCELLED_GRACE_SECONDS` more, since the server may not have seen the
  cancellation yet. The bridge's ``subscriptions/listen`` (2026-07-28) stays open for
  good and is not counted: each message of its stream names it (``_meta``
  ``subscriptionId``), and such a message belongs to no call.

A message that belongs to no call is refused (a request) or dropped (a log record),
with the reason :data:`ORIGIN` gives.
"""

import contextvars
import dataclasses
import time
from collections.abc import Callable
from typing import Any, Generic, Self, TypeVar

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..._tools.call.context import ToolContext

LISTEN = "subscriptions/listen"
"""The long-lived request (2026-07-28) by which the bridge follows the server's changes."""

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
"""Where a message of a ``subscriptions/listen`` stream names it (in ``_meta``)."""

CANCELLED_GRACE_SECONDS = 10.0
"""How long a cancelled ``tools/call`` still counts as outstanding over stdio."""

_T = TypeVar("_T")


@dataclasses.dataclass(frozen=True)
class Origin:
    """The call a server's message belongs to, or why it belongs to none."""

    call: ToolContext | None
    """The call (its tool-side context: the way back to its caller)."""
    why: str = ""
    """With no call: why the message cannot be given to a caller."""


OUTSIDE_ANY_CALL = Origin(None, "it did not come with any call of the bridge")

ORIGIN: contextvars.ContextVar[Origin] = contextvars.ContextVar(
    "argentic_tools_mcp_origin", default=OUTSIDE_ANY_CALL
)
"""The call the message being handled belongs to (set around each bridged call)."""


class WireOrder:
    """The bridge's outstanding requests on one stdio connection, in wire order.

    Args:
        clock: Seconds, monotonic (for the grace of cancelled calls).

    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._outstanding: dict[types.RequestId, Origin] = {}
        self._cancelled: dict[types.RequestId, float] = {}
        """Ids of cancelled requests, with when they stop counting."""

    def sent(self, message: types.JSONRPCMessage, sender: contextvars.Context) -> None:
        """A message the bridge wrote; ``sender`` is the context of the task that wrote it."""
        if isinstance(message, types.JSONRPCRequest):
            if message.method == LISTEN:
                return  # its events carry its subscription id: they name their request
            call = message.method == "tools/call"
            origin = sender.get(ORIGIN, OUTSIDE_ANY_CALL) if call else Origin(None)
            self._outstanding[message.id] = origin
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
        ):
            request_id = (message.params or {}).get("requestId")
            if isinstance(request_id, str | int) and request_id in self._outstanding:
                self._cancelled[request_id] = self._clock() + CANCELLED_GRACE_SECONDS

    def received(self, message: types.JSONRPCMessage) -> Origin:
        """Where a message the server wrote belongs (read in order, one at a time)."""
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            if message.id is not None:
                self._outstanding.pop(message.id, None)
                self._cancelled.pop(message.id, None)
            return OUTSIDE_ANY_CALL
        params = getattr(message, "params", None)
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and SUBSCRIPTION_ID in meta:
            return Origin(None, "it came on the bridge's subscription to the server's changes")
        now = self._clock()
        for request_id, until in list(self._cancelled.items()):
            if until <= now:
                del self._cancelled[request_id]
                self._outstanding.pop(request_id, None)
        if not self._outstanding:
            return Origin(None, "no call was in flight when it came")
        if len(self._outstanding) > 1:
            return Origin(
                None,
                f"{len(self._outstanding)} requests of the bridge were in flight when it came,"
                " and over stdio MCP does not say which one a server's message belongs to",
            )
        (origin,) = self._outstanding.values()
        if origin.call is None:
            return Origin(None, "it came during a request of the bridge's own, not a call")
        return origin


class StreamWrapper:
    """A stream around another: closing it closes the other (``async with`` included)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def aclose(self) -> None:
        """Close the stream."""
        await self._inner.aclose()

    def close(self) -> None:
        """Close the stream."""
        self._inner.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class ContextSendStream(StreamWrapper, Generic[_T]):
    """A send stream that carries, with each item, the context of the task that sent it."""

    def __init__(self, inner: MemoryObjectSendStream[tuple[contextvars.Context, _T]]) -> None:
        super().__init__(inner)

    async def send(self, item: _T) -> None:
        """Send ``item`` with a copy of the current context."""
        await self._inner.send((contextvars.copy_context(), item))


class ContextReceiveStream(StreamWrapper, Generic[_T]):
    """A receive stream whose last item's context is ``last_context``.

    The MCP SDK's dispatcher reads ``last_context`` after each item and runs the
    item's handler in it.
    """

    def __init__(self, inner: MemoryObjectReceiveStream[tuple[contextvars.Context, _T]]) -> None:
        super().__init__(inner)
        self._items = inner
        self.last_context: contextvars.Context | None = None

    async def receive(self) -> _T:
        """The next item (its context in ``last_context``)."""
        context, item = await self._items.receive()
        self.last_context = context
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> _T:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


def context_stream_pair(
    max_buffer: int = 0,
) -> tuple[ContextSendStream[Any], ContextReceiveStream[Any]]:
    """A memory stream pair that carries each item's context."""
    send, receive = anyio.create_memory_object_stream[tuple[contextvars.Context, Any]](max_buffer)
    return ContextSendStream(send), ContextReceiveStream(receive)


def context_with(origin: Origin) -> contextvars.Context:
    """A copy of the current context in which :data:`ORIGIN` is ``origin``."""
    context = contextvars.copy_context()
    context.run(ORIGIN.set, origin)
    return context

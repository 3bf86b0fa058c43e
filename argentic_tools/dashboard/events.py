"""Server-sent events: what the dashboard pushes to every open page.

Each page holds one ``GET /api/events`` stream. It starts with a ``snapshot`` (the
whole state), then receives each change as it happens: ``call`` (a call started or
ended), ``tick`` (counters and the latest latency buckets, every second), ``fleet``
and ``tools``.

Events are delivered in batches, at most one every :data:`FLUSH_SECONDS`: what is
published meanwhile waits, a call's later state replaces its earlier one in the
waiting batch, and each batch is encoded once for every page. So the work per
message the dashboard observes stays the same however many pages are open, and the
observer keeps up with the bus (a page woken for each event cost the observer so
much time that mosquitto dropped its messages).

A page that reconnects (EventSource does so by itself) gets a fresh snapshot, so
nothing is lost by dropping a page that reads too slowly: its queue is bounded, and
when it overflows the stream ends and the page starts again.
"""

import contextlib
import json
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.types import Receive, Scope, Send

FLUSH_SECONDS = 0.05
"""Shortest time between two batches of events sent to the pages."""
QUEUE_BATCHES = 400
"""Batches queued for one page (20 s of a busy bus) before it is dropped as too slow."""
PING_SECONDS = 15.0
"""Seconds of silence after which a comment line keeps proxies from closing the stream."""


def frame(kind: str, data: Any) -> bytes:
    """One event in the ``text/event-stream`` format."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"event: {kind}\ndata: {text}\n\n".encode()


class EventHub:
    """Fans events out to the open streams in batches; never blocks the publisher.

    :meth:`run` delivers the batches: the events wait until it runs.
    """

    def __init__(self) -> None:
        self._streams: set[MemoryObjectSendStream[bytes]] = set()
        self._waiting: dict[Hashable, tuple[str, Callable[[], Any]]] = {}
        self._published = anyio.Event()
        self.closed = False

    @property
    def listening(self) -> bool:
        """True while some page has its stream open (else there is nothing to build)."""
        return bool(self._streams)

    def publish(self, kind: str, data: Any) -> None:
        """Queue an event for every open stream, in the next batch."""
        if self._streams:
            self._waiting[object()] = (kind, lambda: data)
            self._published.set()

    def publish_latest(self, kind: str, key: Hashable, build: Callable[[], Any]) -> None:
        """Queue an event built when its batch goes out; a later one with its key replaces it.

        A call that starts and ends within one batch is sent once, as it ended, and
        its data is built once for every page.
        """
        if self._streams:
            self._waiting[(kind, key)] = (kind, build)
            self._published.set()

    async def run(self) -> None:
        """Send the waiting events to every stream, at most every FLUSH_SECONDS, until cancelled."""
        while True:
            await self._published.wait()
            self._published = anyio.Event()
            self.flush()
            await anyio.sleep(FLUSH_SECONDS)

    def flush(self) -> None:
        """Send the waiting events to every open stream now, encoded once."""
        waiting, self._waiting = self._waiting, {}
        if not waiting or not self._streams:
            return
        batch = b"".join(frame(kind, build()) for kind, build in waiting.values())
        for stream in list(self._streams):
            try:
                stream.send_nowait(batch)
            except anyio.WouldBlock:
                # Too slow: end its stream; its page reconnects and gets a snapshot.
                self._streams.discard(stream)
                stream.close()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._streams.discard(stream)

    @contextlib.contextmanager
    def subscribe(self) -> Iterator[MemoryObjectReceiveStream[bytes]]:
        """A queue of the batches published from now on, closed when the block ends."""
        send, receive = anyio.create_memory_object_stream[bytes](QUEUE_BATCHES)
        with send, receive:
            if self.closed:
                send.close()
            else:
                self._streams.add(send)
            try:
                yield receive
            finally:
                self._streams.discard(send)

    def close(self) -> None:
        """End every stream (the server is stopping); later subscribers end at once."""
        self.closed = True
        self._waiting.clear()
        for stream in self._streams:
            stream.close()
        self._streams.clear()


class EventStream:
    """The ``/api/events`` endpoint, a plain ASGI application.

    It watches for the client leaving while it writes, so a closed page releases its
    queue at once rather than at the next write.

    Args:
        hub: Where the events come from.
        snapshot: Builds the first event, the whole state.

    """

    def __init__(self, hub: EventHub, snapshot: Callable[[], dict[str, Any]]) -> None:
        self.hub = hub
        self.snapshot = snapshot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream the snapshot, then every event, until the client or the server leaves."""
        head = scope["method"] == "HEAD"
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-store"),
                    (b"x-accel-buffering", b"no"),
                ],
            }
        )
        if head:  # the headers alone: the stream never ends
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        with self.hub.subscribe() as queue:
            async with anyio.create_task_group() as group:
                group.start_soon(_cancel_on_disconnect, receive, group.cancel_scope)
                with contextlib.suppress(OSError):  # the client left mid-write
                    await self._write(queue, send)
                group.cancel_scope.cancel()
        with contextlib.suppress(OSError):
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _write(self, queue: MemoryObjectReceiveStream[bytes], send: Send) -> None:
        body = frame("snapshot", self.snapshot())
        while True:
            await send({"type": "http.response.body", "body": body, "more_body": True})
            batches: list[bytes] = []
            with anyio.move_on_after(PING_SECONDS):
                try:
                    batches.append(await queue.receive())
                except anyio.EndOfStream:
                    return
            while batches:  # the batches that waited while this page was written to
                try:
                    batches.append(queue.receive_nowait())
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
            body = b"".join(batches) if batches else b": ping\n\n"


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()

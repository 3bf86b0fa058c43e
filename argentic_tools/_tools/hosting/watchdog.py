"""Noticing a tool that blocks its event loop, and saying which one and how to fix it.

An ``async def`` tool that calls something blocking (``time.sleep``, a sync HTTP
client, heavy computation) stops every other call of the process, and its MQTT
keepalive: past ~1.5 keepalives the broker declares the process dead. The
:class:`LoopWatchdog` runs a thread that watches a heartbeat the event loop
beats; when it stalls, the thread looks at the loop thread's stack to find the
tool's own code, and the tool's name goes into one warning with the fix.
"""

import asyncio
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from types import CodeType, FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..definition.definition import BaseTool

logger = logging.getLogger("argentic_tools.tool")

DEFAULT_BLOCKED_LOOP_SECONDS = 1.0
"""A stall of the event loop longer than this is reported."""


class LoopWatchdog:
    """Watches the running event loop for stalls caused by a tool.

    Args:
        tools: The tools served in this loop; their code is what the watchdog looks for.
        threshold: Seconds of stall that count as blocking.
        ping: Sends a keepalive from the watchdog's thread (``Messager.ping_while_blocked``).
        ping_every: Seconds between two pings while the loop stays blocked.

    """

    def __init__(
        self,
        tools: Iterable["BaseTool"],
        threshold: float,
        *,
        ping: Callable[[], bool] | None = None,
        ping_every: float = 5.0,
    ) -> None:
        self.threshold = threshold
        self.ping = ping
        self.ping_every = ping_every
        self.pings = 0
        """Keepalive pings sent while the loop was blocked."""
        self._codes: dict[CodeType, str] = {}
        for tool in tools:
            for code in _codes_of(tool):
                self._codes[code] = tool.name
        self._beat = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._blocked_since: float | None = None
        self._culprit: str | None = None
        self._reported: set[str] = set()
        self.stalls: list[tuple[str | None, float]] = []
        """Each stall seen: the tool found on the stack (None: not a tool), and seconds."""

    def start(self) -> None:
        """Start watching the running loop (from inside it)."""
        self._loop = asyncio.get_running_loop()
        self._stop = threading.Event()
        self._beat = time.monotonic()
        self._schedule()
        self._thread = threading.Thread(
            target=self._watch,
            args=(threading.get_ident(),),
            name="argentic-tools-loop-watchdog",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop watching."""
        self._stop.set()
        if self._handle is not None:
            self._handle.cancel()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _schedule(self) -> None:
        assert self._loop is not None
        self._handle = self._loop.call_later(self.threshold / 4, self._tick)

    def _tick(self) -> None:
        now = time.monotonic()
        stalled = now - self._beat
        self._beat = now
        if self._blocked_since is not None:
            culprit, self._culprit = self._culprit, None
            self._blocked_since = None
            self._report(culprit, stalled - self.threshold / 4)
        if not self._stop.is_set():
            self._schedule()

    def _watch(self, loop_thread: int) -> None:
        last_ping = 0.0
        while not self._stop.wait(min(self.threshold, self.ping_every) / 4):
            now = time.monotonic()
            since = self._blocked_since
            if since is None:
                if now - self._beat > self.threshold:
                    self._culprit = self._find_tool(sys._current_frames().get(loop_thread))
                    self._blocked_since = since = self._beat
                    last_ping = since
                else:
                    continue
            # Still blocked: keep the broker from declaring the process dead.
            if self.ping is not None and now - last_ping >= self.ping_every:
                last_ping = now
                if self.ping():
                    self.pings += 1

    def _find_tool(self, frame: FrameType | None) -> str | None:
        while frame is not None:
            name = self._codes.get(frame.f_code)
            if name is not None:
                return name
            frame = frame.f_back
        return None

    def _report(self, tool: str | None, seconds: float) -> None:
        self.stalls.append((tool, seconds))
        key = tool or ""
        level = logging.DEBUG if key in self._reported else logging.WARNING
        self._reported.add(key)
        if tool is None:
            logger.log(
                level,
                "the event loop was blocked for %.1f s, outside any tool's own code; no "
                "call was served meanwhile",
                seconds,
            )
            return
        logger.log(
            level,
            "tool %r blocked the event loop for %.1f s: no other call was served and the "
            "broker connection went unanswered meanwhile. It calls something blocking "
            "inside 'async def'; make it a plain 'def' (it then runs in a worker thread) "
            "or wrap the blocking part in 'await anyio.to_thread.run_sync(...)'",
            tool,
            seconds,
        )


def _codes_of(tool: "BaseTool") -> list[CodeType]:
    """The tool's own code objects: its function, or its class's ``_execute`` (not ours)."""
    candidates = (
        getattr(getattr(tool, "func", None), "__code__", None),
        getattr(getattr(type(tool), "_execute", None), "__code__", None),
    )
    return [
        code
        for code in candidates
        if isinstance(code, CodeType)
        and not os.path.abspath(code.co_filename).startswith(_LIBRARY + os.sep)
    ]


_LIBRARY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

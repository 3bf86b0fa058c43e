"""A stream paced by its reader: :class:`StreamCredit`, the tool's side of ``stream_window``.

A caller that streams with a window ``W`` (the task's ``stream_window``) lets the tool
send chunk ``seq`` only once ``seq < read + W``, where ``read`` is how many chunks its
reader has taken, as its latest ``TOOL_CREDIT`` says (0 before any). A chunk past that
waits here, in order, until a grant lets it go; meanwhile the tool's generator is not
advanced (see :class:`~.control.CallControl`). So a slow or idle reader slows the tool
down instead of filling the broker's queue for its connection, which drops what does
not fit.

This object only decides: it says which chunks may go now, and the call's
:class:`~.control.CallControl` publishes them.
"""

import time
from collections import deque


class StreamCredit:
    """The credit of one streamed call: what the reader has taken, and the chunks held.

    Args:
        window: Chunks the tool may send beyond what the reader has taken.

    """

    __slots__ = ("_held", "_next", "_paused_at", "read", "window")

    def __init__(self, window: int) -> None:
        self.window = window
        self.read = 0
        """Chunks the reader has taken, as the latest grant says."""
        self._next = 0  # chunks sent so far: the seq of the next one to go
        self._held: deque[bytes] = deque()
        self._paused_at: float | None = None

    @property
    def paused(self) -> bool:
        """True while a chunk waits for credit (the tool must not produce more)."""
        return bool(self._held)

    @property
    def held(self) -> int:
        """Chunks waiting for credit."""
        return len(self._held)

    @property
    def sent(self) -> int:
        """Chunks let go so far."""
        return self._next

    def offer(self, data: bytes) -> bool:
        """The next chunk in order is ready: True when it may go now; otherwise it is held.

        A pause starts when the first chunk is held (see :meth:`paused`).
        """
        if not self._held and self._next < self.read + self.window:
            self._next += 1
            return True
        if not self._held:
            self._paused_at = time.monotonic()
        self._held.append(data)
        return False

    def grant(self, read: int) -> list[bytes]:
        """The reader has taken ``read`` chunks: the held chunks that may go now, in order.

        A grant older than one already seen (they are cumulative) changes nothing.
        """
        if read <= self.read:
            return []
        self.read = read
        released: list[bytes] = []
        held = self._held
        while held and self._next < read + self.window:
            released.append(held.popleft())
            self._next += 1
        return released

    def end_pause(self) -> float | None:
        """Seconds the pause that just ended lasted (None when no pause has ended).

        Call after :meth:`grant` or :meth:`drop`: a pause ends when nothing is held.
        """
        started = self._paused_at
        if started is None or self._held:
            return None
        self._paused_at = None
        return time.monotonic() - started

    def drop(self) -> int:
        """The call is over: the held chunks never go. Returns how many there were."""
        dropped = len(self._held)
        self._held.clear()
        return dropped

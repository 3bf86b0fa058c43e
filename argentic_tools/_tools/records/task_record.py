"""The tool side's at-most-once record: which task ids ran, and their replies.

A task id is run once. A redelivered task (a manager re-sends tasks lost with a
restarted broker, or a restarted manager asks again for the calls in its journal) gets
the recorded reply again, or is ignored while it runs. Ids are kept at least until their
deadline has passed, and a finished task's reply for ``retention`` seconds, within
memory bounds.

A task's deadline on this side is its *local deadline*: the ``time.monotonic()`` by
which its caller stops waiting, counted from the task's receipt with the caller's
``timeout_seconds`` (:func:`local_deadline_from`). The absolute ``deadline`` a task may
carry comes from the caller's clock: it is only the *caller's deadline*, a hint.
"""

import math
import time
from collections import OrderedDict
from typing import Any

RECENT_TASKS = 4096
"""How many recent task ids a tool remembers to refuse re-executing a redelivered task.

Task ids whose deadline has not passed are kept beyond this, up to RECENT_TASKS_LIMIT:
past its deadline a redelivered task is refused anyway, so no task with a deadline can
run twice while a tool holds fewer than RECENT_TASKS_LIMIT of them."""

RECENT_TASKS_LIMIT = 65536
"""Hard bound on the remembered task ids, deadlines or not."""

KEPT_REPLIES_BYTES = 64 * 1024 * 1024
"""Total size of the replies kept for resending; past it, only the task ids are kept."""

CLOCK_SKEW_ALLOWANCE = 1.0
"""Seconds past a task's deadline (``time.monotonic()``, counted from its receipt) that
its id is kept before it may be forgotten."""

KEEP_REPLY_BYTES = 64 * 1024
"""Replies up to this size are kept for resending to a redelivered task; larger ones are not."""

DEFAULT_RESULT_RETENTION = 300.0
"""Seconds a tool keeps a finished task's reply by default, for a caller that comes back
(a restarted manager with a journal asks again), within the memory bounds above."""

RUNNING = object()
"""State of a task that started and has not finished."""
DONE = object()
"""State of a finished task whose reply was too large to keep."""


class TaskRecord:
    """Task ids a tool has started, oldest first, with the reply to resend when known."""

    __slots__ = ("_entries", "_kept_bytes", "retention")

    def __init__(self, retention: float = DEFAULT_RESULT_RETENTION) -> None:
        # task id -> [state or reply, time after which a redelivery is refused anyway]
        self._entries: OrderedDict[str, list[Any]] = OrderedDict()
        self._kept_bytes = 0
        self.retention = retention
        """Seconds a finished task's reply is kept at least (within the memory bounds)."""

    def get(self, task_id: str) -> Any:
        """``RUNNING``, ``DONE`` (reply not kept), the reply bytes, or None (not seen)."""
        entry = self._entries.get(task_id)
        return None if entry is None else entry[0]

    def remember(self, task_id: str, state: Any, expires: float) -> None:
        """Record a task that started; ``expires`` (monotonic) is 0 for one without a deadline."""
        self._entries[task_id] = [state, expires]
        self._evict()

    def finished(self, task_id: str, reply: bytes) -> None:
        """Keep the reply of a finished task, within the size limits."""
        entry = self._entries.get(task_id)
        if entry is None:
            return
        if self.retention > 0:
            entry[1] = max(entry[1], time.monotonic() + self.retention)
        size = len(reply)
        if size <= KEEP_REPLY_BYTES and self._kept_bytes + size <= KEPT_REPLIES_BYTES:
            entry[0] = reply
            self._kept_bytes += size
        else:
            entry[0] = DONE

    def _evict(self) -> None:
        entries = self._entries
        now = time.monotonic()
        while len(entries) > RECENT_TASKS:
            task_id, (state, expires) = next(iter(entries.items()))
            if len(entries) <= RECENT_TASKS_LIMIT and expires > now:
                return  # the oldest could still be redelivered and run: keep it
            del entries[task_id]
            if isinstance(state, bytes):
                self._kept_bytes -= len(state)


MAX_TASK_SECONDS = 7 * 24 * 3600.0
"""Longest timeout a task may ask for; longer ones are cut to this."""


def record_key(source: str | None, task_id: str) -> str:
    """The record's key: one caller's task ids never select another caller's reply."""
    return f"{source or ''}\x00{task_id}"


def local_deadline_from(timeout_seconds: float | None) -> float | None:
    """The local deadline: ``time.monotonic()`` by which the caller stops waiting, from now."""
    if timeout_seconds is None or not math.isfinite(timeout_seconds):
        return None
    return time.monotonic() + min(max(timeout_seconds, 0.0), MAX_TASK_SECONDS)


def keep_until(local_deadline: float | None, caller_deadline: float | None) -> float:
    """Until when (monotonic) a task id must be remembered; 0 when it has no deadline.

    The caller's deadline (Unix time) is only a hint from another clock, so it may only
    make the tool remember an id longer, never decide anything else.
    """
    until = 0.0 if local_deadline is None else local_deadline
    if caller_deadline is not None and math.isfinite(caller_deadline):
        remaining = min(caller_deadline - time.time(), MAX_TASK_SECONDS)
        until = max(until, time.monotonic() + remaining)
    return until + CLOCK_SKEW_ALLOWANCE if until else 0.0

"""Observations: the record of every call attempt, kept off the call path.

Every call attempt ends in one
:class:`Observation` handed to an :class:`ObservationRecorder` off the call
path, so a slow or failing recorder never delays or breaks a call.
"""

import asyncio
import contextlib
import dataclasses
import inspect
import json
import logging
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio.to_thread

from ..._protocol.messages import CallContext, TaskErrorMessage, ToolResult

logger = logging.getLogger("argentic_tools.observations")


@dataclasses.dataclass(frozen=True, slots=True)
class Observation:
    """The record of one call attempt, whatever its outcome.

    ``content`` holds the result's content blocks, if it had some, in MCP's JSON shapes
    (read back from a history, a block whose binary data was over the history's cap
    carries ``"__truncated__": true`` and its size in ``bytes`` instead of the data).

    ``exchanges`` holds what the tool and its caller said to each other during the call,
    in order: each a mapping with ``kind`` (``elicit``, ``sample`` or ``log``) and
    ``at_ms`` (milliseconds since the call began); a question has ``ask_id``,
    ``request`` and either ``answer`` or ``error`` (MCP's shapes), a log record has
    ``record`` (``level``, ``message``, ``data``, ``logger``).
    """

    call_id: str | None
    task_id: str
    tool_name: str
    tool_id: str | None
    thread_id: str | None
    trace_id: str | None
    status: str
    error_code: str | None
    duration_ms: float
    arguments: Any
    result: Any = None
    error: str | None = None
    timestamp: float = 0.0
    content: list[dict[str, Any]] | None = None
    exchanges: list[dict[str, Any]] | None = None
    reattached: bool = False
    """The call survived its caller's restart: a manager started on its journal picked it up."""
    user_id: str | None = None
    """On whose behalf the call was made (``CallContext.user_id``: an MCP gateway puts its
    caller's token subject there)."""

    def to_dict(self) -> dict[str, Any]:
        """The observation as a JSON-ready dictionary."""
        return dataclasses.asdict(self)


@runtime_checkable
class ObservationRecorder(Protocol):
    """Receives one observation per call attempt (sync or async ``record``)."""

    def record(self, observation: Observation) -> Awaitable[None] | None:
        """Store or forward ``observation``."""
        ...


class InMemoryRecorder:
    """Keeps observations in a list (bounded to the latest ``limit``)."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self.observations: list[Observation] = []

    def record(self, observation: Observation) -> None:
        """Append ``observation``, dropping the oldest beyond ``limit``."""
        self.observations.append(observation)
        if len(self.observations) > self.limit:
            del self.observations[: len(self.observations) - self.limit]


class JsonLinesRecorder:
    """Appends each observation as one JSON line to ``path`` (written in a worker thread)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    async def record(self, observation: Observation) -> None:
        """Append ``observation`` to the file."""
        line = json.dumps(observation.to_dict(), default=repr, ensure_ascii=False) + "\n"
        await anyio.to_thread.run_sync(self._append, line)

    def _append(self, line: str) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)


class ObservationPump:
    """Feeds observations to a recorder from a bounded queue in its own task."""

    def __init__(self, recorder: ObservationRecorder, maxsize: int = 10_000) -> None:
        self.recorder = recorder
        self._queue: asyncio.Queue[Observation] = asyncio.Queue(maxsize)
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0

    def submit(self, observation: Observation) -> None:
        """Queue ``observation``; when the recorder lags far behind, drop it and count it."""
        if self._task is None:
            self._task = asyncio.create_task(self._drain(), name="observation-recorder")
        try:
            self._queue.put_nowait(observation)
        except asyncio.QueueFull:
            self.dropped += 1

    async def flush(self) -> None:
        """Wait until every queued observation has been handed to the recorder."""
        if self._task is not None:
            await self._queue.join()

    async def close(self) -> None:
        """Stop the recorder task (queued observations not yet recorded are lost)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _drain(self) -> None:
        while True:
            observation = await self._queue.get()
            try:
                outcome = self.recorder.record(observation)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception("the observation recorder failed; the observation was dropped")
            finally:
                self._queue.task_done()


def observation_of(
    result: "ToolResult",
    context: "CallContext | None",
    exchanges: list[dict[str, Any]] | None = None,
) -> Observation:
    """The observation of one finished call (``exchanges``: what its tool and caller said)."""
    error = result if isinstance(result, TaskErrorMessage) else None
    return Observation(
        call_id=result.call_id,
        task_id=result.task_id,
        tool_name=result.tool_name,
        tool_id=result.tool_id if result.tool_id != "unknown" else None,
        thread_id=context.thread_id if context else None,
        trace_id=context.trace_id if context else None,
        user_id=context.user_id if context else None,
        status=result.status.value,
        error_code=error.error_code if error else None,
        duration_ms=result.duration_ms or 0.0,
        arguments=result.arguments,
        result=None if error else result.result,
        error=error.error if error else None,
        timestamp=time.time(),
        content=None if error or result.content is None else [b.wire() for b in result.content],
        exchanges=exchanges,
    )

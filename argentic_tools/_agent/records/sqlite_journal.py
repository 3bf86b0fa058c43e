"""The call journal in a SQLite file: :class:`SqliteJournal`.

One writer thread owns the file's write connection. What one turn of the event loop
queues goes to it as one batch; a call's ``begin`` waits for its batch: the writer takes
every batch queued at once, commits them in one transaction and then wakes the waiters
(group commit), so calls that start together share one commit and one hand-over.
Outcomes and progress are queued and written the same way without anyone waiting. The
file is in WAL mode with ``synchronous=NORMAL``: a committed call survives the process
being killed at any moment (not a power cut, which would need ``FULL`` and an fsync per
commit). Reads run in worker threads on connections of their
own, each after the writes queued before it are committed.

The journal is bounded: ended calls older than ``max_age_seconds``, and the oldest ended
calls beyond ``max_calls``, are deleted now and then. Calls still running are never
deleted.
"""

import asyncio
import contextlib
import json
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread

from .journal import RUNNING, JournaledCall

logger = logging.getLogger("argentic_tools.journal")

SCHEMA = """
CREATE TABLE IF NOT EXISTS journal (
    task_id TEXT PRIMARY KEY,
    label TEXT,
    call_id TEXT,
    tool_name TEXT NOT NULL,
    tool_id TEXT NOT NULL,
    tool_source TEXT,
    arguments TEXT,
    context TEXT,
    started_at REAL NOT NULL,
    timeout REAL,
    status TEXT NOT NULL,
    result TEXT,
    ended_at REAL,
    progress TEXT,
    restarts INTEGER NOT NULL DEFAULT 0,
    caller TEXT
);
CREATE INDEX IF NOT EXISTS journal_label ON journal (label) WHERE label IS NOT NULL;
CREATE INDEX IF NOT EXISTS journal_status ON journal (status, started_at);
"""

INSERT = (
    "INSERT OR REPLACE INTO journal (task_id, label, call_id, tool_name, tool_id, "
    "tool_source, arguments, context, started_at, timeout, status, result, ended_at, "
    "progress, restarts, caller) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

SELECT = (
    "SELECT task_id, label, call_id, tool_name, tool_id, tool_source, arguments, context, "
    "started_at, timeout, status, result, ended_at, progress, restarts, caller FROM journal"
)

PROGRESSED = "UPDATE journal SET progress = ? WHERE task_id = ? AND status = ?"
ENDED = "UPDATE journal SET status = ?, result = ?, ended_at = ? WHERE task_id = ?"

UNFINISHED = SELECT + " WHERE status = ? ORDER BY started_at"
FIND = SELECT + " WHERE label = ? OR task_id = ? ORDER BY started_at DESC LIMIT 1"
NEWEST = SELECT + " ORDER BY started_at DESC LIMIT ?"
NEWEST_WITH_STATUS = SELECT + " WHERE status = ? ORDER BY started_at DESC LIMIT ?"

DEFAULT_MAX_CALLS = 100_000
"""Ended calls a journal keeps by default (running ones are always kept)."""

DEFAULT_MAX_AGE_SECONDS = 7 * 24 * 3600.0
"""How long a journal keeps an ended call by default: 7 days."""

TRIM_INTERVAL_SECONDS = 60.0
"""How often, at most, the writer deletes what is past the bounds."""

DEFER_SECONDS = 0.05
"""Longest an outcome or progress report waits to be written with a batch of begun calls."""

BUSY_TIMEOUT_MS = 5000
"""How long a connection waits for another one's lock."""


class _Batch:
    """What one turn of the event loop queued for the writer.

    Its statements, and the futures to settle once they (and all before them) are committed.
    """

    __slots__ = ("loop", "statements", "waiters")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.statements: list[tuple[str, tuple[Any, ...]]] = []
        self.waiters: list[asyncio.Future[None]] = []

    def settle(self, error: BaseException | None) -> None:
        """From the writer thread: settle the waiters, in one wake-up of their loop."""
        if self.waiters:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                self.loop.call_soon_threadsafe(_settle, self.waiters, error)


def _settle(futures: "list[asyncio.Future[None]]", error: BaseException | None) -> None:
    for future in futures:
        if future.done():
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


_STOP = object()


class SqliteJournal:
    """A :class:`~.journal.CallJournal` in a SQLite file.

    Args:
        path: The journal's file (created with its folder when missing).
        max_calls: Ended calls kept; the oldest beyond it are deleted.
        max_age_seconds: Ended calls older than this are deleted.

    """

    def __init__(
        self,
        path: str | Path,
        *,
        max_calls: int = DEFAULT_MAX_CALLS,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
    ) -> None:
        self.path = Path(path)
        self.max_calls = max_calls
        self.max_age_seconds = max_age_seconds
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._open_batch: _Batch | None = None
        self._deferred: list[tuple[str, tuple[Any, ...]]] = []
        self._defer_timer: asyncio.TimerHandle | None = None
        self._writer: threading.Thread | None = None
        self._trimmed = 0.0

    # -- lifecycle ---------------------------------------------------------------------

    async def open(self) -> None:
        """Create the file and its table when missing, and start the writer."""
        if self._writer is not None:
            return
        await anyio.to_thread.run_sync(self._create)
        self._writer = threading.Thread(
            target=self._write_loop, name=f"journal:{self.path.name}", daemon=True
        )
        self._writer.start()

    async def close(self) -> None:
        """Write what is queued, then stop the writer."""
        writer = self._writer
        if writer is None:
            return
        await self._flush()
        self._queue.put(_STOP)
        await anyio.to_thread.run_sync(writer.join)
        self._writer = None

    def _create(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(self._connect()) as connection:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.executescript(SCHEMA)
            connection.commit()

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000)
        connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    # -- writes ------------------------------------------------------------------------

    async def begin(self, call: JournaledCall) -> None:
        """Keep ``call``; returns once it is committed."""
        row = (
            call.task_id,
            call.label,
            call.call_id,
            call.tool_name,
            call.tool_id,
            call.tool_source,
            _json(call.arguments),
            _json(call.context),
            call.started_at,
            call.timeout,
            call.status,
            _json(call.result),
            call.ended_at,
            _json(call.progress),
            call.restarts,
            call.caller,
        )
        self._put(INSERT, row)
        await self._flush()

    def progressed(self, task_id: str, progress: dict[str, Any]) -> None:
        """Queue the latest progress report of a running call (written within a moment)."""
        self._defer(PROGRESSED, (_json(progress), task_id, RUNNING))

    def ended(self, task_id: str, status: str, result: dict[str, Any] | str) -> None:
        """Queue a call's outcome (``result``: its fields, or already as JSON text).

        Written with the next call begun, or within :data:`DEFER_SECONDS`: an outcome not
        yet written when the process is killed only makes the next manager ask the tool
        again, which answers with the result it kept.
        """
        text = result if isinstance(result, str) else _json(result)
        self._defer(ENDED, (status, text, time.time(), task_id))

    async def resumed(self, task_ids: Sequence[str]) -> None:
        """Count one more restart for each call; returns once committed."""
        for task_id in task_ids:
            self._put("UPDATE journal SET restarts = restarts + 1 WHERE task_id = ?", (task_id,))
        await self._flush()

    def _put(self, sql: str, parameters: tuple[Any, ...]) -> None:
        """Queue a statement with the others of this turn of the event loop."""
        if self._writer is None:
            raise RuntimeError(f"the journal {self.path} is not open")
        self._batch().statements.append((sql, parameters))

    def _defer(self, sql: str, parameters: tuple[Any, ...]) -> None:
        """Queue a statement that may wait for the next batch (or :data:`DEFER_SECONDS`)."""
        if self._writer is None:
            raise RuntimeError(f"the journal {self.path} is not open")
        self._deferred.append((sql, parameters))
        if self._defer_timer is None and self._open_batch is None:
            loop = asyncio.get_running_loop()
            self._defer_timer = loop.call_later(DEFER_SECONDS, self._deferred_due)

    def _deferred_due(self) -> None:
        self._defer_timer = None
        if self._deferred:
            self._batch()

    async def _flush(self) -> None:
        """Wait until everything queued so far is committed."""
        batch = self._batch()
        future: asyncio.Future[None] = batch.loop.create_future()
        batch.waiters.append(future)
        await future

    def _batch(self) -> _Batch:
        # One hand-over to the writer thread per turn of the loop, not one per statement:
        # each wakes the writer, which then takes the GIL from the loop (with 100 calls in
        # flight, one per call cost a third of the throughput).
        batch = self._open_batch
        if batch is None:
            batch = self._open_batch = _Batch(asyncio.get_running_loop())
            batch.loop.call_soon(self._hand_over)
        return batch

    def _hand_over(self) -> None:
        batch, self._open_batch = self._open_batch, None
        if batch is None:
            return
        if self._deferred:
            batch.statements.extend(self._deferred)
            self._deferred = []
        if self._defer_timer is not None:
            self._defer_timer.cancel()
            self._defer_timer = None
        self._queue.put(batch)

    def _write_loop(self) -> None:
        connection = self._connect()
        try:
            while True:
                items = [self._queue.get()]
                with contextlib.suppress(queue.Empty):
                    while len(items) < 1_000:
                        items.append(self._queue.get_nowait())
                if self._write(connection, items):
                    return
        finally:
            connection.close()

    def _write(self, connection: sqlite3.Connection, items: list[Any]) -> bool:
        """Commit the batches in one transaction, then settle their waiters.

        Returns True when the stop was among them.
        """
        batches = [item for item in items if isinstance(item, _Batch)]
        error: BaseException | None = None
        # One executemany per statement, the calls begun first: an update only ever
        # concerns a call begun in this batch or before, and updates of one call keep
        # their order. A statement at a time cost ~20 us of GIL-held work per row.
        grouped: dict[str, list[tuple[Any, ...]]] = {INSERT: []}
        for batch in batches:
            for sql, parameters in batch.statements:
                grouped.setdefault(sql, []).append(parameters)
        try:
            with connection:
                for sql, rows in grouped.items():
                    if rows:
                        connection.executemany(sql, rows)
                self._trim(connection)
        except sqlite3.Error as exc:
            logger.error("the journal %s could not be written: %s", self.path, exc)
            error = OSError(f"the journal {self.path} could not be written: {exc}")
        for batch in batches:
            batch.settle(error)
        return any(item is _STOP for item in items)

    def _trim(self, connection: sqlite3.Connection) -> None:
        now = time.monotonic()
        if now - self._trimmed < TRIM_INTERVAL_SECONDS:
            return
        self._trimmed = now
        connection.execute(
            "DELETE FROM journal WHERE status != ? AND ended_at < ?",
            (RUNNING, time.time() - self.max_age_seconds),
        )
        connection.execute(
            "DELETE FROM journal WHERE task_id IN (SELECT task_id FROM journal "
            "WHERE status != ? ORDER BY ended_at DESC LIMIT -1 OFFSET ?)",
            (RUNNING, self.max_calls),
        )

    # -- reads -------------------------------------------------------------------------

    async def unfinished(self) -> list[JournaledCall]:
        """The calls that have not ended, oldest first."""
        return await self._read(UNFINISHED, (RUNNING,))

    async def find(self, key: str) -> JournaledCall | None:
        """The newest call labelled ``key``, or with task id ``key``."""
        found = await self._read(FIND, (key, key))
        return found[0] if found else None

    def lookup(self, key: str) -> JournaledCall | None:
        """:meth:`find`, read now in this thread (the command line reads a journal so)."""
        found = self._select(FIND, (key, key))
        return found[0] if found else None

    async def calls(self, status: str | None = None, limit: int = 100) -> list[JournaledCall]:
        """The newest calls first, all or those with ``status``."""
        if self._writer is not None:
            await self._flush()
        return await anyio.to_thread.run_sync(self.newest, status, limit)

    def newest(self, status: str | None = None, limit: int = 100) -> list[JournaledCall]:
        """:meth:`calls`, read now in this thread (the command line reads a journal so)."""
        if status is None:
            return self._select(NEWEST, (limit,))
        return self._select(NEWEST_WITH_STATUS, (status, limit))

    async def _read(self, sql: str, parameters: tuple[Any, ...]) -> list[JournaledCall]:
        if self._writer is not None:
            await self._flush()  # a read sees every write queued before it
        return await anyio.to_thread.run_sync(self._select, sql, parameters)

    def _select(self, sql: str, parameters: tuple[Any, ...]) -> list[JournaledCall]:
        if not self.path.exists():
            return []
        with contextlib.closing(self._connect()) as connection:
            return [_call(row) for row in connection.execute(sql, parameters)]


def _call(row: tuple[Any, ...]) -> JournaledCall:
    (
        task_id,
        label,
        call_id,
        tool_name,
        tool_id,
        tool_source,
        arguments,
        context,
        started_at,
        timeout,
        status,
        result,
        ended_at,
        progress,
        restarts,
        caller,
    ) = row
    return JournaledCall(
        task_id=task_id,
        label=label,
        call_id=call_id,
        tool_name=tool_name,
        tool_id=tool_id,
        tool_source=tool_source,
        arguments=_parsed(arguments),
        context=_parsed(context),
        started_at=started_at,
        timeout=timeout,
        status=status,
        result=_parsed(result),
        ended_at=ended_at,
        progress=_parsed(progress),
        restarts=restarts,
        caller=caller,
    )


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), default=repr)


def _parsed(text: str | None) -> Any:
    return None if text is None else json.loads(text)

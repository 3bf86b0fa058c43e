"""Persistent call history: :class:`SqliteRecorder`, and how to keep it elsewhere.

``ToolManager(messager, recorder=SqliteRecorder("calls.db"))`` keeps one row per
call attempt in a SQLite file (the standard library's ``sqlite3``, nothing to
install), and ``argentic-tools history --history calls.db`` reads it back. The file
outlives the manager: a restarted manager appends to it, and several manager
processes on one machine can write it at once (WAL mode, with a busy timeout).

Any object with a ``record(observation)`` method, plain or ``async``, is a recorder
(:class:`~argentic_tools.ObservationRecorder`), so the history can live in a server
database instead. The manager calls ``record`` from one background task, one
observation at a time, never on the call path. A recorder that awaits one insert
per observation is limited to one database round trip per call; at higher rates,
queue in ``record`` and write many rows at once, as :class:`SqliteRecorder` does.
For example, with PostgreSQL and a driver of your choice (here ``asyncpg``)::

    class PostgresRecorder:
        def __init__(self, pool: asyncpg.Pool) -> None:
            self.pool = pool

        async def record(self, observation: Observation) -> None:
            row = observation.to_dict()
            row["arguments"] = json.dumps(row["arguments"], default=repr)
            row["result"] = json.dumps(row["result"], default=repr)
            await self.pool.execute(
                "INSERT INTO calls (task_id, tool_name, status, error_code, "
                "duration_ms, ended_at, arguments, result) "
                "VALUES ($1, $2, $3, $4, $5, to_timestamp($6), $7, $8)",
                row["task_id"], row["tool_name"], row["status"], row["error_code"],
                row["duration_ms"], row["timestamp"], row["arguments"], row["result"],
            )

    ToolManager(messager, recorder=PostgresRecorder(pool))
"""

import asyncio
import atexit
import contextlib
import dataclasses
import json
import logging
import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Unpack

from ..._lifecycle import AsyncResource
from .calls_table import (
    BUSY_TIMEOUT_MS,
    INSERT,
    SCHEMA,
    TRUNCATED,
    CallFilter,
    add_new_columns,
    read_calls,
)
from .observations import Observation

logger = logging.getLogger("argentic_tools.history")

DEFAULT_MAX_AGE_SECONDS = 30 * 24 * 3600.0
"""How long :class:`SqliteRecorder` keeps a call by default: 30 days."""

TRIM_INTERVAL_SECONDS = 60.0
"""Rows past ``max_age_seconds`` are deleted at least this often while the recorder runs."""

EXIT_WRITE_SECONDS = 5.0
"""How long the interpreter's exit waits for a recorder nobody closed to write its queue."""

FAILURE_REPORT_SECONDS = 600.0
"""While writes keep failing, a line says so (with the count lost) at most this often."""


@dataclasses.dataclass(slots=True)
class _Marker:
    """A flush (or the stop) in the writer's queue: resolved once everything before it is done."""

    loop: asyncio.AbstractEventLoop | None
    future: "asyncio.Future[None] | None"
    stop: bool = False

    def resolve(self) -> None:
        if self.loop is None or self.future is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            self.loop.call_soon_threadsafe(_set_done, self.future)


def _set_done(future: "asyncio.Future[None]") -> None:
    if not future.done():
        future.set_result(None)


class _Outage:
    """The writer's failed writes since the last one that worked: said once, then counted.

    The first failed batch is logged with its cause. Later ones are counted silently,
    with one reminder at most every :data:`FAILURE_REPORT_SECONDS`: a file that cannot
    be written fails every batch (several a second under load), and a line each would
    bury the log. The first batch written again logs how many calls were lost, as does
    a recorder closed before that. Only the writer thread uses it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.batches = 0
        self.calls = 0
        self.started = 0.0
        self.reported = 0.0

    @property
    def ongoing(self) -> bool:
        return self.batches > 0

    def failed(self, calls: int, error: Exception) -> None:
        now = time.monotonic()
        self.batches += 1
        self.calls += calls
        if self.batches == 1:
            self.started = self.reported = now
            logger.error(
                "%d calls could not be written to %s: %s; until writing works again, "
                "further failures are counted, not logged one by one",
                calls,
                self.path,
                error,
            )
        elif now - self.reported >= FAILURE_REPORT_SECONDS:
            self.reported = now
            logger.error(
                "the call history at %s still cannot be written (%s): %s lost so far",
                self.path,
                error,
                self._lost(now),
            )

    def succeeded(self) -> None:
        if self.ongoing:
            logger.warning(
                "the call history at %s is written again; %s were lost",
                self.path,
                self._lost(time.monotonic()),
            )
            self.batches = self.calls = 0

    def ended(self) -> None:
        if self.ongoing:
            logger.error(
                "the call history at %s was closed before writing worked again; %s were lost",
                self.path,
                self._lost(time.monotonic()),
            )
            self.batches = self.calls = 0

    def _lost(self, now: float) -> str:
        calls = "call" if self.calls == 1 else "calls"
        batches = "batch" if self.batches == 1 else "batches"
        return f"{self.calls} {calls} in {self.batches} {batches} over {now - self.started:.0f} s"


class SqliteRecorder(AsyncResource):
    """Keeps every call attempt in a SQLite file, written in batches by its own thread.

    ``record`` only queues the observation, so the event loop never waits for the
    disk: a thread with its own connection writes each batch in one transaction.
    The table ``calls`` has a column per :class:`~argentic_tools.Observation` field
    (``ended_at`` is its ``timestamp``; ``started_at`` is that minus the duration),
    arguments and results as JSON text, and indexes by tool, thread, status and
    time. Old rows are deleted every tenth of ``max_rows`` rows written, every
    minute, and when the recorder closes, never row by row; between trims the table
    may hold that tenth more.

    A batch that cannot be written (a read-only file, a full disk) is dropped and
    counted in :attr:`dropped`; calls go on as before. The first such failure is
    logged; later ones are counted, with a reminder every
    :data:`FAILURE_REPORT_SECONDS` at most, until a batch is written again, which logs
    how many calls were lost.

    ``async with SqliteRecorder(path) as recorder`` opens the file (raising if it
    cannot) and closes it, after writing everything queued, on the way out; a
    recorder handed to a manager without that starts with the first observation,
    and writes what is left when the interpreter exits. Several processes may write
    one file, on one machine (not over a network file system).

    Args:
        path: The SQLite file; created, with its table, if missing.
        max_rows: Rows kept at most, the most recently written ones (None: no limit).
        max_age_seconds: Calls that ended longer ago than this are deleted (None:
            kept until ``max_rows`` pushes them out).
        max_argument_bytes: Arguments and results longer than this as JSON (in UTF-8
            bytes) are replaced by ``{"__truncated__": true, "bytes": N, "preview":
            "<the JSON text, cut>"}``, in this many bytes; longer error messages are cut.
            Content blocks lose their largest binary data to fit it, and the call's
            exchanges (its questions, answers and log records) their binary data, their
            long texts, and then the last exchanges, counted in a final log record.
        batch_size: Rows written in one transaction at most.
        flush_interval: Seconds an observation may wait for others to fill its batch.
        max_pending: Observations queued for the writer at most; beyond that, while
            the disk lags far behind, new ones are dropped and counted in
            :attr:`dropped`.

    Example:
        >>> async with SqliteRecorder("calls.db") as recorder:  # doctest: +SKIP
        ...     async with ToolManager(messager, recorder=recorder) as manager:
        ...         await manager.execute_tool("add", {"a": 1})
        >>> SqliteRecorder("calls.db").query(tool="add", limit=10)  # doctest: +SKIP

    """

    def __init__(
        self,
        path: str | Path,
        *,
        max_rows: int | None = 1_000_000,
        max_age_seconds: float | None = DEFAULT_MAX_AGE_SECONDS,
        max_argument_bytes: int = 16_384,
        batch_size: int = 500,
        flush_interval: float = 0.2,
        max_pending: int = 100_000,
    ) -> None:
        if max_rows is not None and max_rows < 1:
            raise ValueError(f"max_rows must be at least 1 (or None), not {max_rows}")
        if max_age_seconds is not None and not max_age_seconds > 0:
            raise ValueError(f"max_age_seconds must be above 0 (or None), not {max_age_seconds}")
        if max_argument_bytes < 128:
            raise ValueError(f"max_argument_bytes must be at least 128, not {max_argument_bytes}")
        if batch_size < 1 or max_pending < 1:
            raise ValueError("batch_size and max_pending must be at least 1")
        if not flush_interval >= 0:
            raise ValueError(f"flush_interval must be 0 or more, not {flush_interval}")
        self.path = Path(path)
        self.max_rows = max_rows
        self.max_age_seconds = max_age_seconds
        self.max_argument_bytes = max_argument_bytes
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.max_pending = max_pending
        self._queue: queue.SimpleQueue[Observation | _Marker] = queue.SimpleQueue()
        self._lock = threading.Lock()  # guards the fields below, shared with the writer
        self._thread: threading.Thread | None = None
        self._accepting = True
        self._stop: _Marker | None = None
        self._opened = False
        self._dropped = 0
        self._warned = False
        self._failure: sqlite3.Error | OSError | None = None
        self._held: list[_Marker] = []  # the writer's own: markers taken, not resolved yet
        self._outage = _Outage(self.path)  # the writer's own too
        # One encoder for every row: json.dumps with options would build one per call.
        self._encode = json.JSONEncoder(
            ensure_ascii=False, separators=(",", ":"), default=repr
        ).encode

    @property
    def dropped(self) -> int:
        """Observations not written: the queue was full, the recorder closed, or a write failed."""
        return self._dropped

    # -- the event loop's side --------------------------------------------------------

    def record(self, observation: Observation) -> None:
        """Queue ``observation`` for the writer thread; returns at once."""
        with self._lock:
            if self._accepting and self._queue.qsize() < self.max_pending:
                if self._thread is None:
                    self._start_writer()
                self._queue.put(observation)
                return
            self._dropped += 1
            warn, self._warned = not self._warned, True
        if warn:
            state = "is closed" if not self._accepting else "lags behind"
            logger.warning(
                "the call history at %s %s; observations are dropped (see .dropped)",
                self.path,
                state,
            )

    async def start(self) -> None:
        """Open the file, creating its table if needed (``async with`` does this).

        Raises:
            RuntimeError: Started twice, or after :meth:`close`.
            sqlite3.Error: The file cannot be opened or is not a database.
            OSError: The file cannot be opened.

        """
        with self._lock:
            if self._opened or not self._accepting:
                raise RuntimeError("this SqliteRecorder was already started")
            self._opened = True
            if self._thread is None:
                self._start_writer()
        await self.flush()
        if self._failure is not None:
            raise self._failure

    async def flush(self) -> None:
        """Wait until every observation recorded so far is written (or counted as dropped)."""
        marker = self._enqueue_marker(stop=False)
        if marker is not None and marker.future is not None:
            await asyncio.shield(marker.future)

    async def close(self) -> None:
        """Write what is queued, delete old rows and close the file; safe to call twice."""
        marker = self._enqueue_marker(stop=True)
        if marker is not None and marker.future is not None:
            await asyncio.shield(marker.future)
        atexit.unregister(self._close_at_exit)

    async def _open_resource(self) -> None:
        await self.start()

    async def _close_resource(self) -> None:
        await self.close()

    def _enqueue_marker(self, *, stop: bool) -> _Marker | None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._stop is not None:
                # Already stopping: wait for the same end (from the loop that asked for it).
                return self._stop if self._stop.loop is loop else None
            if self._thread is None or not self._accepting:
                # Nothing was ever queued, or the writer has ended (and released everyone).
                self._accepting = self._accepting and not stop
                return None
            marker = _Marker(loop, loop.create_future(), stop)
            if stop:
                self._accepting = False
                self._stop = marker
            self._queue.put(marker)
            return marker

    def _start_writer(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"sqlite-recorder:{self.path.name}", daemon=True
        )
        self._thread.start()
        atexit.register(self._close_at_exit)

    def _close_at_exit(self) -> None:
        # A daemon thread dies with the interpreter: write what is queued first.
        with self._lock:
            if self._thread is None or self._stop is not None:
                return
            self._accepting = False
            self._stop = _Marker(None, None, stop=True)
            self._queue.put(self._stop)
        self._thread.join(EXIT_WRITE_SECONDS)

    # -- the writer thread --------------------------------------------------------------

    def _run(self) -> None:
        connection: sqlite3.Connection | None = None
        try:
            connection = self._connect()
            self._trim(connection)
            self._serve(connection)
        except (sqlite3.Error, OSError) as exc:
            self._failure = exc
            logger.error("the call history at %s cannot be written: %s", self.path, exc)
        finally:
            self._outage.ended()
            if connection is not None:
                with contextlib.suppress(sqlite3.Error):
                    connection.close()
            self._finish()

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None
        )
        try:
            connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                logger.warning("the call history at %s is not in WAL mode (%s)", self.path, mode)
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.executescript(SCHEMA)
            add_new_columns(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    def _serve(self, connection: sqlite3.Connection) -> None:
        trim_every = max(1, self.max_rows // 10) if self.max_rows is not None else None
        written_since_trim = 0
        last_trim = time.monotonic()
        while True:
            batch, stop = self._take_batch()
            if batch:
                self._write(connection, batch)
                written_since_trim += len(batch)
            age_due = (
                self.max_age_seconds is not None
                and time.monotonic() - last_trim >= TRIM_INTERVAL_SECONDS
            )
            rows_due = trim_every is not None and written_since_trim >= trim_every
            if stop or age_due or rows_due:
                self._trim(connection)
                written_since_trim, last_trim = 0, time.monotonic()
            if stop:
                return  # _finish resolves the markers once the file is closed
            for marker in self._held:
                marker.resolve()
            self._held.clear()

    def _take_batch(self) -> tuple[list[Observation], bool]:
        """Up to ``batch_size`` observations, cut short by a marker; and whether to stop."""
        batch: list[Observation] = []
        try:
            item = self._queue.get(timeout=TRIM_INTERVAL_SECONDS)
        except queue.Empty:
            return batch, False
        deadline = time.monotonic() + self.flush_interval
        while True:
            if isinstance(item, _Marker):
                self._held.append(item)
                return batch, item.stop
            batch.append(item)
            if len(batch) >= self.batch_size:
                return batch, False
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return batch, False
                try:
                    item = self._queue.get(timeout=remaining)
                except queue.Empty:
                    return batch, False

    def _write(self, connection: sqlite3.Connection, batch: list[Observation]) -> None:
        rows = []
        for observation in batch:
            try:
                rows.append(self._row(observation))
            except Exception:
                logger.exception("an observation could not be stored; it was dropped")
                self._count_dropped(1)
        try:
            connection.execute("BEGIN IMMEDIATE")
            connection.executemany(INSERT, rows)
            connection.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            self._count_dropped(len(rows))
            self._outage.failed(len(rows), exc)
        else:
            self._outage.succeeded()

    def _trim(self, connection: sqlite3.Connection) -> None:
        if self.max_age_seconds is None and self.max_rows is None:
            return
        try:
            connection.execute("BEGIN IMMEDIATE")
            if self.max_age_seconds is not None:
                oldest = time.time() - self.max_age_seconds
                connection.execute("DELETE FROM calls WHERE ended_at < ?", (oldest,))
            if self.max_rows is not None:
                connection.execute(
                    "DELETE FROM calls WHERE id <= "
                    "(SELECT id FROM calls ORDER BY id DESC LIMIT 1 OFFSET ?)",
                    (self.max_rows,),
                )
            connection.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            if not self._outage.ongoing:  # else the file's failing writes are said already
                logger.warning("old calls could not be deleted from %s: %s", self.path, exc)

    def _finish(self) -> None:
        """Refuse new observations and release everyone waiting on the writer."""
        leftovers: list[Observation | _Marker] = []
        with self._lock:
            self._accepting = False
            with contextlib.suppress(queue.Empty):
                while True:
                    leftovers.append(self._queue.get_nowait())
        markers = [item for item in leftovers if isinstance(item, _Marker)]
        self._count_dropped(len(leftovers) - len(markers))
        for marker in [*self._held, *markers]:
            marker.resolve()
        self._held.clear()

    def _count_dropped(self, count: int) -> None:
        if count:
            with self._lock:
                self._dropped += count

    def _row(self, observation: Observation) -> tuple[Any, ...]:
        ended = float(observation.timestamp or time.time())
        duration = float(observation.duration_ms or 0.0)
        return (
            _text(observation.call_id),
            str(observation.task_id),
            str(observation.tool_name),
            _text(observation.tool_id),
            _text(observation.thread_id),
            _text(observation.trace_id),
            str(observation.status),
            _text(observation.error_code),
            None if observation.error is None else self._cut(str(observation.error)),
            duration,
            ended - duration / 1000,
            ended,
            self._json(observation.arguments),
            self._json(observation.result),
            self._content(observation.content),
            self._exchanges(observation.exchanges),
            _text(observation.user_id),
        )

    def _content(self, blocks: list[dict[str, Any]] | None) -> str | None:
        """Content blocks as JSON within the cap: the largest binary data goes first."""
        if blocks is None:
            return None
        text = self._encode(blocks)
        if _size(text) <= self.max_argument_bytes:
            return text
        kept = [dict(block) for block in blocks]
        binaries = sorted(
            (len(_binary(block) or ""), index) for index, block in enumerate(kept) if _binary(block)
        )
        while binaries and _size(text) > self.max_argument_bytes:
            _, index = binaries.pop()
            kept[index] = _without_data(kept[index])
            text = self._encode(kept)
        return self._json(kept)

    def _exchanges(self, exchanges: list[dict[str, Any]] | None) -> str | None:
        """The call's exchanges as JSON within the cap: each slimmed, then the first that fit.

        Binary data (an image a tool showed the caller's model) is replaced by its size and
        long texts are cut (:func:`_slim`); the exchanges that still do not fit are left
        out, counted in a last log record, as a call's exchanges past their count are.
        """
        if exchanges is None:
            return None
        text = self._encode(exchanges)
        if _size(text) <= self.max_argument_bytes:
            return text
        limit = max(64, self.max_argument_bytes // 8)
        budget = self.max_argument_bytes - _size(self._encode(_not_kept(len(exchanges)))) - 2
        kept: list[Any] = []
        for index, exchange in enumerate(exchanges):
            slim = _slim(exchange, limit)
            size = _size(self._encode(slim)) + 1
            if size > budget:
                kept.append(_not_kept(len(exchanges) - index))
                break
            kept.append(slim)
            budget -= size
        return self._encode(kept)

    def _json(self, value: Any) -> str | None:
        if value is None:
            return None
        text = self._encode(value)
        size = _size(text)
        if size <= self.max_argument_bytes:
            return text
        preview = text.encode()[: self.max_argument_bytes].decode(errors="ignore")
        while True:
            cut = json.dumps(
                {TRUNCATED: True, "bytes": size, "preview": preview}, ensure_ascii=False
            )
            excess = len(cut.encode()) - self.max_argument_bytes
            if excess <= 0 or not preview:
                return cut
            preview = preview[: max(0, len(preview) - excess)]

    def _cut(self, text: str) -> str:
        encoded = text.encode()
        if len(encoded) <= self.max_argument_bytes:
            return text
        note = f" [cut: {len(encoded)} bytes]"
        return encoded[: self.max_argument_bytes - len(note)].decode(errors="ignore") + note

    # -- reading ------------------------------------------------------------------------

    def query(self, **filters: Unpack[CallFilter]) -> list[Observation]:
        """The calls kept in the file, newest first (see :func:`read_calls`)."""
        return read_calls(self.path, **filters)


def _size(text: str) -> int:
    """Bytes of ``text`` in UTF-8."""
    return len(text) if text.isascii() else len(text.encode())


def _binary(block: dict[str, Any]) -> str | None:
    """A block's base64 data (an image's or audio's ``data``, a resource's ``blob``)."""
    resource = block.get("resource")
    data = resource.get("blob") if isinstance(resource, dict) else block.get("data")
    return data if isinstance(data, str) else None


def _without_data(block: dict[str, Any]) -> dict[str, Any]:
    """The block with its binary data replaced by its size."""
    size = len((_binary(block) or "").rstrip("=")) * 3 // 4
    resource = block.get("resource")
    if isinstance(resource, dict):
        inner = {key: value for key, value in resource.items() if key != "blob"}
        return {**block, "resource": {**inner, TRUNCATED: True, "bytes": size}}
    stripped = {key: value for key, value in block.items() if key != "data"}
    return {**stripped, TRUNCATED: True, "bytes": size}


def _slim(value: Any, limit: int) -> Any:
    """``value`` with binary data replaced by its size and strings past ``limit`` cut."""
    if isinstance(value, str):
        return value if len(value) <= limit else f"{value[:limit]}… [cut: {_size(value)} bytes]"
    if isinstance(value, list):
        return [_slim(item, limit) for item in value]
    if not isinstance(value, dict):
        return value
    if _binary(value) is not None and value.get("type") in ("image", "audio", "resource"):
        value = _without_data(value)
    return {key: _slim(item, limit) for key, item in value.items()}


def _not_kept(count: int) -> dict[str, Any]:
    """The log record that ends exchanges cut at the history's cap."""
    return {
        "kind": "log",
        "record": {
            "level": "warning",
            "message": f"{count} more exchanges not kept (the history's size cap)",
            "data": None,
            "logger": None,
        },
    }


def _text(value: Any) -> str | None:
    return None if value is None else str(value)

"""The calls table of a call history: its schema, and reading it back.

:class:`~argentic_tools.SqliteRecorder` writes one row per call attempt here;
:func:`read_calls` reads them back without a recorder or a manager (the
``history`` command, the dashboard).
"""

import json
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict, Unpack

from .observations import Observation

BUSY_TIMEOUT_MS = 10_000
"""How long a write waits for another process's transaction on the same file."""

TRUNCATED = "__truncated__"
"""Key of the object that stands for arguments or a result cut at ``max_argument_bytes``."""

SCHEMA = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY,
    call_id TEXT,
    task_id TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    tool_id TEXT,
    thread_id TEXT,
    trace_id TEXT,
    status TEXT NOT NULL,
    error_code TEXT,
    error TEXT,
    duration_ms REAL NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL NOT NULL,
    arguments TEXT,
    result TEXT,
    content TEXT,
    exchanges TEXT,
    user_id TEXT
);
CREATE INDEX IF NOT EXISTS calls_by_time ON calls (ended_at);
CREATE INDEX IF NOT EXISTS calls_by_tool ON calls (tool_name, ended_at);
CREATE INDEX IF NOT EXISTS calls_by_thread ON calls (thread_id, ended_at);
CREATE INDEX IF NOT EXISTS calls_by_status ON calls (status, ended_at);
COMMIT;
"""

INSERT = (
    "INSERT INTO calls (call_id, task_id, tool_name, tool_id, thread_id, trace_id, status, "
    "error_code, error, duration_ms, started_at, ended_at, arguments, result, content, "
    "exchanges, user_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

READ: dict[str, str] = {
    "call_id": "call_id",
    "task_id": "task_id",
    "tool_name": "tool_name",
    "tool_id": "tool_id",
    "thread_id": "thread_id",
    "trace_id": "trace_id",
    "status": "status",
    "error_code": "error_code",
    "duration_ms": "duration_ms",
    "arguments": "arguments",
    "result": "result",
    "error": "error",
    "timestamp": "ended_at",
    "content": "content",
    "exchanges": "exchanges",
    "user_id": "user_id",
}
"""Each :class:`~argentic_tools.Observation` field read back, and its column."""

SELECT = "SELECT {columns} FROM calls"

JSON_FIELDS = ("arguments", "result", "content", "exchanges")
"""The fields kept as JSON text."""

ADDED_COLUMNS = ("content", "exchanges", "user_id")
"""Columns a history written by an older version lacks (content blocks, exchanges, the
caller's user): added when a recorder opens it, read as NULL until then."""


def add_new_columns(connection: sqlite3.Connection) -> None:
    """Give a history written by an older version the columns it lacks (:data:`ADDED_COLUMNS`)."""
    present = _columns(connection)
    for column in ADDED_COLUMNS:
        if column in present:
            continue
        try:
            connection.execute(f"ALTER TABLE calls ADD COLUMN {column} TEXT")
        except sqlite3.OperationalError as exc:
            if "duplicate column" not in str(exc):  # another process added it just now
                raise
    connection.execute("CREATE INDEX IF NOT EXISTS calls_by_user ON calls (user_id, ended_at)")


def _columns(connection: sqlite3.Connection) -> set[str]:
    return {row[1] for row in connection.execute("PRAGMA table_info(calls)")}


class CallFilter(TypedDict, total=False):
    """Which calls of a history to read, all optional.

    :func:`read_calls` and :meth:`~argentic_tools.SqliteRecorder.query` take these keywords.
    """

    tool: str | None
    """Only calls to this tool name."""
    thread: str | None
    """Only calls made in this conversation thread."""
    outcome: str | None
    """Only calls with this status (``success``, ``error``, ``failed``, ``timeout``,
    ``cancelled``) or this error code (``not_found``, ``invalid_arguments``, ...)."""
    since: float | datetime | None
    """Only calls that ended at or after this time (Unix seconds or a datetime; a naive
    datetime is local time)."""
    until: float | datetime | None
    """Only calls that ended before this time."""
    limit: int | None
    """The newest calls at most (None: all; 100 when not given)."""
    call: str | None
    """Only the call (its attempts) with this task id or call id."""
    user: str | None
    """Only calls made on behalf of this user (``CallContext.user_id``: an MCP gateway's
    caller, the subject of its token)."""


_FILTERS = frozenset(CallFilter.__optional_keys__)


def read_calls(path: Path, **filters: Unpack[CallFilter]) -> list[Observation]:
    """The calls kept in the history file ``path``, newest first (as written so far).

    Needs no manager and no running recorder: the file is opened read-only for
    the query. It blocks; from async code, run it in a thread
    (``await anyio.to_thread.run_sync(partial(recorder.query, tool="add"))``).

    Args:
        path: The history file (opened read-only).
        **filters: Which calls (see :class:`CallFilter`); the newest 100 without any.

    Raises:
        FileNotFoundError: There is no file at ``path``.
        ValueError: The file is not a call history.
        TypeError: A keyword that is not a filter (as for any misspelt parameter).

    """
    if not filters.keys() <= _FILTERS:
        unknown = ", ".join(repr(key) for key in sorted(filters.keys() - _FILTERS))
        raise TypeError(f"unexpected keyword argument(s): {unknown}")
    limit = filters.get("limit", 100)
    outcome = filters.get("outcome")
    if not path.is_file():
        raise FileNotFoundError(f"no call history at {path}")
    clauses: list[str] = []
    parameters: list[Any] = []
    for clause, value in (
        ("tool_name = ?", filters.get("tool")),
        ("thread_id = ?", filters.get("thread")),
        ("ended_at >= ?", _seconds(filters.get("since"))),
        ("ended_at < ?", _seconds(filters.get("until"))),
        ("(task_id = ? OR call_id = ?)", filters.get("call")),
        ("user_id = ?", filters.get("user")),
    ):
        if value is not None:
            clauses.append(clause)
            parameters += [value] * clause.count("?")
    if outcome is not None:
        clauses.append("(status = ? OR error_code = ?)")
        parameters += [outcome, outcome]
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    parameters.append(-1 if limit is None else limit)
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            # A history written by an older version lacks the columns added since.
            present = _columns(connection)
            selected = ", ".join(
                column if column in present else "NULL" for column in READ.values()
            )
            order = " ORDER BY ended_at DESC, id DESC LIMIT ?"
            sql = f"{SELECT.format(columns=selected)}{where}{order}"
            rows = connection.execute(sql, parameters).fetchall()
        finally:
            connection.close()
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{path} cannot be read as a call history: {exc}") from None
    return [_observation(row) for row in rows]


def _seconds(moment: float | datetime | None) -> float | None:
    if isinstance(moment, datetime):
        return moment.timestamp()
    return None if moment is None else float(moment)


def _observation(row: tuple[Any, ...]) -> Observation:
    values = dict(zip(READ, row, strict=True))
    for name in JSON_FIELDS:
        if values[name] is not None:
            values[name] = json.loads(values[name])
    return Observation(**values)

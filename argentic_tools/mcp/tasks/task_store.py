"""Where the gateway keeps its MCP tasks: one SQLite table, ``mcp_tasks``.

A row is what ``tasks/get`` answers from once the task's call is no longer in this
process: the task's id, whom it belongs to, the label of its bus call (the name the
call has in the manager's journal), the tool, the status and its message, the times,
the time to live, and once the task ended its MCP outcome (``{"result": ...}`` for a
completed task, ``{"error": ...}`` for a failed one). A row is written when the task
is created (before the client hears of it) and when its status changes: a few small
writes a task, each committed at once (SQLite's WAL journal, ``synchronous=NORMAL``), so a
killed gateway leaves every task it announced readable.

``mcp serve --journal PATH`` keeps the table in that file, beside the manager's call
journal; without it the table lives in memory and tasks end with the gateway.
"""

import dataclasses
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

TERMINAL = frozenset({"completed", "failed", "cancelled"})
"""The statuses a task ends in."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS mcp_tasks (
    task_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    label TEXT NOT NULL,
    tool TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    ttl_ms INTEGER,
    outcome TEXT
)
"""

_COLUMNS = (
    "task_id, owner, label, tool, status, status_message, created_at, updated_at, ttl_ms, outcome"
)


@dataclasses.dataclass(slots=True)
class TaskRecord:
    """One MCP task as the store keeps it."""

    task_id: str
    owner: str
    """Who may see it (see :func:`argentic_tools.mcp.tasks.owner_of`)."""
    label: str
    """The bus call's label (``task_id_override``): its name in the manager's journal."""
    tool: str
    """The MCP name of the tool called."""
    status: str
    status_message: str | None
    created_at: float
    """Seconds since the epoch."""
    updated_at: float
    ttl_ms: int | None
    outcome: dict[str, Any] | None = None
    """Once ended: ``{"result": CallToolResult}`` or ``{"error": JSON-RPC error}``."""

    @property
    def terminal(self) -> bool:
        """Whether the task has ended."""
        return self.status in TERMINAL

    def expired(self, now: float) -> bool:
        """Whether its time to live is over at ``now``."""
        return self.ttl_ms is not None and now > self.created_at + self.ttl_ms / 1000


class TaskStore:
    """The ``mcp_tasks`` table of one SQLite file (or of memory).

    Args:
        path: The database file, created when missing; None: in memory.

    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = None if path is None else Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            ":memory:" if self.path is None else str(self.path),
            check_same_thread=False,
            isolation_level=None,
        )
        if self.path is not None:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute(_SCHEMA)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    def add(self, record: TaskRecord) -> None:
        """Write a new task (committed when this returns)."""
        with self._lock:
            self._db.execute(
                f"INSERT INTO mcp_tasks ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: S608
                _row(record),
            )

    def save(self, record: TaskRecord) -> None:
        """Write a task's status, message, time and outcome."""
        with self._lock:
            self._db.execute(
                "UPDATE mcp_tasks SET status = ?, status_message = ?, updated_at = ?, outcome = ?"
                " WHERE task_id = ?",
                (
                    record.status,
                    record.status_message,
                    record.updated_at,
                    None if record.outcome is None else json.dumps(record.outcome),
                    record.task_id,
                ),
            )

    def get(self, task_id: str) -> TaskRecord | None:
        """The task of that id, or None."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM mcp_tasks WHERE task_id = ?",  # noqa: S608
                (task_id,),
            ).fetchone()
        return None if row is None else _record(row)

    def unfinished(self) -> list[TaskRecord]:
        """The tasks that have not ended, oldest first."""
        marks = ", ".join("?" * len(TERMINAL))
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM mcp_tasks WHERE status NOT IN ({marks})"  # noqa: S608
                " ORDER BY created_at",
                tuple(sorted(TERMINAL)),
            ).fetchall()
        return [_record(row) for row in rows]

    def delete(self, task_id: str) -> None:
        """Forget a task."""
        with self._lock:
            self._db.execute("DELETE FROM mcp_tasks WHERE task_id = ?", (task_id,))

    def purge(self, now: float) -> int:
        """Forget the tasks whose time to live is over; how many."""
        with self._lock:
            cursor = self._db.execute(
                "DELETE FROM mcp_tasks"
                " WHERE ttl_ms IS NOT NULL AND created_at + ttl_ms / 1000.0 < ?",
                (now,),
            )
        return cursor.rowcount


def _row(record: TaskRecord) -> tuple[Any, ...]:
    return (
        record.task_id,
        record.owner,
        record.label,
        record.tool,
        record.status,
        record.status_message,
        record.created_at,
        record.updated_at,
        record.ttl_ms,
        None if record.outcome is None else json.dumps(record.outcome),
    )


def _record(row: tuple[Any, ...]) -> TaskRecord:
    task_id, owner, label, tool, status, message, created, updated, ttl_ms, outcome = row
    return TaskRecord(
        task_id=task_id,
        owner=owner,
        label=label,
        tool=tool,
        status=status,
        status_message=message,
        created_at=created,
        updated_at=updated,
        ttl_ms=ttl_ms,
        outcome=None if outcome is None else json.loads(outcome),
    )

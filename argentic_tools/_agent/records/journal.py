"""Calls that outlive their caller: the call journal, :class:`CallJournal`.

``ToolManager(messager, journal="calls.journal")`` writes each call to a journal before
its task is published, and its outcome when it ends. A manager started again with the
same journal (and the same client id: tools know their callers by it) finds the calls
that had not ended, and waits for them again: a result the tool still holds is sent
again, one still running comes when it is done, and a call whose tool is gone ends
``tool_offline`` saying it may or may not have run. ``await manager.result(task_id)``
and ``async for result in manager.reattached()`` pick up where the last process left.

:class:`~.sqlite_journal.SqliteJournal` is the journal by default (the standard
library's ``sqlite3``, a file that survives a kill at any moment). Any object with the
methods of :class:`CallJournal` may stand in for it: another store, shared or remote.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

RUNNING = "running"
"""The status of a journaled call that has not ended."""


@dataclasses.dataclass(frozen=True, slots=True)
class JournaledCall:
    """One call as the journal keeps it."""

    task_id: str
    """The task's id on the wire (fresh for every call)."""
    label: str | None
    """The caller's ``task_id_override``, when it gave one."""
    call_id: str | None
    """The caller's id for the call."""
    tool_name: str
    """Name of the tool called."""
    tool_id: str
    """Id of the tool instance the task went to."""
    tool_source: str | None
    """Client id of the process serving that instance: the one that may hold the result."""
    arguments: Any
    """The arguments, as checked."""
    context: dict[str, Any] | None
    """Thread, trace and user ids."""
    started_at: float
    """When the task was built (Unix time): its ``timestamp``."""
    timeout: float | None
    """Seconds the caller waits in all (None: no limit)."""
    status: str = RUNNING
    """``running``, or the result's status once it ended."""
    result: dict[str, Any] | None = None
    """The result as JSON (a result's or an error's fields), once it ended."""
    ended_at: float | None = None
    """When it ended (Unix time)."""
    progress: dict[str, Any] | None = None
    """The latest progress report (``progress``, ``total``, ``message``)."""
    restarts: int = 0
    """How many times a restarted manager picked the call up again."""
    caller: str | None = None
    """Client id of the manager that made the call (tools know their caller by it)."""

    @property
    def deadline(self) -> float | None:
        """Unix time after which the caller no longer waits (None: no limit)."""
        return None if self.timeout is None else self.started_at + self.timeout

    @property
    def key(self) -> str:
        """The id a caller knows the call by: its label, else its task id."""
        return self.label or self.task_id


@runtime_checkable
class CallJournal(Protocol):
    """Where a manager keeps its calls until they end (see the module).

    A journal is opened by the manager that uses it and closed with it. ``begin``
    returns once the call is durably kept: the task is published after it. The other
    writes may be queued, in order, and must be durable once ``close`` returns.
    """

    async def open(self) -> None:
        """Make the journal ready (create its store if needed)."""

    async def close(self) -> None:
        """Write what is queued and release the store."""

    async def begin(self, call: JournaledCall) -> None:
        """Keep ``call`` (status ``running``); returns once it is durable."""

    def progressed(self, task_id: str, progress: dict[str, Any]) -> None:
        """Note the latest progress report of a running call (may be queued)."""

    def ended(self, task_id: str, status: str, result: dict[str, Any] | str) -> None:
        """Note a call's outcome: its result's fields, or the same as JSON text (may be queued)."""

    async def resumed(self, task_ids: Sequence[str]) -> None:
        """Count one more restart survived by each of these calls."""

    async def unfinished(self) -> list[JournaledCall]:
        """The calls that have not ended, oldest first."""

    async def find(self, key: str) -> JournaledCall | None:
        """The newest call with this label, or with this task id."""

    async def calls(self, status: str | None = None, limit: int = 100) -> list[JournaledCall]:
        """The newest calls first, all or those with ``status``."""

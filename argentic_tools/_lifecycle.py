"""How objects that own a connection or background work open, close and track their tasks.

:class:`AsyncResource` is the one implementation of ``async with`` for the
objects that also keep Argentic's explicit calls (``connect()``/``disconnect()``,
``async_init()``/``aclose()``, ``start()``/``stop()``): entering runs the open
step, leaving runs the close step.

:class:`TaskSet` holds the background tasks one object starts. Most of them are
started from the MQTT client's message callback, a plain function that cannot
enter an anyio task group (and ``async_init``/``aclose`` may run in different
tasks, which a task group forbids); the set gives the same guarantees: every
task is named, and closing the owner cancels and awaits all of them. A task that only
waits (a periodic check, a ping awaiting its pong) is a *watcher*: closing cancels it at
once, while the others (a cancellation or a status still being published) get the grace.
"""

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Coroutine
from types import TracebackType
from typing import Any, Self


class AsyncResource(ABC):
    """``async with obj:`` opens ``obj`` and closes it on the way out, however it is left."""

    @abstractmethod
    async def _open_resource(self) -> None:
        """Open; on failure, leave nothing attached (the subclass's open step does this)."""

    @abstractmethod
    async def _close_resource(self) -> None:
        """Close; safe to call when already closed."""

    async def __aenter__(self) -> Self:
        await self._open_resource()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._close_resource()


class TaskSet:
    """Named background tasks owned by one object; :meth:`aclose` cancels and awaits them.

    Args:
        logger: Where failures of the tasks are reported.
        owner: Prefix of every task's name (e.g. the MQTT client id).

    """

    def __init__(self, logger: "logging.Logger | logging.LoggerAdapter[Any]", owner: str) -> None:
        self._logger = logger
        self._owner = owner
        self._tasks: set[asyncio.Task[Any]] = set()
        self._watchers: set[asyncio.Task[Any]] = set()

    def spawn(
        self, work: Awaitable[Any], name: str, *, watcher: bool = False
    ) -> "asyncio.Task[Any]":
        """Run ``work`` as a task named ``{owner}:{name}``; a failure is logged, not raised.

        Args:
            work: What the task runs.
            name: The task's name after the owner's.
            watcher: The task only waits and sends nothing that must get out (a periodic
                check, a ping awaiting its answer): :meth:`aclose` cancels it at once
                instead of giving it the grace. A task that never ends on its own must
                be one, or every close would wait the whole grace.

        """
        task = asyncio.create_task(self._guard(work, name), name=f"{self._owner}:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if isinstance(work, Coroutine):
            # A task cancelled before its first step never awaited ``work``: close it, or
            # Python warns that it was never awaited (a no-op once it has run).
            task.add_done_callback(lambda _: work.close())
        if watcher:
            self._watchers.add(task)
            task.add_done_callback(self._watchers.discard)
        return task

    def __len__(self) -> int:
        return len(self._tasks)

    async def aclose(self, grace: float = 0.0) -> None:
        """Cancel every task and wait until all have ended.

        Args:
            grace: Seconds the tasks that are not watchers get to finish on their own
                first (e.g. a last message being published); none is waited for when
                only watchers are left.

        """
        for task in list(self._watchers):
            task.cancel()
        working = self._tasks - self._watchers
        if grace > 0 and working:
            await asyncio.wait(working, timeout=grace)
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)

    async def _guard(self, work: Awaitable[Any], name: str) -> None:
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception:
            self._logger.exception("%s: %s failed", self._owner, name)

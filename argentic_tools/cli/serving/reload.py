"""``serve --reload``: the tools served by a child process, started again when their code changes.

The served code runs in a child ``python -m argentic_tools serve ...`` (the same command
without ``--reload``), as uvicorn's reloader does, so that each start imports fresh
modules. The parent watches the Python files with ``watchfiles``; on a change it stops the
child as SIGTERM stops ``serve`` (its tools unregister, in-flight calls get
``--grace-period`` to finish) and starts a new one. A child that cannot start (the file no
longer imports) has printed its one error line; the parent waits for the next change.
"""

import argparse
import asyncio
import contextlib
import importlib.util
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
import anyio.lowlevel
from anyio.abc import Process

from ..common import EXIT_OK, CliError, StopRequest

logger = logging.getLogger("argentic_tools.cli")

CHILD_VARIABLE = "ARGENTIC_TOOLS_RELOAD_CHILD"
"""Set for the child: its stdin is a pipe from the reloader, which ends when the reloader does."""

KILL_AFTER = 5.0
"""Seconds past ``--grace-period`` a stopping child gets before it is killed."""


def child_argv(argv: Sequence[str]) -> list[str]:
    """The command line of the child: ``argv`` (from ``serve`` on) without ``--reload``.

    argparse takes any unambiguous prefix of an option, so ``--rel`` is ``--reload`` too.
    """
    return [arg for arg in argv if not (arg.startswith("--re") and "--reload".startswith(arg))]


def watched_directories(specs: Sequence[str]) -> list[Path]:
    """The directories whose ``.py`` files the tools of ``specs`` come from.

    A file's directory (``path/to/tools.py``); a module's package, or the directory of a
    module that is a single file. Nothing is imported: a package's ``__init__`` could fail,
    and the child is where the code runs.
    """
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # as loading.load_tools does: modules here can be served
    found: list[Path] = []
    for spec in specs:
        name = spec.partition(":")[0]
        if name.endswith(".py") or "/" in name:
            directory = Path(name).resolve().parent
        else:
            directory = _module_directory(name.split(".")[0])
        if directory not in found:
            found.append(directory)
    return found


def _module_directory(top_level: str) -> Path:
    try:
        spec = importlib.util.find_spec(top_level)
    except (ImportError, ValueError) as exc:
        raise CliError(f"cannot find module {top_level!r} to watch: {exc}") from None
    if spec is None:
        raise CliError(f"cannot find module {top_level!r} to watch")
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    if spec.origin is None or not spec.has_location:
        raise CliError(f"module {top_level!r} has no file to watch")
    return Path(spec.origin).resolve().parent


def started_by_reloader() -> bool:
    """Whether this ``serve`` is a reloader's child (read once: its own children are not)."""
    return os.environ.pop(CHILD_VARIABLE, None) == "1"


async def stop_when_reloader_exits(stop: StopRequest) -> None:
    """Ask ``serve`` to stop once the reloader's pipe on stdin closes (the reloader died)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.read(4096):
        pass
    logger.warning("the reloader exited; stopping")
    stop.request()


class _Child:
    """One ``serve`` child process and whether the reloader is the one stopping it."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.stopping = False

    async def watch_exit(self) -> None:
        """Wait for the child to end; report an end the reloader did not ask for."""
        status = await self.process.wait()
        if not self.stopping:
            logger.warning("serve exited with status %d; serving again at the next change", status)

    async def stop(self, grace_period: float) -> None:
        """SIGTERM (unregister, finish in-flight calls), then SIGKILL past the grace period."""
        self.stopping = True
        with anyio.CancelScope(shield=True):
            if self.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self.process.send_signal(signal.SIGTERM)
                with anyio.move_on_after(grace_period + KILL_AFTER):
                    await self.process.wait()
            if self.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
            await self.process.aclose()


async def serve_with_reload(args: argparse.Namespace, stop: StopRequest) -> int:
    """``serve --reload``: serve from a child process, started again on each code change."""
    try:
        from watchfiles import PythonFilter, awatch
    except ImportError:
        raise CliError(
            "serve --reload needs watchfiles: pip install 'argentic-tools[cli]'"
        ) from None
    directories = watched_directories(args.tools)
    command = [sys.executable, "-m", "argentic_tools", *child_argv(args.argv)]
    # No .pyc files: an edit within the second that keeps the file's size would otherwise
    # be imported from the cache the previous start wrote.
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", CHILD_VARIABLE: "1"}

    async def start() -> _Child:
        # A session of its own: Ctrl-C in a terminal reaches the reloader only, which
        # stops the child with one SIGTERM (a second signal would cut its grace short).
        # Its stdin is our pipe: should we die unannounced (SIGKILL), it stops too.
        process = await anyio.open_process(
            command, stdout=None, stderr=None, env=env, start_new_session=True
        )
        child = _Child(process)
        tasks.start_soon(child.watch_exit)
        return child

    # watchfiles logs "1 change detected" at INFO; the line that names the files is ours.
    logging.getLogger("watchfiles").setLevel(logging.WARNING)
    logger.info("reloading on changes to .py files in %s", ", ".join(map(str, directories)))
    children: list[_Child] = []
    started, finished = anyio.Event(), anyio.Event()

    async def follow_changes() -> None:
        try:
            async for changes in awatch(
                *directories, watch_filter=PythonFilter(), stop_event=stop.requested
            ):
                await started.wait()
                changed = ", ".join(sorted({path for _, path in changes}))
                logger.info("%s changed; serving again", changed)
                await children[-1].stop(args.grace_period)
                children.append(await start())
        finally:
            finished.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(follow_changes)
        # The watch begins in that task's first step: no edit made once the child is
        # up can come before it.
        await anyio.lowlevel.checkpoint()
        try:
            children.append(await start())
            started.set()
            await finished.wait()  # Ctrl-C or SIGTERM ended the watch
        finally:
            if children:
                await children[-1].stop(args.grace_period)
    return EXIT_OK

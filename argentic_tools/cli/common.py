"""What every command shares: errors, consoles, stopping on signals, connecting."""

import argparse
import asyncio
import contextlib
import json
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import anyio
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.text import Text

from .._agent.fleet import settling
from .._agent.manager import ToolManager
from .._protocol.topics import Topics
from .._tools.hosting.service import (
    tls_params_from,
)
from .._transport import Messager, parse_brokers

EXIT_OK = 0
EXIT_CALL_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

CONNECT_TIMEOUT = 5.0
"""Seconds a command waits for the broker before giving up."""

stdout = Console(highlight=False, markup=False)
stderr = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)


class CliError(Exception):
    """A failure reported as one line on stderr, with the exit status to return."""

    def __init__(self, message: str, status: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.status = status


def print_error(message: str) -> None:
    """Print ``error: message`` as a single line on stderr."""
    stderr.print(Text.assemble(("error: ", "bold red"), " ".join(message.split())))


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (plain, for scripts)."""
    print(json.dumps(value, indent=2, ensure_ascii=False))


def print_wide(renderable: RenderableType) -> None:
    """Print on stdout; into a pipe or file as wide as it needs, not folded at 80 columns."""
    if stdout.is_terminal:
        stdout.print(renderable)
        return
    natural = Measurement.get(stdout, stdout.options.update(width=1000), renderable).maximum
    # Console.print never goes past the console's width: a console as wide as the table.
    Console(file=stdout.file, width=max(natural, stdout.width), highlight=False).print(renderable)


# -- signals -----------------------------------------------------------------


class StopRequest:
    """Turns SIGINT/SIGTERM into a stop request for the running command.

    A *graceful* command (a server) waits on :attr:`requested` and shuts down by
    itself; a second signal cancels it. Any other command is cancelled by the
    first signal, and further signals are ignored while it cleans up (cleanup is
    shielded and bounded), so that no child process or connection is left behind.
    The cancellation is anyio's: it is delivered again and again until the command
    has left its scope, so a cancellation that asyncio loses (``asyncio.wait_for``
    on Python 3.11 drops one that coincides with the awaited result) still ends it.
    An *interactive* command (``top``) is stopped like any other, but Ctrl-C is how
    people leave it: it exits 0, as on its own quit key, without "interrupted".
    While a question is put to the person at the terminal (:meth:`interrupting`),
    Ctrl-C ends the question instead, and the command goes on.
    """

    def __init__(
        self, scope: anyio.CancelScope, *, graceful: bool, interactive: bool = False
    ) -> None:
        self.graceful = graceful
        self.interactive = interactive
        self.received: signal.Signals | None = None
        self.requested = asyncio.Event()
        self._scope = scope
        self._interrupt: Callable[[], None] | None = None

    def request(self) -> None:
        """Ask a graceful command to finish (without a signal: a normal end)."""
        self.requested.set()

    @contextlib.contextmanager
    def interrupting(self, interrupt: Callable[[], None]) -> Iterator[None]:
        """While the block runs, Ctrl-C (SIGINT) calls ``interrupt`` instead of stopping."""
        previous, self._interrupt = self._interrupt, interrupt
        try:
            yield
        finally:
            self._interrupt = previous

    def on_signal(self, sig: signal.Signals) -> None:
        """Handle SIGINT/SIGTERM: a graceful command finishes on the first, others stop at once."""
        if sig == signal.SIGINT and self._interrupt is not None and self.received is None:
            self._interrupt()
            return
        if self.received is None:
            self.received = sig
            self.requested.set()
            if not self.graceful:
                self._scope.cancel()
        elif self.graceful:
            self._scope.cancel()

    def exit_status(self, status: int) -> int:
        """The exit status after the command returned ``status`` (or was cancelled)."""
        if self.received == signal.SIGINT:
            if self.interactive:
                return EXIT_OK
            stderr.print("interrupted", style="yellow")
            return EXIT_INTERRUPTED
        if self.received == signal.SIGTERM and (self._scope.cancel_called or not self.graceful):
            stderr.print("terminated", style="yellow")
            return EXIT_TERMINATED
        return status


Command = Callable[[argparse.Namespace, StopRequest], Awaitable[int]]

CLEANUP_TIMEOUT = 10.0
"""Seconds cleanup (disconnecting, stopping child processes) may take once cancelled."""


def run_command(
    command: Command,
    args: argparse.Namespace,
    *,
    graceful: bool = False,
    interactive: bool = False,
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
) -> int:
    """Run an async command in a fresh event loop with SIGINT/SIGTERM handling.

    ``loop_factory`` makes the loop (asyncio's own when None).
    """
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(_supervise(command, args, graceful, interactive))


async def _supervise(
    command: Command, args: argparse.Namespace, graceful: bool, interactive: bool
) -> int:
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)
    status = EXIT_INTERRUPTED
    with anyio.CancelScope() as scope:
        stop = StopRequest(scope, graceful=graceful, interactive=interactive)
        for sig in signals:
            loop.add_signal_handler(sig, stop.on_signal, sig)
        try:
            status = await command(args, stop)
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)
    return stop.exit_status(status)


async def shielded(cleanup: Callable[[], Awaitable[Any]]) -> None:
    """Run ``cleanup`` to its end even when cancelled, within CLEANUP_TIMEOUT."""
    with anyio.move_on_after(CLEANUP_TIMEOUT, shield=True):
        await cleanup()


# -- connections -----------------------------------------------------------------


def topics_from(args: argparse.Namespace) -> Topics:
    """The protocol topics under ``--topic-prefix``."""
    try:
        return Topics.with_prefix(args.topic_prefix)
    except ValueError as exc:
        raise CliError(f"--topic-prefix {args.topic_prefix!r}: {exc}") from None


def messager_from(
    args: argparse.Namespace,
    url: str | None = None,
    *,
    connect_timeout: float = CONNECT_TIMEOUT,
    client_id: str | None = None,
) -> Messager:
    """A (not yet connected) client connection for a command: no Last Will.

    No session, unless ``client_id`` names a stable client (then the broker keeps it).
    """
    try:
        return Messager(
            url or args.broker,
            tls_params=tls_params_from(args),
            log_level=args.log_level,
            will_topic=None,
            client_id=client_id or "",
            persistent_session=None if client_id else False,
            connect_timeout=connect_timeout,
        )
    except (ValueError, OSError) as exc:
        raise CliError(f"--broker {url or args.broker!r}: {exc}") from None


def manager_for(
    messager: Messager, topics: Topics, log_level: str, recorder: Any = None
) -> ToolManager:
    """A ToolManager on ``messager`` using ``topics`` (observed by ``recorder``, if any)."""
    return ToolManager(messager, log_level=log_level, topics=topics, recorder=recorder)


@contextlib.asynccontextmanager
async def connected_manager(
    args: argparse.Namespace,
    *,
    journal: str | None = None,
    client_id: str | None = None,
    recorder: Any = None,
) -> AsyncIterator[ToolManager]:
    """Connect, start a ToolManager (which makes live tools register again), yield it.

    With ``journal`` (a path), the manager keeps its calls there and picks up those left
    running; it needs the stable ``client_id`` it had before. ``recorder`` (an
    ``ObservationRecorder``) gets one observation per call.
    """
    topics = topics_from(args)
    messager = messager_from(args, client_id=client_id)
    await messager.connect()
    try:
        manager = (
            manager_for(messager, topics, args.log_level, recorder)
            if journal is None
            else ToolManager(
                messager,
                log_level=args.log_level,
                topics=topics,
                journal=journal,
                recorder=recorder,
            )
        )
        await manager.async_init()
        try:
            yield manager
        finally:
            await shielded(manager.aclose)
    finally:
        await shielded(messager.disconnect)


def where(args: argparse.Namespace) -> str:
    """``mqtt://host:port`` plus the topic prefix, for messages (no credentials)."""
    try:
        text = ",".join(str(broker) for broker in parse_brokers(args.broker))
    except ValueError:
        text = args.broker
    return f"{text} (topic prefix {args.topic_prefix!r})" if args.topic_prefix else text


QUIET_SECONDS = 0.1
"""A registry without a change for this long counts as settled."""


async def settle(manager: ToolManager, seconds: float) -> None:
    """Give live tools up to ``seconds`` to register, ending early once registrations stop.

    The manager has just announced itself, and every live tool answers by registering
    again. Registrations are taken as done when none came for ``QUIET_SECONDS``, and no
    sooner than the window a starting manager gives its fleet (``STARTUP_SETTLE_SECONDS``):
    on a busy machine a process can stall longer than the quiet period between two of
    its tools. With no tool registered at all, there is no telling whether one is about
    to: the whole ``seconds`` are spent.
    """
    loop_time = anyio.current_time
    earliest = loop_time() + min(settling.STARTUP_SETTLE_SECONDS, seconds)
    with anyio.move_on_after(seconds):
        while True:
            with anyio.move_on_after(QUIET_SECONDS) as quiet:
                await manager.registry_changed()
            if quiet.cancelled_caught and manager.get_tool_names() and loop_time() >= earliest:
                return

"""The ``argentic-tools`` command line: run a broker, serve tools, inspect and call them.

Every command except ``broker`` talks to the broker given by ``--broker`` under
``--topic-prefix``. Data (results, ``--json`` output, events) goes to stdout;
progress and errors go to stderr, an error being one line (with a traceback only
under ``--debug``). Exit status: 0 on success, 1 when a call failed, 2 for a
usage, configuration or connection problem, 130 after Ctrl-C (143 after SIGTERM
for one-shot commands; servers stopped by SIGTERM exit 0).
"""

import argparse
import asyncio
import contextlib
import importlib
import inspect
import json
import logging
import os
import signal
import subprocess
import sys
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table
from rich.text import Text

from ._errors import BrokerError, ProtocolError, ToolsError
from ._logging import LogLevel, parse_log_level
from ._manager import ToolManager
from ._messages import (
    BaseMessage,
    ClientOfflineMessage,
    ManagerOnlineMessage,
    RegisterToolMessage,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    ToolRegisteredMessage,
    ToolRegistrationErrorMessage,
    ToolResult,
    ToolUnregisteredMessage,
    UnregisterToolMessage,
    parse_message,
)
from ._service import (
    add_connection_arguments,
    add_service_arguments,
    service_from_args,
    tls_params_from,
)
from ._tool import TOOL_ATTRIBUTE, BaseTool
from ._topics import Topics
from ._transport import BrokerURL, IncomingMessage, Messager

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
    """

    def __init__(self, scope: anyio.CancelScope, *, graceful: bool) -> None:
        self.graceful = graceful
        self.received: signal.Signals | None = None
        self.requested = asyncio.Event()
        self._scope = scope

    def request(self) -> None:
        """Ask a graceful command to finish (without a signal: a normal end)."""
        self.requested.set()

    def on_signal(self, sig: signal.Signals) -> None:
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
            stderr.print("interrupted", style="yellow")
            return EXIT_INTERRUPTED
        if self.received == signal.SIGTERM and (self._scope.cancel_called or not self.graceful):
            stderr.print("terminated", style="yellow")
            return EXIT_TERMINATED
        return status


Command = Callable[[argparse.Namespace, StopRequest], Awaitable[int]]

CLEANUP_TIMEOUT = 10.0
"""Seconds cleanup (disconnecting, stopping child processes) may take once cancelled."""


def run_command(command: Command, args: argparse.Namespace, *, graceful: bool = False) -> int:
    """Run an async command in a fresh event loop with SIGINT/SIGTERM handling."""
    return asyncio.run(_supervise(command, args, graceful))


async def _supervise(command: Command, args: argparse.Namespace, graceful: bool) -> int:
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)
    status = EXIT_INTERRUPTED
    with anyio.CancelScope() as scope:
        stop = StopRequest(scope, graceful=graceful)
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
) -> Messager:
    """A (not yet connected) client connection for a command: no Last Will, no session."""
    try:
        return Messager(
            url or args.broker,
            tls_params=tls_params_from(args),
            log_level=args.log_level,
            will_topic=None,
            persistent_session=False,
            connect_timeout=connect_timeout,
        )
    except (ValueError, OSError) as exc:
        raise CliError(f"--broker {url or args.broker!r}: {exc}") from None


def manager_for(messager: Messager, topics: Topics, log_level: str) -> ToolManager:
    """A ToolManager on ``messager`` using ``topics``."""
    return ToolManager(
        messager,
        log_level=log_level,
        register_topic=topics.register,
        tool_call_topic_base=topics.call_base,
        tool_response_topic_base=topics.response_base,
        status_topic=topics.status,
    )


@contextlib.asynccontextmanager
async def connected_manager(args: argparse.Namespace) -> AsyncIterator[ToolManager]:
    """Connect, start a ToolManager (which makes live tools register again), yield it."""
    topics = topics_from(args)
    messager = messager_from(args)
    await messager.connect()
    try:
        manager = manager_for(messager, topics, args.log_level)
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
        text = str(BrokerURL.parse(args.broker))
    except ValueError:
        text = args.broker
    return f"{text} (topic prefix {args.topic_prefix!r})" if args.topic_prefix else text


async def collect(seconds: float) -> None:
    """Give live tools ``seconds`` to answer the manager's announcement."""
    with stderr.status(Text(f"Collecting registrations for {seconds:g} s...")):
        await asyncio.sleep(seconds)


# -- serve -------------------------------------------------------------------------


def load_tools(specs: Sequence[str]) -> list[Any]:
    """Resolve ``MODULE`` and ``MODULE:OBJECT`` references to tool objects.

    ``MODULE`` gives every ``@tool`` function and ``BaseTool`` instance in the
    module and every concrete ``BaseTool`` class defined there; ``OBJECT`` (a
    dotted attribute path) may be one tool or a list of them.
    """
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        # As with `python -m`, modules in the current directory can be served.
        sys.path.insert(0, cwd)
    found: list[Any] = []
    seen: set[int] = set()
    for spec in specs:
        module_name, sep, attribute = spec.partition(":")
        if not module_name or (sep and not attribute):
            raise CliError(f"invalid tool reference {spec!r}; use MODULE or MODULE:OBJECT")
        module = _import(module_name)
        if sep:
            value = _attribute(module, attribute, spec)
            items = list(value) if isinstance(value, list | tuple | set | frozenset) else [value]
        else:
            items = _tools_in(module)
            if not items:
                raise CliError(
                    f"module {module_name!r} defines no tools (@tool functions or BaseTool "
                    "classes); name one with MODULE:OBJECT"
                )
        for item in items:
            if id(item) not in seen:
                seen.add(id(item))
                found.append(item)
    return found


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise CliError(f"cannot import module {name!r}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - whatever the module's own code raised
        raise CliError(f"importing module {name!r} failed: {type(exc).__name__}: {exc}") from None


def _attribute(module: ModuleType, path: str, spec: str) -> Any:
    value: Any = module
    for part in path.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise CliError(f"{spec!r}: module {module.__name__!r} has no {path!r}") from None
    return value


def _tools_in(module: ModuleType) -> list[Any]:
    return [value for value in vars(module).values() if _is_tool(value, module)]


def _is_tool(value: Any, module: ModuleType) -> bool:
    if getattr(value, TOOL_ATTRIBUTE, None) is not None or isinstance(value, BaseTool):
        return True
    # Classes only when defined here: an imported BaseTool or FunctionTool is no tool of ours.
    return (
        isinstance(value, type)
        and issubclass(value, BaseTool)
        and value.__module__ == module.__name__
        and not inspect.isabstract(value)
    )


async def _serve(args: argparse.Namespace, stop: StopRequest) -> int:
    tools = load_tools(args.tools)
    service = service_from_args(args, tools, log_level=args.log_level)
    async with service:
        await stop.requested.wait()
    return EXIT_OK


# -- list and describe -------------------------------------------------------------------


def _registry(manager: ToolManager) -> list[dict[str, Any]]:
    """Every registered tool instance (several processes may serve one name)."""
    rows = []
    for entry in manager.tools_by_id.values():
        rows.append(
            {
                "name": entry["name"],
                "id": entry["id"],
                "tags": list(entry.get("tags") or ()),
                "source": entry.get("source_client_id"),
                "description": entry.get("description") or "",
                "input_schema": json.loads(entry.get("parameters") or "{}"),
                "registered_at": entry.get("registered_at"),
            }
        )
    return sorted(rows, key=lambda row: (row["name"], row["id"]))


async def _list(args: argparse.Namespace, stop: StopRequest) -> int:
    async with connected_manager(args) as manager:
        await collect(args.wait)
        rows = _registry(manager)
    return _print_registry(args, rows)


def _print_registry(args: argparse.Namespace, rows: list[dict[str, Any]]) -> int:
    if args.json:
        print_json(rows)
        return EXIT_OK
    if not rows:
        stderr.print(f"No tools registered on {where(args)} (waited {args.wait:g} s).")
        return EXIT_OK
    table = Table(title=f"{len(rows)} tool(s) on {where(args)}", title_justify="left")
    for column in ("Name", "Id", "Tags", "Source", "Description"):
        table.add_column(column, overflow="fold")
    for row in rows:
        first_line = row["description"].strip().splitlines()[0] if row["description"] else ""
        table.add_row(
            Text(row["name"], style="bold"),
            row["id"],
            ", ".join(row["tags"]),
            row["source"] or "",
            first_line,
        )
    stdout.print(table)
    return EXIT_OK


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (plain, for scripts)."""
    print(json.dumps(value, indent=2, ensure_ascii=False))


async def _describe(args: argparse.Namespace, stop: StopRequest) -> int:
    async with connected_manager(args) as manager:
        await collect(args.wait)
        if args.format == "prompt":
            exported: Any = json.loads(manager.generate_tool_descriptions_for_prompt())
        else:
            exported = manager.export_tools(args.format)
    print_json(exported)
    return EXIT_OK


# -- call ---------------------------------------------------------------------------


def parse_arguments(text: str) -> dict[str, Any]:
    """Parse ARGS_JSON (``-`` reads it from stdin) into the arguments object."""
    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"ARGS_JSON is not valid JSON ({exc}): {text!r}") from None
    if not isinstance(value, dict):
        raise CliError(
            f"ARGS_JSON must be a JSON object of arguments, like '{{\"x\": 1}}', "
            f"not {type(value).__name__}"
        )
    return value


async def _call(args: argparse.Namespace, stop: StopRequest) -> int:
    arguments = parse_arguments(args.arguments)
    async with connected_manager(args) as manager:
        with stderr.status(Text(f"Waiting for tool {args.name!r}...")):
            try:
                await manager.wait_for_tool(args.name, timeout=args.wait)
            except TimeoutError:
                raise CliError(
                    f"tool {args.name!r} not found: nothing registered under that name on "
                    f"{where(args)} within {args.wait:g} s",
                    EXIT_CALL_FAILED,
                ) from None
        with stderr.status(Text(f"Calling {args.name!r}...")):
            result = await manager.execute_tool(args.name, arguments, timeout=args.timeout)
    return _print_result(result)


def _print_result(result: ToolResult) -> int:
    if isinstance(result, TaskErrorMessage):
        raise CliError(f"{result.error} [{result.error_code}]", EXIT_CALL_FAILED)
    print_json(result.result)
    return EXIT_OK


# -- watch -----------------------------------------------------------------------------


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _summary(message: BaseMessage) -> tuple[str, str, str]:
    """(kind, style, details) of one protocol message, for ``watch``."""
    if isinstance(message, RegisterToolMessage):
        return (
            "register",
            "green",
            f"{message.tool_name} id={message.tool_id} from {message.source}",
        )
    if isinstance(message, UnregisterToolMessage):
        return "unregister", "yellow", f"id={message.tool_id} from {message.source}"
    if isinstance(message, ClientOfflineMessage):
        return "offline", "red", f"client {message.source} is gone"
    if isinstance(message, ManagerOnlineMessage):
        return "manager", "cyan", f"{message.source} is online"
    if isinstance(message, ToolRegisteredMessage):
        return "registered", "green", f"{message.tool_name} as {message.tool_id}"
    if isinstance(message, ToolRegistrationErrorMessage):
        return "refused", "red", f"{message.tool_name}: {message.error}"
    if isinstance(message, ToolUnregisteredMessage):
        return "removed", "yellow", f"{message.tool_name or message.tool_id} ({message.reason})"
    if isinstance(message, TaskErrorMessage):
        return (
            "error",
            "red",
            f"{message.tool_name} [{message.error_code}] {message.error} task={message.task_id}",
        )
    if isinstance(message, TaskResultMessage):
        took = f" in {message.duration_ms:.1f} ms" if message.duration_ms is not None else ""
        return (
            "result",
            "green",
            f"{message.tool_name} {message.status.value}{took} -> {_short(message.result)} "
            f"task={message.task_id}",
        )
    if isinstance(message, TaskMessage):
        return (
            "call",
            "blue",
            f"{message.tool_name} {_short(message.arguments)} task={message.task_id}",
        )
    return message.type.lower(), "", ""


def describe_event(message: IncomingMessage) -> Text:
    """One line for one message seen by ``watch``."""
    stamp = datetime.now().strftime("%H:%M:%S.%f")[:-3]
    try:
        kind, style, details = _summary(parse_message(message.payload))
    except ProtocolError as exc:
        kind, style, details = "malformed", "red", f"on {message.topic}: {exc}"
    return Text.assemble((stamp, "dim"), "  ", (f"{kind:<10}", style), "  ", details)


async def _watch(args: argparse.Namespace, stop: StopRequest) -> int:
    topics = topics_from(args)
    seen = 0

    async def show(message: IncomingMessage) -> None:
        nonlocal seen
        if args.count and seen >= args.count:
            return
        seen += 1
        stdout.print(describe_event(message), soft_wrap=True)
        if args.count and seen >= args.count:
            stop.request()

    messager = messager_from(args)
    await messager.connect()
    try:
        for topic in (
            topics.register,
            topics.status,
            f"{topics.call_base}/+",
            topics.response_filter,
        ):
            await messager.subscribe(topic, show)
        stderr.print(f"Watching {where(args)}; press Ctrl-C to stop.")
        await stop.requested.wait()
    finally:
        await shielded(messager.disconnect)
    return EXIT_OK


# -- broker, demo, bench ------------------------------------------------------------------


async def _broker(args: argparse.Namespace, stop: StopRequest) -> int:
    from ._broker import EmbeddedBroker

    broker = EmbeddedBroker(args.host, args.port)
    try:
        await broker.start()
    except (RuntimeError, OSError) as exc:
        raise CliError(str(exc)) from None
    try:
        stdout.print(f"MQTT broker listening on {broker.url}; press Ctrl-C to stop.")
        await stop.requested.wait()
    finally:
        await broker.stop()
    return EXIT_OK


async def _demo(args: argparse.Namespace, stop: StopRequest) -> int:
    from ._demo import run_demo

    return await run_demo(args)


def _benchmark(args: argparse.Namespace) -> int:
    """Run ``benchmarks.run`` (bench) or ``benchmarks.soak`` (soak) with the arguments as given."""
    module = {"bench": "run", "soak": "soak"}[args.command]
    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks" / f"{module}.py").is_file():
        raise CliError(
            f"the benchmarks are not installed with the package; run `argentic-tools "
            f"{args.command}` from a source checkout of argentic-tools"
        )
    command = [sys.executable, "-m", f"benchmarks.{module}", *args.bench_args]
    return subprocess.run(command, cwd=root).returncode  # noqa: S603


# -- parser and entry point ------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``argentic-tools`` argument parser."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="argentic-tools",
        description="Tools as MQTT microservices for LLM agents.",
        epilog="Run `argentic-tools COMMAND --help` for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, *, client: bool = True) -> argparse.ArgumentParser:
        # A fresh parent per command: argparse shares a parent's actions between its
        # children, so one command's set_defaults would change every other's defaults.
        options = argparse.ArgumentParser(add_help=False)
        options.add_argument("--debug", action="store_true", help="show tracebacks with errors")
        if client:
            add_connection_arguments(options)
        return commands.add_parser(name, help=help_text, description=help_text, parents=[options])

    broker = command("broker", "run the embedded MQTT broker until Ctrl-C", client=False)
    broker.add_argument("--host", default="127.0.0.1", help="address to listen on")
    broker.add_argument("--port", type=int, default=1883, help="TCP port (0 picks a free one)")
    broker.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    broker.set_defaults(run=_broker, graceful=True)

    serve = command("serve", "serve @tool functions or BaseTool classes from Python modules")
    serve.add_argument(
        "tools",
        nargs="+",
        metavar="MODULE[:OBJECT]",
        help="a module (every tool in it) or MODULE:OBJECT (a tool or a list of tools)",
    )
    add_service_arguments(serve)
    serve.set_defaults(run=_serve, graceful=True)

    listing = command("list", "list the registered tools")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.add_argument("--wait", type=float, default=1.0, help="seconds to collect tools")
    listing.set_defaults(run=_list, log_level="WARNING")

    call = command("call", "call a tool and print its result as JSON")
    call.add_argument("name", help="tool name (or id)")
    call.add_argument(
        "arguments", nargs="?", default="{}", metavar="ARGS_JSON", help="JSON object; - for stdin"
    )
    call.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a result")
    call.add_argument("--wait", type=float, default=5.0, help="seconds to wait for the tool")
    call.set_defaults(run=_call, log_level="WARNING")

    describe = command("describe", "export the tool registry for an LLM")
    describe.add_argument(
        "--format", choices=("prompt", "openai", "anthropic", "mcp"), default="prompt"
    )
    describe.add_argument("--wait", type=float, default=1.0, help="seconds to collect tools")
    describe.set_defaults(run=_describe, log_level="WARNING")

    watch = command("watch", "print registrations, calls and results as they happen")
    watch.add_argument("--count", type=int, default=0, help="stop after N events")
    watch.set_defaults(run=_watch, graceful=True, log_level="WARNING")

    demo = command("demo", "start the example tools and run a short scripted agent")
    # Without --broker the demo starts the embedded broker instead of trying 1883.
    demo.set_defaults(run=_demo, log_level="WARNING", broker=None)

    # No options of their own (prefix_chars matches none): every argument, --help
    # included, goes to benchmarks.run or benchmarks.soak as it is.
    for name, help_text in (
        ("bench", "run the benchmarks (from a source checkout)"),
        ("soak", "make calls under a fault schedule and check none is lost (source checkout)"),
    ):
        runner = commands.add_parser(name, help=help_text, prefix_chars="+", add_help=False)
        runner.add_argument("bench_args", nargs=argparse.REMAINDER)
        runner.set_defaults(sync=_benchmark, debug=False)
    return parser


def _configure_logging(level: LogLevel, debug: bool) -> None:
    handler = RichHandler(console=stderr, show_path=False, rich_tracebacks=debug)
    handler.setLevel(level)
    logging.basicConfig(level=level, format="%(message)s", datefmt="[%X]", handlers=[handler])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = bool(args.debug)
    try:
        level = parse_log_level(getattr(args, "log_level", "WARNING"))
    except ValueError as exc:
        parser.error(str(exc))
    _configure_logging(level, debug)
    try:
        if hasattr(args, "sync"):
            return int(args.sync(args))
        return run_command(args.run, args, graceful=getattr(args, "graceful", False))
    except KeyboardInterrupt:
        stderr.print("interrupted", style="yellow")
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the one place that turns any failure into a line
        return _failure(exc, debug)


def _failure(exc: Exception, debug: bool) -> int:
    """Report ``exc`` as one line on stderr (and a traceback under --debug); the exit status."""
    if isinstance(exc, BrokenPipeError):
        # Whoever read our output left (`argentic-tools list --json | head`): no error line,
        # and no second failure when Python flushes stdout at exit.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_CALL_FAILED
    if debug:
        traceback.print_exception(exc)
    if isinstance(exc, CliError):
        print_error(str(exc))
        return exc.status
    if isinstance(exc, BrokerError | ToolsError | ValueError):
        # Connection failures, refused registrations, unusable tool definitions.
        print_error(str(exc))
        return EXIT_USAGE
    print_error(f"{type(exc).__name__}: {exc}")
    return EXIT_CALL_FAILED

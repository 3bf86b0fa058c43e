"""The ``argentic-tools`` command line: run a broker, serve tools, inspect and call them.

Every command except ``broker`` talks to the broker given by ``--broker`` under
``--topic-prefix``. Data (results, ``--json`` output, events) goes to stdout;
progress and errors go to stderr, an error being one line (with a traceback only
under ``--debug``). Exit status: 0 on success, 1 when a call failed, 2 for a
usage, configuration or connection problem, 130 after Ctrl-C (143 after SIGTERM
for one-shot commands; servers stopped by SIGTERM exit 0, and ``top`` ends on
Ctrl-C with 0, as on ``q``).
"""

import argparse
import contextlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence

from rich.logging import RichHandler

from .._errors import BrokerError, ToolsError
from .._logging import LogLevel, parse_log_level
from .._tools.service import (
    add_connection_arguments,
    add_service_arguments,
)
from .calling.call import ARGS, call_command
from .calling.terminal_caller import shown_level
from .common import (
    EXIT_CALL_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    print_error,
    run_command,
    stderr,
)
from .demo import DASHBOARD_VARIABLE
from .fleet.registry import (
    benchmark_command,
    broker_command,
    demo_command,
    describe_command,
    list_command,
    serve_command,
    watch_command,
)
from .fleet.stats import SORT_KEYS, stats_command, top_command
from .mcp.commands import mcp_bridge_command, mcp_serve_command, mcp_serve_loop
from .mcp.install import DEFAULT_NAME, TARGETS, install_command
from .mcp.target import add_mcp_server_arguments
from .mcp.team import add_commands as add_mcp_team_commands
from .mcp.team import add_serve_arguments as add_mcp_team_arguments

# -- parser and entry point ------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``argentic-tools`` argument parser."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="argentic-tools",
        description="Tools as MQTT microservices for LLM agents.",
        epilog="Run `argentic-tools COMMAND --help` for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_CommandParser
    )

    def command(
        name: str, help_text: str, examples: Sequence[str], *, client: bool = True
    ) -> argparse.ArgumentParser:
        return _add_command(commands, name, help_text, examples, client=client)

    broker = command(
        "broker",
        "run the embedded MQTT broker until Ctrl-C",
        ("argentic-tools broker", "argentic-tools broker --port 1884"),
        client=False,
    )
    broker.add_argument("--host", default="127.0.0.1", help="address to listen on")
    broker.add_argument("--port", type=int, default=1883, help="TCP port (0 picks a free one)")
    broker.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    broker.set_defaults(run=broker_command, graceful=True)

    serve = command(
        "serve",
        "serve @tool functions or BaseTool classes from Python modules",
        (
            "argentic-tools serve tool_clients.calculator  # every tool in a module",
            "argentic-tools serve tool_clients.units:convert_units tool_clients.clock",
            "argentic-tools serve tool_clients.weather --max-concurrency 8 --session persistent",
            "argentic-tools serve tool_clients/calculator.py --reload  # served again on each edit",
        ),
    )
    serve.add_argument(
        "tools",
        nargs="+",
        metavar="MODULE[:OBJECT]",
        help="a module (every tool in it), MODULE:OBJECT (a tool or a list of tools), "
        "or a file: path/to/tools.py[:OBJECT]",
    )
    add_service_arguments(serve)
    serve.add_argument(
        "--reload",
        action="store_true",
        help="serve again whenever a .py file of the tools changes (the file's directory, "
        "the module's package); needs watchfiles, in the [cli] extra",
    )
    serve.set_defaults(run=serve_command, graceful=True)

    listing = command(
        "list",
        "list the registered tools",
        (
            "argentic-tools list",
            "argentic-tools list --wide --wait 3",
            "argentic-tools list --json --expect calculate",
        ),
    )
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.add_argument(
        "--wide", action="store_true", help="add the ids, tags and serving client to the table"
    )
    listing.add_argument(
        "--wait",
        type=float,
        default=1.0,
        help="at most this many seconds to collect tools (ends once registrations stop)",
    )
    _add_expect_argument(listing)
    add_mcp_server_arguments(listing)
    listing.set_defaults(run=list_command, log_level="WARNING")

    call = command(
        "call",
        "call a tool and print its result as JSON",
        (
            "argentic-tools call calculate expression='2 * (3 + 4)'  # KEY=VALUE",
            'argentic-tools call calculate \'{"expression": "sqrt(16)"}\'  # one JSON object',
            "argentic-tools call convert_units value=10 from_unit=km to_unit=mi",
            "argentic-tools call current_time --json --timeout 5",
            "argentic-tools call current_time --tool-log debug --no-ask  # its logs; no questions",
        ),
    )
    call.add_argument("name", help="tool name (or id)")
    call.add_argument(
        "arguments",
        nargs="*",
        metavar=ARGS,
        help="the tool's arguments: KEY=VALUE pairs typed by the tool's schema "
        "(a=2 b=true tags='[\"x\"]'), or one JSON object ('-' reads it from stdin)",
    )
    call.add_argument(
        "--timeout",
        type=positive_seconds,
        default=None,
        help="seconds to wait for the result (30 by default; with --idle-timeout, the "
        "absolute limit unless --max-duration is given)",
    )
    call.add_argument(
        "--idle-timeout",
        type=positive_seconds,
        default=None,
        help="for long calls: give up after this many seconds without a progress report",
    )
    call.add_argument(
        "--max-duration",
        type=positive_seconds,
        default=None,
        help="with --idle-timeout: the absolute limit no progress extends",
    )
    call.add_argument(
        "--json",
        action="store_true",
        help="print progress, streamed chunks and the result as JSON lines",
    )
    call.add_argument(
        "--save-content",
        default=None,
        metavar="DIR",
        help="write each image, audio and embedded resource of the result to a file of DIR "
        "(named TOOL-CALL-N.EXT, never overwriting one; created when missing)",
    )
    call.add_argument(
        "--wait",
        type=positive_seconds,
        default=5.0,
        help="at most this many seconds to wait for the tool (a name close to a registered "
        "one fails as soon as registrations stop: a typo)",
    )
    call.add_argument(
        "--no-ask",
        action="store_true",
        help="never put the tool's questions to you (it learns that its caller cannot answer); "
        "also so when stdin is not a terminal",
    )
    call.add_argument(
        "--tool-log",
        type=shown_level,
        default="info",
        metavar="LEVEL",
        help="print the tool's log records from LEVEL up (debug, info, notice, warning, error, "
        "critical, alert, emergency), or none of them: off",
    )
    call.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory the tool may work in, when it asks for its caller's roots (repeatable)",
    )
    add_mcp_server_arguments(call)
    call.set_defaults(run=call_command, log_level="WARNING")

    describe = command(
        "describe",
        "export the tool registry for an LLM",
        (
            "argentic-tools describe  # text to paste into a system prompt",
            "argentic-tools describe --format openai --expect calculate",
            "argentic-tools describe --format mcp --wait 3",
        ),
    )
    describe.add_argument(
        "--format",
        choices=("prompt", "openai", "openai-responses", "anthropic", "mcp"),
        default="prompt",
        help="prompt: readable text for a system prompt, one block per tool (its name, "
        "its description, its parameters as JSON Schema); openai (Chat Completions), "
        "openai-responses (Responses API), anthropic, mcp: a JSON array of tool "
        "definitions in that API's shape (ToolManager.export_tools)",
    )
    describe.add_argument(
        "--wait",
        type=float,
        default=1.0,
        help="at most this many seconds to collect tools (ends once registrations stop)",
    )
    _add_expect_argument(describe)
    describe.set_defaults(run=describe_command, log_level="WARNING")

    stats = command(
        "stats",
        "show what each tool process has served: calls, errors, latency",
        ("argentic-tools stats", "argentic-tools stats --json --expect calculate"),
    )
    stats.add_argument(
        "--json", action="store_true", help="print each process's answer as JSON, for scripts"
    )
    stats.add_argument(
        "--wait",
        type=positive_seconds,
        default=1.0,
        help="at most this many seconds to collect tools (ends once registrations stop), then "
        "at most as long again for the processes' answers (ends once they have all answered)",
    )
    _add_expect_argument(stats)
    stats.set_defaults(run=stats_command, log_level="WARNING")

    top = command(
        "top",
        "a live view of the fleet: calls per second, errors, latency per tool",
        ("argentic-tools top  # q quits", "argentic-tools top --sort errors --once"),
    )
    top.add_argument(
        "--interval", type=positive_seconds, default=1.0, help="seconds between refreshes"
    )
    top.add_argument(
        "--sort",
        choices=SORT_KEYS,
        default="rate",
        help="order of the tools (rate: calls per second; all but name put the largest first)",
    )
    top.add_argument(
        "--once",
        action="store_true",
        help="print one frame (two samples --interval apart) and exit",
    )
    top.add_argument(
        "--wait",
        type=positive_seconds,
        default=1.0,
        help="seconds to let the tools register before the first frame (ends early once "
        "registrations stop, or once every --expect tool is in), and at most for the "
        "processes' answers in each refresh (ends as soon as they have all answered)",
    )
    _add_expect_argument(top)
    top.set_defaults(run=top_command, interactive=True, log_level="WARNING")

    watch = command(
        "watch",
        "print registrations, calls and results as they happen",
        (
            "argentic-tools watch",
            "argentic-tools watch --type call --type result --tool calculate",
            "argentic-tools watch --count 10 --all",
        ),
    )
    watch.add_argument("--count", type=int, default=0, help="stop after N events (0: never)")
    watch.add_argument(
        "--type",
        action="append",
        default=[],
        metavar="KIND",
        help="show only this kind (register, registered, call, result, error, cancel, "
        "progress, chunk, offline, ...); repeatable",
    )
    watch.add_argument(
        "--tool", action="append", default=[], metavar="NAME", help="show only this tool"
    )
    watch.add_argument(
        "--all",
        action="store_true",
        help="also show tools registering again (each manager that starts makes them)",
    )
    watch.set_defaults(run=watch_command, graceful=True, log_level="WARNING")

    from .records.history import history_command  # with its options, as one block

    history = command(
        "history",
        "show the calls a SqliteRecorder kept, newest first",
        (
            "argentic-tools history --history calls.db",
            "argentic-tools history --history calls.db --tool calculate --since 1h",
            "argentic-tools history --history calls.db --outcome error --json --limit 0",
            "argentic-tools history --history calls.db TASK_ID  # one call, its questions and logs",
        ),
        client=False,
    )
    history.add_argument(
        "call",
        nargs="?",
        default=None,
        metavar="ID",
        help="show this call in full (its task id or call id): arguments, result or error, "
        "content, and its exchange with its caller (questions, answers, log records)",
    )
    history.add_argument(
        "--history",
        required=True,
        metavar="FILE",
        help="the SQLite file of ToolManager(recorder=SqliteRecorder(FILE))",
    )
    history.add_argument("--tool", default=None, metavar="NAME", help="only calls to this tool")
    history.add_argument(
        "--thread", default=None, metavar="ID", help="only calls made in this conversation thread"
    )
    history.add_argument(
        "--user",
        default=None,
        metavar="SUBJECT",
        help="only calls made on behalf of this user (an MCP gateway's caller)",
    )
    history.add_argument(
        "--outcome",
        default=None,
        help="only calls that ended so: a status (success, error, failed, timeout, cancelled) "
        "or an error code (not_found, invalid_arguments, execution_error, ...)",
    )
    history.add_argument(
        "--since",
        default=None,
        metavar="WHEN",
        help="only calls that ended at or after WHEN: how long ago (90, 15m, 2h, 7d) or "
        "an ISO 8601 time (2025-06-01T12:00, local time unless it has an offset)",
    )
    history.add_argument(
        "--until", default=None, metavar="WHEN", help="only calls that ended before WHEN"
    )
    history.add_argument(
        "--limit", type=int, default=100, metavar="N", help="show the newest N calls (0: all)"
    )
    history.add_argument(
        "--json", action="store_true", help="print a JSON array of the calls, for scripts"
    )
    history.set_defaults(sync=history_command, log_level="WARNING")

    from .records.tasks import add_tasks_arguments, tasks_command  # one block, as above

    tasks = command(
        "tasks",
        "list, show, wait for or cancel the calls a call journal keeps",
        (
            "argentic-tools tasks list --journal calls.journal --status running",
            "argentic-tools tasks show report-42 --journal calls.journal",
            "argentic-tools tasks wait report-42 --journal calls.journal --timeout 600",
            "argentic-tools tasks cancel report-42 --journal calls.journal",
        ),
    )
    add_tasks_arguments(tasks)
    tasks.set_defaults(run=tasks_command, log_level="WARNING")

    from .fleet.dashboard import add_dashboard_arguments, dashboard_command  # one block, as above

    dashboard = command(
        "dashboard",
        "a live view of the fleet and its calls in a browser",
        (
            "argentic-tools dashboard  # http://127.0.0.1:8765",
            "argentic-tools dashboard --http 127.0.0.1:0 --history calls.db",
        ),
    )
    add_dashboard_arguments(dashboard)
    dashboard.set_defaults(run=dashboard_command, graceful=True, log_level="WARNING")

    mcp = commands.add_parser(
        "mcp",
        help="serve the fleet to MCP clients, or bring an MCP server onto the bus",
        description="The fleet in the MCP ecosystem (needs the mcp extra).",
    )
    mcp_commands = mcp.add_subparsers(dest="mcp_command", required=True, metavar="COMMAND")

    mcp_serve = _add_command(
        mcp_commands,
        "serve",
        "serve the tools on the bus to MCP clients (stdio or HTTP)",
        (
            "argentic-tools mcp serve  # over stdio, for an MCP client to start",
            "argentic-tools mcp serve --http 127.0.0.1:8000  # http://127.0.0.1:8000/mcp",
        ),
    )
    mcp_serve.add_argument(
        "--transport",
        choices=("stdio", "streamable-http", "http"),
        default=None,
        help="stdio (the default), or streamable-http (http for short) on --http's address",
    )
    mcp_serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        default=None,
        help="serve streamable HTTP on http://HOST:PORT/mcp instead of stdio"
        " (127.0.0.1:8000 with --transport streamable-http alone)",
    )
    mcp_serve.add_argument(
        "--path",
        default="/mcp",
        help="the HTTP endpoint's path (default /mcp)",
    )
    mcp_serve.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve Prometheus metrics on 127.0.0.1:PORT/metrics (needs the [otel] extra)",
    )
    mcp_serve.add_argument(
        "--timeout",
        type=positive_seconds,
        default=None,
        help="seconds a call may take (30 if unset)",
    )
    mcp_serve.add_argument(
        "--journal",
        metavar="PATH",
        default=None,
        help="keep calls and MCP tasks in this SQLite file, so that a gateway restarted on it"
        " picks up the calls left running and still answers tasks/get",
    )
    mcp_serve.add_argument(
        "--wait",
        type=float,
        default=1.0,
        help="seconds to let live tools register before serving (ends early once they have)",
    )
    add_mcp_team_arguments(mcp_serve)
    mcp_serve.set_defaults(
        run=mcp_serve_command, graceful=True, log_level="WARNING", loop=mcp_serve_loop
    )

    add_mcp_team_commands(mcp_commands, _add_command)

    mcp_bridge = _add_command(
        mcp_commands,
        "bridge",
        "register an MCP server's tools on the bus and forward their calls",
        (
            "argentic-tools mcp bridge -- npx -y @modelcontextprotocol/server-everything",
            "argentic-tools mcp bridge --url http://127.0.0.1:8000/mcp",
            "argentic-tools mcp bridge --root ~/site --server-log-level debug -- python server.py",
        ),
    )
    mcp_bridge.add_argument(
        "--url", default=None, help="the MCP server's streamable HTTP URL (instead of a command)"
    )
    mcp_bridge.add_argument(
        "-e",
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a variable for the server (repeatable); it gets only HOME, PATH, SHELL"
        " and TERM from the bridge's environment",
    )
    mcp_bridge.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help='the server from an MCP client\'s config file: {"mcpServers": {NAME: {"command":'
        ' ..., "args": [...], "env": {...}}}} (Claude Desktop\'s, the Inspector\'s)',
    )
    mcp_bridge.add_argument(
        "--server", default=None, metavar="NAME", help="which server of --config to bridge"
    )
    mcp_bridge.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="PATH_OR_URI",
        help="a root the server may work in (repeatable): a directory or a file:// URI;"
        " the bridge answers the server's roots/list with them (none: no roots declared)",
    )
    mcp_bridge.add_argument(
        "--server-log-level",
        default="info",
        choices=("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"),
        metavar="LEVEL",
        help="the least severe of the server's log records to ask for (debug, info, notice,"
        " warning, error, ...); each reaches the caller of the call it comes during",
    )
    mcp_bridge.add_argument(
        "server_command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND...",
        help="the command that starts the MCP server over stdio",
    )
    mcp_bridge.set_defaults(run=mcp_bridge_command, graceful=True)

    mcp_install = _add_command(
        mcp_commands,
        "install",
        "write the stdio gateway (mcp serve) into an MCP client's configuration",
        (
            "argentic-tools mcp install claude-desktop --broker mqtt://localhost:1883",
            "argentic-tools mcp install cursor --project .  # .cursor/mcp.json here",
            "argentic-tools mcp install vscode  # .vscode/mcp.json in this directory",
            "argentic-tools mcp install claude-code --name fleet --topic-prefix team1",
            "argentic-tools mcp install mcp-json -e API_TOKEN=secret  # prints it, for any client",
        ),
    )
    mcp_install.add_argument(
        "target",
        choices=TARGETS,
        help="claude-desktop: its claude_desktop_config.json; claude-code: `claude mcp add`; "
        "cursor: ~/.cursor/mcp.json; vscode: .vscode/mcp.json; mcp-json: print the "
        '{"mcpServers": ...} JSON on stdout',
    )
    mcp_install.add_argument(
        "--name", default=DEFAULT_NAME, help="the server's name in the client's configuration"
    )
    mcp_install.add_argument(
        "-e",
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a variable for the gateway (repeatable)",
    )
    mcp_install.add_argument(
        "--project",
        default=None,
        metavar="DIR",
        help="cursor, vscode: write DIR/.cursor/mcp.json or DIR/.vscode/mcp.json "
        "(vscode's default: the current directory)",
    )
    mcp_install.add_argument(
        "--user",
        action="store_true",
        help="vscode: the user profile's mcp.json instead of the project's",
    )
    mcp_install.set_defaults(sync=install_command)

    demo = command(
        "demo",
        "start the example tools and run a short scripted agent",
        ("argentic-tools demo", "argentic-tools demo --no-dashboard"),
    )
    # Without --broker the demo starts the embedded broker instead of trying 1883.
    demo.add_argument(
        "--no-dashboard",
        action="store_true",
        help=f"leave the dashboard out (also {DASHBOARD_VARIABLE}=0, make demo DASHBOARD=0)",
    )
    demo.add_argument(
        "--exit",
        action="store_true",
        help="exit once the scripted agent is done, instead of serving the tools until Ctrl-C "
        "(make demo EXIT=1)",
    )
    demo.set_defaults(run=demo_command, log_level="WARNING", broker=None)

    # No options of their own (prefix_chars matches none): every argument, --help
    # included, goes to benchmarks.run or benchmarks.soak as it is (whose help and
    # errors name the command, `argentic-tools bench`, and have their own examples).
    for name, help_text in (
        ("bench", "run the benchmarks (from a source checkout)"),
        ("soak", "make calls under a fault schedule and check none is lost (source checkout)"),
    ):
        runner = commands.add_parser(name, help=help_text, prefix_chars="+", add_help=False)
        runner.add_argument("bench_args", nargs=argparse.REMAINDER)
        runner.set_defaults(sync=benchmark_command, debug=False)
    return parser


class _CommandParser(argparse.ArgumentParser):
    """A command's parser: an option it does not know is an error shown with its usage.

    argparse hands a subcommand's unknown arguments back to the root parser, whose
    error shows the root usage (``argentic-tools [-h] [--version] COMMAND ...``), which
    says nothing about the options of the command that was typed.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def _add_command(
    subparsers: "argparse._SubParsersAction[_CommandParser]",
    name: str,
    help_text: str,
    examples: Sequence[str],
    *,
    client: bool = True,
) -> argparse.ArgumentParser:
    """Add a command with ``--debug``, a client's connection options, and help with defaults.

    ``examples`` (command lines that work as written) end the command's help.
    """
    # A fresh parent per command: argparse shares a parent's actions between its
    # children, so one command's set_defaults would change every other's defaults.
    options = _CommandParser(add_help=False)
    options.add_argument("--debug", action="store_true", help="show tracebacks with errors")
    if client:
        add_connection_arguments(options)
    return subparsers.add_parser(
        name,
        help=help_text,
        description=help_text,
        parents=[options],
        formatter_class=_HelpWithDefaults,
        epilog="Examples:\n" + "\n".join(f"  {example}" for example in examples),
    )


class _HelpWithDefaults(
    argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter
):
    """Help that shows each option's default, when it has one worth showing.

    The epilog (the examples) is printed as written, one command line per line.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        unset = action.default is None or action.default is False or action.default == []
        if unset or not action.option_strings:
            return action.help or ""
        return super()._get_help_string(action) or ""


def positive_seconds(text: str) -> float:
    """A number of seconds above zero (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds above 0")
    return value


def _add_expect_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--expect NAME`` (repeatable) to a command that collects registrations."""
    parser.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="NAME",
        help="stop collecting as soon as this tool (name or id) is registered, "
        "within --wait seconds; repeatable",
    )


def _configure_logging(level: LogLevel, debug: bool) -> None:
    handler = RichHandler(console=stderr, show_path=False, rich_tracebacks=debug)
    handler.setLevel(level)
    logging.basicConfig(level=level, format="%(message)s", datefmt="[%X]", handlers=[handler])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # serve --reload runs it again
    debug = bool(args.debug)
    try:
        level = parse_log_level(getattr(args, "log_level", "WARNING"))
    except ValueError as exc:
        parser.error(str(exc))
    _configure_logging(level, debug)
    try:
        if hasattr(args, "sync"):
            return int(args.sync(args))
        return run_command(
            args.run,
            args,
            graceful=getattr(args, "graceful", False),
            interactive=getattr(args, "interactive", False),
            loop_factory=args.loop(args) if hasattr(args, "loop") else None,
        )
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
    if debug and not isinstance(exc, CliError):
        # A CliError is a message we wrote; its traceback would only show the CLI.
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

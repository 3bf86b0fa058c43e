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
from collections.abc import Callable, Sequence

from rich.logging import RichHandler

from .._errors import BrokerError, ToolsError
from .._logging import LogLevel, configure_logging, default_log_format, parse_log_level
from . import bench, demo
from .calling import call
from .common import (
    EXIT_CALL_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    print_error,
    run_command,
    stderr,
)
from .fleet import dashboard, registry, stats, watch
from .mcp import parser as mcp
from .options import CommandParser, Commands
from .records import history, tasks
from .serving import broker, serve

# -- parser and entry point ------------------------------------------------------------

_COMMANDS: tuple[Callable[[Commands], None], ...] = (
    broker.add_parser,
    serve.add_parser,
    registry.add_list_parser,
    call.add_parser,
    registry.add_describe_parser,
    stats.add_stats_parser,
    stats.add_top_parser,
    watch.add_parser,
    history.add_parser,
    tasks.add_parser,
    dashboard.add_parser,
    mcp.add_parser,
    demo.add_parser,
    bench.add_parsers,
)
"""Each command adds its own parser, beside its code; in the order ``--help`` lists them."""


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
        dest="command", required=True, metavar="COMMAND", parser_class=CommandParser
    )
    for add_parser in _COMMANDS:
        add_parser(commands)
    return parser


def _configure_logging(level: LogLevel, log_format: str, debug: bool) -> None:
    """Rich on a terminal (``auto``), else one record per line (``plain`` or ``json``).

    A command without ``--log-format`` (a one-shot one) still follows
    ``$ARGENTIC_TOOLS_LOG_FORMAT``, and writes plain lines off a terminal.
    """

    def terminal() -> logging.Handler:
        return RichHandler(console=stderr, show_path=False, rich_tracebacks=debug)

    configure_logging(level, log_format, stream=sys.stderr, terminal=terminal)


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
    _configure_logging(level, getattr(args, "log_format", None) or default_log_format(), debug)
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

"""What every command's parser shares: a command's parser, options and help, and option types.

Each command adds its own parser beside its implementation (an ``add_parser`` function
of its module); :func:`add_command` gives each one ``--debug``, a client's connection
options, help that shows defaults and ends with examples, and an error for an option it
does not know. :mod:`.main` wires them into ``argentic-tools``.
"""

import argparse
from collections.abc import Sequence
from typing import TypeAlias

from .._logging import add_log_format_argument
from .._tools.hosting.service import add_connection_arguments
from .common import CliError


class CommandParser(argparse.ArgumentParser):
    """A command's parser: an option it does not know is an error shown with its usage.

    argparse hands a subcommand's unknown arguments back to the root parser, whose
    error shows the root usage (``argentic-tools [-h] [--version] COMMAND ...``), which
    says nothing about the options of the command that was typed.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse the command's arguments; one it does not know ends the run with its usage."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


Commands: TypeAlias = "argparse._SubParsersAction[CommandParser]"
"""Where a command adds its parser: ``argentic-tools``'s commands, or ``mcp``'s."""


def add_command(
    commands: Commands,
    name: str,
    help_text: str,
    examples: Sequence[str],
    *,
    client: bool = True,
    long_running: bool = False,
) -> argparse.ArgumentParser:
    """Add a command with ``--debug``, a client's connection options, and help with defaults.

    ``examples`` (command lines that work as written) end the command's help. A
    ``long_running`` command (a server) also takes ``--log-format``.
    """
    # A fresh parent per command: argparse shares a parent's actions between its
    # children, so one command's set_defaults would change every other's defaults.
    options = CommandParser(add_help=False)
    options.add_argument("--debug", action="store_true", help="show tracebacks with errors")
    if client:
        add_connection_arguments(options)
    if long_running:
        add_log_format_argument(options)
    return commands.add_parser(
        name,
        help=help_text,
        description=help_text,
        parents=[options],
        formatter_class=HelpWithDefaults,
        epilog="Examples:\n" + "\n".join(f"  {example}" for example in examples),
    )


class HelpWithDefaults(
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


def add_expect_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--expect NAME`` (repeatable) to a command that collects registrations."""
    parser.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="NAME",
        help="stop collecting as soon as this tool (name or id) is registered, "
        "within --wait seconds; repeatable",
    )


def add_collect_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--wait SECONDS`` and ``--expect NAME`` for collecting the registry once."""
    parser.add_argument(
        "--wait",
        type=float,
        default=1.0,
        help="at most this many seconds to collect tools (ends once registrations stop)",
    )
    add_expect_argument(parser)


def add_env_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, help_text: str
) -> None:
    """Add ``-e/--env KEY=VALUE`` (repeatable): variables for a process the command starts."""
    parser.add_argument(
        "-e", "--env", action="append", default=[], metavar="KEY=VALUE", help=help_text
    )


def host_and_port(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``:PORT`` means 127.0.0.1) as a pair."""
    host, _, port = text.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise CliError(f"--http {text!r}: expected HOST:PORT, like 127.0.0.1:8000") from None
    if not 0 <= number <= 65535:
        raise CliError(f"--http {text!r}: the port must be 0-65535")
    return host or "127.0.0.1", number

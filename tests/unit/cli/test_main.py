"""The parser: option values it checks (seconds, HOST:PORT), its errors and its help."""

import argparse
import re
import shlex
from collections.abc import Iterator

import pytest

from argentic_tools.cli.common import CliError
from argentic_tools.cli.fleet.dashboard import DEFAULT_ADDRESS
from argentic_tools.cli.main import build_parser
from argentic_tools.cli.mcp.commands import http_address
from argentic_tools.cli.options import host_and_port, positive_seconds


def test_seconds_and_addresses_are_checked() -> None:
    assert positive_seconds("1.5") == 1.5
    for bad in ("0", "-1", "inf", "soon"):
        with pytest.raises(argparse.ArgumentTypeError, match="seconds"):
            positive_seconds(bad)
    assert host_and_port("127.0.0.1:8000") == ("127.0.0.1", 8000)
    assert host_and_port(":0") == ("127.0.0.1", 0)
    with pytest.raises(CliError, match="HOST:PORT"):
        host_and_port("localhost")


Command = tuple[tuple[str, ...], argparse.ArgumentParser]
BENCHMARKS = {("bench",), ("soak",)}
"""Their help is the benchmark module's own (see test_cli's bench and soak tests)."""


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Command]:
    """Every command's parser, nested ones (``mcp serve``) included, with its words."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))
    if path and not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
        yield path, parser


def test_every_commands_help_ends_with_examples_that_the_parser_accepts() -> None:
    commands = [command for command in _commands(build_parser()) if command[0] not in BENCHMARKS]
    assert len(commands) == 17
    for words, parser in commands:
        help_text = parser.format_help()
        assert "\nExamples:\n  argentic-tools " in help_text, words
        examples = help_text.split("\nExamples:\n", 1)[1].strip().splitlines()
        assert len(examples) >= 2, words
        for example in examples:
            argv = shlex.split(example, comments=True)
            assert argv[: 1 + len(words)] == ["argentic-tools", *words], example
            args = build_parser().parse_args(argv[1:])  # SystemExit if it does not parse
            assert [args.command, *([args.mcp_command] if words[0] == "mcp" else [])] == [*words]


def test_an_unknown_option_is_reported_with_the_usage_of_the_command_typed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cases = {"list": ["list", "--bogus"], "mcp serve": ["mcp", "serve", "--bogus"]}
    cases["call"] = ["call", "echo", "--jsn"]
    for command, argv in cases.items():
        with pytest.raises(SystemExit) as exit_info:
            build_parser().parse_args(argv)
        assert exit_info.value.code == 2
        error = capsys.readouterr().err
        assert error.startswith(f"usage: argentic-tools {command} [-h]"), error
        assert error.rstrip().endswith(f"error: unrecognized arguments: {argv[-1]}")


def test_help_shows_no_empty_list_as_a_default() -> None:
    listing = dict(_commands(build_parser()))[("list",)]
    help_text = " ".join(listing.format_help().split())
    assert "--expect NAME" in help_text
    assert "(default: [])" not in help_text


def serve_address(*options: str) -> tuple[str, int] | None:
    return http_address(build_parser().parse_args(["mcp", "serve", *options]))


def test_mcp_serve_picks_its_transport_from_transport_or_http() -> None:
    assert serve_address() is None
    assert serve_address("--transport", "stdio") is None
    assert serve_address("--http", ":9000") == ("127.0.0.1", 9000)
    assert serve_address("--transport", "streamable-http") == ("127.0.0.1", 8000)
    assert serve_address("--transport", "http", "--http", "0.0.0.0:1") == ("0.0.0.0", 1)
    with pytest.raises(CliError, match="choose one"):
        serve_address("--transport", "stdio", "--http", ":1")
    with pytest.raises(CliError, match="must start with /"):
        serve_address("--transport", "http", "--path", "mcp")


def test_every_option_shows_its_default_once() -> None:
    for words, parser in _commands(build_parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            if action.help:
                shown = formatter._expand_help(action)
                assert len(re.findall(r"\(default", shown)) <= 1, (words, shown)


def test_dashboard_help_names_the_address_it_listens_on_by_default() -> None:
    help_text = dict(_commands(build_parser()))[("dashboard",)].format_help()
    assert f"http://{DEFAULT_ADDRESS}" in help_text
    assert "8765" not in help_text

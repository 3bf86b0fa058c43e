"""Option values the command line checks before it starts: seconds and HOST:PORT addresses."""

import argparse

import pytest

from argentic_tools.cli.common import CliError
from argentic_tools.cli.main import build_parser, positive_seconds
from argentic_tools.cli.mcp_commands import host_and_port, http_address


def test_seconds_and_addresses_are_checked() -> None:
    assert positive_seconds("1.5") == 1.5
    for bad in ("0", "-1", "inf", "soon"):
        with pytest.raises(argparse.ArgumentTypeError, match="seconds"):
            positive_seconds(bad)
    assert host_and_port("127.0.0.1:8000") == ("127.0.0.1", 8000)
    assert host_and_port(":0") == ("127.0.0.1", 0)
    with pytest.raises(CliError, match="HOST:PORT"):
        host_and_port("localhost")


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

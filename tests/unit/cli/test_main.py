"""Option values the command line checks before it starts: seconds and HOST:PORT addresses."""

import argparse

import pytest

from argentic_tools.cli.common import CliError
from argentic_tools.cli.main import positive_seconds
from argentic_tools.cli.mcp_commands import host_and_port


def test_seconds_and_addresses_are_checked() -> None:
    assert positive_seconds("1.5") == 1.5
    for bad in ("0", "-1", "inf", "soon"):
        with pytest.raises(argparse.ArgumentTypeError, match="seconds"):
            positive_seconds(bad)
    assert host_and_port("127.0.0.1:8000") == ("127.0.0.1", 8000)
    assert host_and_port(":0") == ("127.0.0.1", 0)
    with pytest.raises(CliError, match="HOST:PORT"):
        host_and_port("localhost")

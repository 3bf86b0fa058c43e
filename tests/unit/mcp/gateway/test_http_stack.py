"""The gateway's HTTP stack: uvloop and httptools when installed, asyncio and h11 otherwise."""

import asyncio
import importlib.util

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from argentic_tools.cli.main import build_parser
from argentic_tools.mcp.gateway import http_stack


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


async def loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_the_loop_is_uvloops_when_it_is_installed_and_asyncios_otherwise() -> None:
    with asyncio.Runner(loop_factory=http_stack.loop_factory()) as runner:
        module = runner.run(loop_module())
    assert module.startswith("uvloop") == installed("uvloop")
    assert ("uvloop" in http_stack.describe()) == installed("uvloop")


def test_uvicorn_parses_http_with_httptools_when_it_is_installed_and_logs_no_access() -> None:
    options = http_stack.uvicorn_options()
    assert options["http"] == ("httptools" if installed("httptools") else "h11")
    assert options["access_log"] is False


@pytest.mark.parametrize(
    ("arguments", "http"),
    [([], False), (["--http", "127.0.0.1:0"], True), (["--transport", "streamable-http"], True)],
)
def test_mcp_serve_chooses_the_http_stacks_loop_only_for_http(
    arguments: list[str], http: bool
) -> None:
    args = build_parser().parse_args(["mcp", "serve", *arguments])
    expected = http_stack.loop_factory() if http else None
    assert args.loop(args) == expected

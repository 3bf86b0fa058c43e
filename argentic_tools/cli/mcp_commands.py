"""``argentic-tools mcp serve`` and ``argentic-tools mcp bridge`` (the ``mcp`` extra)."""

import argparse
import functools
import gc
import importlib
import sys
from types import ModuleType

import anyio

from .. import start_metrics_server
from .common import EXIT_OK, CliError, StopRequest, connected_manager, settle


def _load(module: str) -> ModuleType:
    """Import ``argentic_tools.mcp.<module>``, or say which extra is missing."""
    try:
        return importlib.import_module(f"argentic_tools.mcp.{module}")
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] in ("mcp", "mcp_types", "uvicorn"):
            raise CliError(
                "the MCP commands need the mcp extra: pip install 'argentic-tools[mcp]'"
            ) from None
        raise


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


async def mcp_serve_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``mcp serve``: the fleet as an MCP server, on stdio or streamable HTTP."""
    gateway_module = _load("gateway")
    address = host_and_port(args.http) if args.http else None
    if args.metrics_port is not None:
        try:
            start_metrics_server(args.metrics_port)
        except (RuntimeError, OSError) as exc:
            raise CliError(f"--metrics-port {args.metrics_port}: {exc}") from None
    async with connected_manager(args) as manager:
        await settle(manager, args.wait)
        # What exists now lives as long as the gateway: keep it out of the collector's
        # full passes, which otherwise stalled a 1,000-tool listing by ~130 ms at random.
        gc.collect()
        gc.freeze()
        gateway = gateway_module.McpGateway(manager, timeout=args.timeout)
        if address is not None:
            async with anyio.create_task_group() as group:
                http = functools.partial(gateway.serve_http, *address, stop=stop.requested.wait)
                port = await group.start(http)
                # Plain, unwrapped and flushed: scripts (and tests) read the address here.
                print(
                    f"MCP gateway listening on http://{address[0]}:{port}/mcp",
                    file=sys.stderr,
                    flush=True,
                )
            return EXIT_OK
        # Until the client goes away, or SIGTERM: then the calls in flight finish first.
        await gateway.serve_stdio(stop=stop.requested.wait)
    return EXIT_OK


async def mcp_bridge_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``mcp bridge``: an MCP server's tools on the bus, restarted when it dies."""
    bridge_module = _load("bridge")
    command = [part for part in args.server_command if part != "--"]
    if bool(command) == bool(args.url):
        raise CliError("give the MCP server either as -- COMMAND... (stdio) or as --url URL")
    bridge = bridge_module.McpBridge(
        args.broker,
        command=command or None,
        url=args.url,
        topic_prefix=args.topic_prefix,
        tls_params=None,
    )
    async with anyio.create_task_group() as group:
        group.start_soon(bridge.run)
        await stop.requested.wait()
        group.cancel_scope.cancel()
    return EXIT_OK

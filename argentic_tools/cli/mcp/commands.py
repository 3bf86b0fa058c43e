"""``argentic-tools mcp serve`` and ``argentic-tools mcp bridge`` (the ``mcp`` extra)."""

import argparse
import asyncio
import contextlib
import functools
import gc
import hashlib
import json
import logging
import shlex
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio

from ... import start_metrics_server
from ..._errors import BrokerError
from ..common import EXIT_OK, CliError, StopRequest, connected_manager, settle
from ..options import Commands, add_command, add_env_argument, host_and_port, positive_seconds
from .credentials import add_credential_arguments, header_pair, request_headers
from .extra import mcp_module
from .team import add_serve_arguments, audit_of, open_gateway_warning, team_access


def _load(module: str) -> ModuleType:
    """Import ``argentic_tools.mcp.<module>``, or say which extra is missing."""
    return mcp_module(module, ("mcp", "mcp_types", "uvicorn"))


logger = logging.getLogger(__name__)

DEFAULT_HTTP = "127.0.0.1:8000"
"""Where ``mcp serve --transport streamable-http`` listens without ``--http``."""


def http_address(args: argparse.Namespace) -> tuple[str, int] | None:
    """Where ``mcp serve`` listens for HTTP, or None for stdio."""
    if args.transport == "stdio":
        if args.http:
            raise CliError("--transport stdio and --http HOST:PORT: choose one")
        return None
    if args.transport is None and not args.http:
        return None
    if not args.path.startswith("/"):
        raise CliError(f"--path {args.path!r}: the path must start with /, like /mcp")
    return host_and_port(args.http or DEFAULT_HTTP)


def journal_client_id(path: str) -> str:
    """The gateway's MQTT client id with ``--journal PATH``: the same for the same file.

    A manager that picks up the calls of its journal must be the client that made them
    (tools answer a caller by its id); this one is derived from the host and the journal's
    absolute path, so a gateway restarted on that journal is that client again.
    """
    where = f"{socket.gethostname()}:{Path(path).resolve()}"
    return f"mcp-gateway-{hashlib.sha256(where.encode()).hexdigest()[:16]}"


def mcp_serve_loop(args: argparse.Namespace) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop ``mcp serve`` runs on (None: asyncio's).

    uvloop's for HTTP when it is installed (see :mod:`argentic_tools.mcp.gateway.http_stack`).
    """
    if http_address(args) is None:
        return None
    return _load("gateway.http_stack").loop_factory()  # type: ignore[no-any-return]


async def mcp_serve_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``mcp serve``: the fleet as an MCP server, on stdio or streamable HTTP."""
    gateway_module = _load("gateway")
    address = http_address(args)
    access = team_access(args, address)
    warning = open_gateway_warning(args, address)
    if warning is not None:
        logger.warning(warning)
    if args.metrics_port is not None:
        try:
            start_metrics_server(args.metrics_port)
        except (RuntimeError, OSError) as exc:
            raise CliError(f"--metrics-port {args.metrics_port}: {exc}") from None
    async with contextlib.AsyncExitStack() as stack:
        journal = getattr(args, "journal", None)
        try:
            manager = await stack.enter_async_context(
                connected_manager(
                    args,
                    journal=journal,
                    client_id=None if journal is None else journal_client_id(journal),
                    recorder=audit_of(args),
                )
            )
        except BrokerError as exc:
            if address is None:  # tell the MCP client why, not only our stderr
                await _load("gateway.stdin").refuse_stdio(f"argentic-tools mcp serve: {exc}")
            raise
        await settle(manager, args.wait)
        # What exists now lives as long as the gateway: keep it out of the collector's
        # full passes, which otherwise stalled a 1,000-tool listing by ~130 ms at random.
        gc.collect()
        gc.freeze()
        tasks = None if journal is None else _load("tasks.task_store").TaskStore(journal)
        gateway = gateway_module.McpGateway(
            manager,
            timeout=args.timeout,
            tasks=tasks,
            access=access,
            drain_timeout=args.drain_timeout,
        )
        if address is not None:
            async with anyio.create_task_group() as group:
                http = functools.partial(
                    gateway.serve_http, *address, path=args.path, stop=stop.requested.wait
                )
                port = await group.start(http)
                # Plain, unwrapped and flushed: scripts (and tests) read the address here.
                print(
                    f"MCP gateway listening on http://{address[0]}:{port}{args.path}",
                    file=sys.stderr,
                    flush=True,
                )
            return EXIT_OK
        # Until the client goes away, or SIGTERM: then the calls in flight finish first.
        await gateway.serve_stdio(stop=stop.requested.wait)
    return EXIT_OK


def env_pairs(pairs: list[str]) -> dict[str, str]:
    """``-e KEY=VALUE`` options as a dict."""
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"-e {pair!r}: expected KEY=VALUE, like -e API_TOKEN=secret")
        env[key] = value
    return env


@dataclass(frozen=True)
class McpServer:
    """An MCP server to talk to: a command started over stdio, or a URL."""

    command: list[str] | None = None
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    """Sent with each request to a server reached by URL: credentials, never printed."""

    def __str__(self) -> str:
        return self.url or shlex.join(self.command or ())


def server_from_config(path: str, name: str | None) -> McpServer:
    """Server ``name`` of an ``mcpServers`` config file: its command and env, or URL and headers."""
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CliError(f"--config {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise CliError(f"--config {path}: not JSON: {exc}") from None
    servers = config.get("mcpServers") if isinstance(config, dict) else None
    if not isinstance(servers, dict) or not servers:
        raise CliError(f'--config {path}: expected {{"mcpServers": {{NAME: {{"command": ...}}}}}}')
    if name is None:
        if len(servers) > 1:
            raise CliError(f"--config {path} has several servers: choose one with --server NAME")
        (name,) = servers
    entry: Any = servers.get(name)
    if entry is None:
        names = ", ".join(sorted(servers))
        raise CliError(f"--config {path}: no server {name!r} (it has {names})")
    where = f"--config {path}, server {name!r}"
    if not isinstance(entry, dict):
        raise CliError(f'{where}: expected {{"command": ...}} or {{"url": ...}}')
    if "url" in entry and "command" not in entry:
        return _url_server(entry, where)
    command, args, env = entry.get("command"), entry.get("args", []), entry.get("env", {})
    if not isinstance(command, str) or not command:
        raise CliError(f'{where}: expected "command": a string, or "url": an http(s) URL')
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise CliError(f'{where}: expected "args": a list of strings')
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise CliError(f'{where}: expected "env": an object of strings')
    return McpServer(command=[command, *args], env=dict(env))


def _url_server(entry: dict[str, Any], where: str) -> McpServer:
    """A config file's ``{"url": ..., "headers": {...}}`` entry."""
    url, headers = entry["url"], entry.get("headers", {})
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise CliError(f'{where}: expected "url": an http:// or https:// URL')
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise CliError(f'{where}: expected "headers": an object of strings')
    if "env" in entry:
        raise CliError(f'{where}: "env" is for a server started as a command, not for a URL')
    checked = dict(header_pair(f"{key}: {value}", where) for key, value in headers.items())
    return McpServer(url=url, headers=checked)


async def mcp_bridge_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``mcp bridge``: an MCP server's tools on the bus, restarted when it dies."""
    bridge_module = _load("bridge")
    command = [part for part in args.server_command if part != "--"]
    server = McpServer(command=command or None, url=args.url)
    if args.config is not None:
        if command or args.url:
            raise CliError("give the MCP server as --config FILE, -- COMMAND... or --url URL")
        server = server_from_config(args.config, args.server)
    elif args.server is not None:
        raise CliError("--config FILE is where --server NAME picks a server")
    if (server.command is None) == (server.url is None):
        raise CliError("give the MCP server either as -- COMMAND... (stdio) or as --url URL")
    env = server.env | env_pairs(args.env)
    if env and server.url:
        raise CliError("-e KEY=VALUE is for a server started as a command, not for --url")
    headers = request_headers(args, by_url=server.url is not None, configured=server.headers)
    try:
        roots = [_load("bridge.server_requests").root_from(root) for root in args.root]
    except ValueError as exc:
        raise CliError(f"--root {exc}") from None
    bridge = bridge_module.McpBridge(
        args.broker,
        command=server.command,
        url=server.url,
        env=env,
        headers=headers,
        topic_prefix=args.topic_prefix,
        roots=roots,
        server_log_level=args.server_log_level,
        tls_params=None,
    )
    not_found = _load("bridge.server_process").ServerNotFoundError
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(bridge.run)
            await stop.requested.wait()
            group.cancel_scope.cancel()
    except BaseExceptionGroup as failed:
        missing = failed.subgroup(not_found)
        if missing is None:
            raise
        # A mistyped command: one line, not a restart loop.
        raise CliError(str(missing.exceptions[0])) from None
    return EXIT_OK


def add_config_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, verb: str
) -> None:
    """Add ``--config FILE`` and ``--server NAME`` (see :func:`server_from_config`).

    Args:
        parser: Where to add them.
        verb: What the command does with the server, for the help (``which server of
            --config to <verb>``).

    """
    parser.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help='the server from an MCP client\'s config file: {"mcpServers": {NAME: {"command":'
        ' ..., "args": [...], "env": {...}}}} (Claude Desktop\'s, the Inspector\'s), or'
        ' {NAME: {"url": ..., "headers": {...}}}',
    )
    parser.add_argument(
        "--server", default=None, metavar="NAME", help=f"which server of --config to {verb}"
    )


def add_serve_parser(commands: Commands) -> None:
    """``mcp serve``: its options, with the team's (``--auth``, ``--views``, ``--audit``)."""
    mcp_serve = add_command(
        commands,
        "serve",
        "serve the tools on the bus to MCP clients (stdio or HTTP)",
        (
            "argentic-tools mcp serve  # over stdio, for an MCP client to start",
            "argentic-tools mcp serve --http 127.0.0.1:8000  # http://127.0.0.1:8000/mcp",
        ),
        long_running=True,
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
        " (127.0.0.1:8000 with --transport streamable-http alone); /healthz and /readyz"
        " answer there without authentication",
    )
    mcp_serve.add_argument(
        "--path",
        default="/mcp",
        help="the HTTP endpoint's path",
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
        "--drain-timeout",
        type=positive_seconds,
        default=8.0,
        metavar="SECONDS",
        help="on SIGTERM or SIGINT: new calls get 503 with Retry-After, the calls in flight"
        " get this long to finish, then those left are cancelled (their tools told) and the"
        " gateway exits 0 (default: %(default)g, under Docker's 10 s stop)",
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
    add_serve_arguments(mcp_serve)
    mcp_serve.set_defaults(
        run=mcp_serve_command, graceful=True, log_level="WARNING", loop=mcp_serve_loop
    )


def add_bridge_parser(commands: Commands) -> None:
    """``mcp bridge``: its options."""
    mcp_bridge = add_command(
        commands,
        "bridge",
        "register an MCP server's tools on the bus and forward their calls",
        (
            "argentic-tools mcp bridge -- npx -y @modelcontextprotocol/server-everything",
            "argentic-tools mcp bridge --url http://127.0.0.1:8000/mcp",
            "argentic-tools mcp bridge --url https://tools.example/mcp --header 'X-Team: ops'",
            "argentic-tools mcp bridge --root ~/site --server-log-level debug -- python server.py",
        ),
        long_running=True,
    )
    mcp_bridge.add_argument(
        "--url", default=None, help="the MCP server's streamable HTTP URL (instead of a command)"
    )
    add_env_argument(
        mcp_bridge,
        "set a variable for the server (repeatable); it gets only HOME, PATH, SHELL"
        " and TERM from the bridge's environment",
    )
    add_config_arguments(mcp_bridge, "bridge")
    add_credential_arguments(mcp_bridge)
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

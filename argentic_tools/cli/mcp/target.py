"""The MCP server ``list`` and ``call`` inspect instead of the bus (the ``mcp`` extra).

``--mcp URL`` names a streamable HTTP server; ``--mcp-command "COMMAND ARGS"`` a
server started over stdio (split as a shell would), with ``-e KEY=VALUE`` for its
environment; ``--config FILE [--server NAME]`` a server of an MCP client's config
file, as ``mcp bridge`` takes them. A server by URL gets ``--header`` and ``--token``
(:mod:`.credentials`).
"""

import argparse
import contextlib
import shlex
from collections.abc import AsyncIterator
from typing import Any

from ..common import CliError
from ..options import add_env_argument
from .commands import McpServer, _load, add_config_arguments, env_pairs, server_from_config
from .credentials import add_credential_arguments, request_headers

ONE_SERVER = "give the MCP server as --mcp URL, --mcp-command COMMAND or --config FILE"


def add_mcp_server_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options that name an MCP server to talk to instead of the bus."""
    group = parser.add_argument_group("an MCP server instead of the bus (needs the mcp extra)")
    group.add_argument(
        "--mcp",
        default=None,
        metavar="URL",
        help="the MCP server at this streamable HTTP URL, like http://127.0.0.1:8000/mcp",
    )
    group.add_argument(
        "--mcp-command",
        default=None,
        metavar="COMMAND",
        help="the MCP server this command starts over stdio, as one string: "
        "--mcp-command 'python -m mcp_server_time --local-timezone UTC'",
    )
    add_env_argument(
        group,
        "set a variable for that server (repeatable); it gets only HOME, PATH, SHELL"
        " and TERM from this environment",
    )
    add_config_arguments(group, "use")
    add_credential_arguments(group)


def mcp_server_from(args: argparse.Namespace) -> McpServer | None:
    """The MCP server the options name; None for the bus."""
    try:
        command = shlex.split(args.mcp_command) if args.mcp_command is not None else []
    except ValueError as exc:
        raise CliError(f"--mcp-command {args.mcp_command!r}: {exc}") from None
    if args.mcp_command is not None and not command:
        raise CliError("--mcp-command: give the command that starts the MCP server")
    configured = McpServer()
    if args.config is not None:
        if command or args.mcp is not None:
            raise CliError(ONE_SERVER)
        configured = server_from_config(args.config, args.server)
        command = configured.command or []
    elif args.server is not None:
        raise CliError("--config FILE is where --server NAME picks a server")
    if command and args.mcp is not None:
        raise CliError(ONE_SERVER)
    env = configured.env | env_pairs(args.env)
    if configured.url is not None:
        if env:
            raise CliError("-e KEY=VALUE is for a server started as a command, not for a URL")
        headers = request_headers(args, by_url=True, configured=configured.headers)
        return McpServer(url=configured.url, headers=headers)
    if args.mcp is not None:
        if env:
            raise CliError("-e KEY=VALUE is for a server started as a command, not for --mcp URL")
        if not args.mcp.startswith(("http://", "https://")):
            raise CliError(
                f"--mcp {args.mcp!r}: expected an http:// or https:// URL"
                " (a server started as a command: --mcp-command)"
            )
        return McpServer(url=args.mcp, headers=request_headers(args, by_url=True))
    if command:
        request_headers(args, by_url=False)  # refuses --header and --token for a command
        return McpServer(command=command, env=env)
    if env:
        raise CliError("-e KEY=VALUE is for an MCP server given with --mcp-command or --config")
    if args.header or args.token is not None:
        raise CliError("--header and --token are for an MCP server given with --mcp URL")
    return None


def client_module() -> Any:
    """``argentic_tools.mcp.bridge.client``, or a CliError naming the extra it needs."""
    return _load("bridge.client")


@contextlib.asynccontextmanager
async def connected_client(server: McpServer) -> AsyncIterator[Any]:
    """An MCP client session with ``server`` (``mcp.Client``); its failures as CliError."""
    module = client_module()
    failure: Exception | None = None
    try:
        async with module.connect(
            command=server.command, url=server.url, env=server.env, headers=server.headers
        ) as client:
            try:
                yield client
            except Exception as exc:  # noqa: BLE001 - raised as it is, below
                # Raised here, the SDK's task group would wrap it in an ExceptionGroup.
                failure = exc
    except (module.McpServerError, _load("bridge.server_process").ServerNotFoundError) as exc:
        raise CliError(str(exc)) from None
    if failure is not None:
        raise failure


async def server_tool_rows(server: McpServer) -> list[dict[str, Any]]:
    """The server's tools as ``list`` shows them (``mcp.bridge.client.tool_rows``)."""
    async with connected_client(server) as client:
        module = client_module()
        rows: list[dict[str, Any]] = module.tool_rows(await module.list_tools(client))
    return rows

"""``mcp``: the command group, its subcommands wired in the order its help lists them."""

from ..options import Commands
from . import commands as gateway_and_bridge
from . import install, team


def add_parser(commands: Commands) -> None:
    """``mcp`` and its subcommands: serve, views, keys, bridge, install."""
    mcp = commands.add_parser(
        "mcp",
        help="serve the fleet to MCP clients, or bring an MCP server onto the bus",
        description="The fleet in the MCP ecosystem (needs the mcp extra).",
    )
    mcp_commands = mcp.add_subparsers(dest="mcp_command", required=True, metavar="COMMAND")
    gateway_and_bridge.add_serve_parser(mcp_commands)
    team.add_commands(mcp_commands)
    gateway_and_bridge.add_bridge_parser(mcp_commands)
    install.add_parser(mcp_commands)

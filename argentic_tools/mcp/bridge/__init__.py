"""An MCP server's tools on the bus: :class:`McpBridge` (``argentic-tools mcp bridge``).

The bridge, the server process it starts, the server's own requests routed to the call
they belong to, and a client that inspects a server directly.
"""

from .bridge import McpBridge

__all__ = ["McpBridge"]

"""The registry served to MCP clients: :class:`McpGateway` (``argentic-tools mcp serve``).

The gateway, the names and listings it serves, the conversions between MCP's types and
ours, and its transports' helpers (stdin, the HTTP server's stack).
"""

from .gateway import McpGateway

__all__ = ["McpGateway"]

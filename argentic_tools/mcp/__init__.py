"""The fleet in the MCP ecosystem (the ``mcp`` extra): a gateway and a bridge.

- :mod:`argentic_tools.mcp.gateway` serves the tools on the bus to any MCP client
  (``argentic-tools mcp serve``);
- :mod:`argentic_tools.mcp.bridge` brings an MCP server's tools onto the bus
  (``argentic-tools mcp bridge``).
"""

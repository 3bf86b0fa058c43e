"""The `mcp` commands: `mcp serve`, `mcp bridge`, `mcp install`, `mcp views`, `mcp keys`."""

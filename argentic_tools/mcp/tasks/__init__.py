"""MCP Tasks (io.modelcontextprotocol/tasks): calls answered as tasks, polled, kept in SQLite."""

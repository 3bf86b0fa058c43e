"""Serving a tool on a connection.

The endpoint, the task executor and its error replies, the status router, registration
pacing, and :class:`~.served.ServedTool`, the protocol the serving code types against so
that it never imports the definitions.
"""

"""A tool's questions and log records put to the MCP client.

In the handshake era on the call's stream (``asking``); in 2026-07-28 as
``input_required`` rounds the client answers by calling again (``input_required``).
"""

"""The tool side: definitions (``@tool``, ``BaseTool``), context, schemas, endpoints, services.

It never imports the caller side.
"""

"""The tool side: definitions (``@tool``, ``BaseTool``), context, schemas, endpoints, services.

It never imports the caller side. Its rooms import one way, from the top down:
``hosting/`` (the service process), ``definition/`` (``@tool``, ``BaseTool``),
``serving/`` (endpoints and the task executor), ``call/`` (a running call: context,
controls, questions, output) and ``records/`` (stats, the at-most-once record).
"""

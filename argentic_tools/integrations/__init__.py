"""The fleet as native tools of agent frameworks, one module per framework.

Each turns a :class:`~argentic_tools.ToolManager` into that framework's own tools, with
what the bus carries beyond a plain call (progress, cancellation, streamed chunks,
content blocks, a tool's questions) mapped onto the framework's own mechanisms. Each
needs its framework, from its extra: ``[openai-agents]``, ``[langchain]``,
``[pydantic-ai]``, ``[llamaindex]``.
"""

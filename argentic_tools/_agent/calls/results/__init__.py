"""What a call gives back on the caller's side when its tool does not give it whole.

The error results built without the tool (timeouts, lost tools, broken streams, output
that breaks its schema) and :class:`~.streams.ToolStream`, what ``stream_tool``
returns.
"""

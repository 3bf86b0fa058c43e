"""Writing tools: ``@tool`` and ``BaseTool``, their keyword options, signature -> schema.

A definition starts its endpoints (:mod:`..serving`); nothing below imports it back.
"""

"""The keyword options every tool takes, and their checks: :class:`ToolOptions`.

``@tool``, :class:`~argentic_tools.FunctionTool` and :class:`~argentic_tools.BaseTool`
take the same keyword options (``tags``, ``examples``, ``max_concurrency``, ``tool_id``,
``annotations``) with the same defaults. Each packs them into one :class:`ToolOptions`
as it is called; from there on they travel as that one value, checked in one place.
"""

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from ..._errors import ToolDefinitionError
from ..._protocol.topics import is_valid_tool_id

ANNOTATION_HINTS = frozenset({"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"})
"""The boolean hints MCP defines for tools (``title`` is a string)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToolOptions:
    """How a tool is described beyond its name and schema, and how it is served."""

    tags: tuple[str, ...] = ()
    """Discovery tags."""
    examples: tuple[Mapping[str, Any], ...] = ()
    """``{"input": {...}, "output": ...}`` examples."""
    max_concurrency: int | None = None
    """Calls served at once; more wait their turn (None: the service's setting)."""
    tool_id: str | None = None
    """The pinned tool id (for ACLs); None: a random one."""
    annotations: Mapping[str, Any] | None = None
    """Hints for clients, as MCP defines them (see :func:`checked_annotations`)."""

    @classmethod
    def packed(
        cls,
        tags: Iterable[str],
        examples: Iterable[Mapping[str, Any]],
        max_concurrency: int | None,
        tool_id: str | None,
        annotations: Mapping[str, Any] | None,
    ) -> "ToolOptions":
        """The options as ``@tool``, FunctionTool and BaseTool take them, in one value."""
        return cls(
            tags=tuple(tags),
            examples=tuple(examples),
            max_concurrency=max_concurrency,
            tool_id=tool_id,
            annotations=annotations,
        )

    def check(self, tool_name: str) -> None:
        """Refuse a pinned id or a concurrency that cannot be served.

        Raises:
            ToolDefinitionError: The ``tool_id`` is not a valid id, or
                ``max_concurrency`` is below 1.

        """
        if self.tool_id is not None and not is_valid_tool_id(self.tool_id):
            raise ToolDefinitionError(
                f"tool {tool_name!r}: tool_id {self.tool_id!r} must be 1-128 letters, digits "
                f"or '._:-'"
            )
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ToolDefinitionError(f"tool {tool_name!r}: max_concurrency must be at least 1")


def checked_annotations(name: str, annotations: Mapping[str, Any] | None) -> dict[str, Any]:
    """``annotations`` as a plain dict, once checked against MCP's definitions.

    Raises:
        ToolDefinitionError: An unknown hint, or a value of the wrong type.

    """
    checked = dict(annotations or {})
    for key, value in checked.items():
        if key in ANNOTATION_HINTS:
            if not isinstance(value, bool):
                raise ToolDefinitionError(f"tool {name!r}: annotation {key} must be true or false")
        elif key == "title":
            if not isinstance(value, str):
                raise ToolDefinitionError(f"tool {name!r}: annotation title must be a string")
        else:
            known = ", ".join(sorted(ANNOTATION_HINTS | {"title"}))
            raise ToolDefinitionError(f"tool {name!r}: unknown annotation {key!r} (known: {known})")
    return checked

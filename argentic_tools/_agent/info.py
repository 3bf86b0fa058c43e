"""What the manager knows of one registered tool."""

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A registered tool, as listed by :meth:`ToolManager.get_available_tools`."""

    id: str
    """Tool id (topic level of its call and response topics)."""
    name: str
    """Tool name."""
    description: str
    """What the tool does."""
    input_schema: dict[str, Any]
    """JSON Schema of the arguments."""
    output_schema: dict[str, Any] | None
    """JSON Schema of a successful result, when declared."""
    tags: tuple[str, ...]
    """Discovery tags."""
    examples: tuple[dict[str, Any], ...]
    """Example calls."""
    source: str | None
    """Client id of the process serving the tool."""
    registered_at: str
    """ISO 8601 time of the (latest) registration."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Implementation metadata, e.g. ``max_concurrency``."""

    owner: str | None = None
    """Broker user that registered the tool on its own registration topic (proven by the
    broker's ACL); None for a registration on the shared topic (its source is a claim)."""

    @property
    def annotations(self) -> dict[str, Any]:
        """MCP hints for clients (``readOnlyHint``, ...), as the tool declared them."""
        hints = self.metadata.get("annotations")
        return dict(hints) if isinstance(hints, dict) else {}

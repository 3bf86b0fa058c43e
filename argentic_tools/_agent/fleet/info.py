"""What the manager knows of one registered tool instance.

:class:`ToolInfo` as users see it, and :class:`Entry` with what calls to it need.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from ..._protocol.validation import SchemaValidator


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


class Entry:
    """One registered tool instance and what calls to it need."""

    __slots__ = (
        "connection",
        "epoch",
        "info",
        "output_validator",
        "protocol",
        "public",
        "ready_at",
        "suspect_since",
        "validator",
    )

    def __init__(
        self,
        info: ToolInfo,
        validator: SchemaValidator,
        ready_at: float,
        epoch: int | None,
        output_validator: SchemaValidator | None = None,
        *,
        protocol: int | None = None,
        connection: int | None = None,
    ) -> None:
        self.info = info
        self.validator = validator
        """The argument schema, compiled at registration."""
        self.output_validator = output_validator
        """The output schema, compiled at registration (None when the tool declares none)."""
        self.ready_at = ready_at
        """Loop time before which calls wait (plain Argentic tools only; else 0)."""
        self.epoch = epoch
        """Manager connection count when the tool last registered; None for plain Argentic
        tools, which never register again by themselves."""
        self.protocol = protocol
        """The tool's extension protocol version (None: a plain Argentic tool)."""
        self.connection = connection
        """How many times the tool's process had connected when it registered."""
        self.suspect_since: float | None = None
        """Loop time at which a call to this instance went unanswered past its deadline;
        None while it answers. Calls by name skip a suspect instance while another
        replica is not suspect (see :mod:`.liveness`)."""
        self.public: dict[str, Any] = {
            "id": info.id,
            "name": info.name,
            "description": info.description,
            "parameters": json.dumps(info.input_schema, separators=(",", ":")),
            "registered_at": info.registered_at,
            "source_client_id": info.source,
            "tags": list(info.tags),
        }

    @property
    def max_concurrency(self) -> int | None:
        """The ``max_concurrency`` the instance advertised, when it is a usable number."""
        value = self.info.metadata.get("max_concurrency")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        return None

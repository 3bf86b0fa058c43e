"""What an endpoint serves: the :class:`ServedTool` protocol.

The serving code (endpoint, executor) types against this protocol, not against
:class:`~argentic_tools.BaseTool`: the definitions start endpoints, so the endpoints must
not import the definitions back. Every :class:`~argentic_tools.BaseTool` is a ServedTool.
"""

from typing import Any, Protocol


class ServedTool(Protocol):
    """A tool as its endpoint sees it: its description, serving settings and run method."""

    @property
    def name(self) -> str:
        """Tool name."""

    @property
    def manual(self) -> str:
        """Description the LLM reads."""

    @property
    def api(self) -> str:
        """JSON Schema of the arguments, as a JSON string (Argentic's ``tool_api``)."""

    @property
    def input_schema(self) -> dict[str, Any]:
        """JSON Schema of the arguments."""

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """JSON Schema of a successful result, if declared."""

    @property
    def tags(self) -> list[str]:
        """Discovery tags."""

    @property
    def examples(self) -> list[dict[str, Any]]:
        """``{"input": {...}, "output": ...}`` examples."""

    @property
    def annotations(self) -> dict[str, Any]:
        """MCP's hints for clients."""

    @property
    def max_concurrency(self) -> int | None:
        """Calls served at once (None: the endpoint's setting)."""

    @property
    def pinned_id(self) -> str | None:
        """The id the tool asks to be registered under (None: any)."""

    @property
    def debug(self) -> bool:
        """Send tracebacks with failures."""

    async def warm_up(self) -> None:
        """Prepare to serve; called once before the tool registers."""

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments for :meth:`_execute`, or :class:`pydantic.ValidationError`."""

    def _execute(self, **kwargs: Any) -> Any:
        """Run the tool: a coroutine of the result, or an async generator of chunks."""

"""Which tools a conversation thread may use.

A :class:`ToolPolicy` is consulted when listing tools and before every call.
"""

from collections.abc import Iterable
from typing import Protocol, runtime_checkable


@runtime_checkable
class ToolPolicy(Protocol):
    """Decides whether a tool may be used in a conversation thread."""

    def is_enabled(self, tool_name: str, thread_id: str | None) -> bool:
        """True when ``tool_name`` may be listed and called for ``thread_id``."""
        ...


class AllToolsEnabled:
    """The default policy: every tool is enabled for every thread."""

    def is_enabled(self, tool_name: str, thread_id: str | None) -> bool:
        """Always True."""
        return True


class ThreadToolPolicy:
    """Per-thread enabled tools, as ART's ``enabled_tools`` per thread.

    Threads without an entry get ``default`` (every tool when None).

    Example:
        >>> policy = ThreadToolPolicy()
        >>> policy.set_enabled_tools("thread-1", ["calculate"])
        >>> policy.is_enabled("calculate", "thread-1"), policy.is_enabled("sleep", "thread-1")
        (True, False)

    """

    def __init__(self, default: Iterable[str] | None = None) -> None:
        self._default = None if default is None else frozenset(default)
        self._threads: dict[str, frozenset[str]] = {}

    def set_enabled_tools(self, thread_id: str, tool_names: Iterable[str]) -> None:
        """Enable exactly ``tool_names`` for ``thread_id``."""
        self._threads[thread_id] = frozenset(tool_names)

    def clear(self, thread_id: str) -> None:
        """Return ``thread_id`` to the default."""
        self._threads.pop(thread_id, None)

    def is_enabled(self, tool_name: str, thread_id: str | None) -> bool:
        """True when ``tool_name`` is enabled for ``thread_id``."""
        enabled = self._threads.get(thread_id, self._default) if thread_id else self._default
        return enabled is None or tool_name in enabled

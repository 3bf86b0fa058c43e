"""``tools/list`` answers kept in their wire form while the fleet stays the same.

The MCP SDK turns a handler's ``ListToolsResult`` into the dict it sends by dumping
it, validating the dump against the protocol version's schema and dumping that again:
for a thousand tools that took about 60 ms of every listing, though the answer changes
only with the fleet. :class:`ListingMemo` is a server middleware placed innermost: on a
miss it lets the SDK build the answer (so what clients receive is the SDK's own output,
byte for byte), and keeps it under a key the gateway derives from the fleet's version,
the protocol version and what the caller may see; a listing with the same key gets a
copy of it.
"""

from collections.abc import Callable, Hashable
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

MAX_KEPT = 16
"""Most answers kept (one per protocol version and thread view in use); the oldest goes."""


class ListingMemo:
    """Server middleware answering ``tools/list`` from the answers it kept.

    Args:
        key: The request's key (what the answer depends on), or None to always let
            the SDK answer (a paginated request, for instance).

    """

    def __init__(self, key: Callable[[ServerRequestContext[Any, Any]], Hashable | None]) -> None:
        self._key = key
        self._kept: dict[Hashable, dict[str, Any]] = {}

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Answer ``tools/list`` from a kept answer; pass anything else on."""
        if ctx.method != "tools/list":
            return await call_next(ctx)
        key = self._key(ctx)
        if key is None:
            return await call_next(ctx)
        kept = self._kept.get(key)
        if kept is None:
            result = await call_next(ctx)
            if not isinstance(result, dict):
                return result
            kept = result
            while len(self._kept) >= MAX_KEPT:
                del self._kept[next(iter(self._kept))]
            self._kept[key] = kept
        return dict(kept)

    def clear(self) -> None:
        """Forget every kept answer."""
        self._kept.clear()

"""Which handlers receive a message: the subscription table of one connection.

Exact topics are a dict lookup; wildcard filters (``+``, ``#``) are matched in
order. Both survive reconnections: the connection subscribes to :meth:`filters`
again each time it is re-established.
"""

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IncomingMessage:
    """One message as received: its topic and raw payload."""

    topic: str
    payload: bytes
    retain: bool = False


Handler = Callable[[IncomingMessage], Awaitable[None] | None]
"""Receives each message matching a subscription.

Plain functions run inline, in arrival order, and must not block; coroutine
functions are started as tasks owned by the Messager."""

ReconnectHook = Callable[[], Awaitable[None]]
"""An async callable run after every reconnection, once subscriptions are restored."""


def topic_matches(topic_filter: str, topic: str) -> bool:
    """True when ``topic`` matches the MQTT filter ``topic_filter`` (``+`` and ``#``)."""
    filter_levels = topic_filter.split("/")
    topic_levels = topic.split("/")
    for index, level in enumerate(filter_levels):
        if level == "#":
            return True
        if index >= len(topic_levels):
            return False
        if level != "+" and level != topic_levels[index]:
            return False
    return len(filter_levels) == len(topic_levels)


def filter_problem(topic_filter: str) -> str | None:
    """Why ``topic_filter`` is not an MQTT topic filter, or None when it is one.

    ``#`` may only be the last level, and ``+`` and ``#`` only a whole level; a filter is
    not empty and has no NUL character (MQTT 3.1.1, section 4.7).
    """
    if not topic_filter:
        return "a topic filter cannot be empty"
    if "\0" in topic_filter:
        return "a topic filter cannot contain a NUL character"
    levels = topic_filter.split("/")
    for index, level in enumerate(levels):
        if "#" in level and (level != "#" or index != len(levels) - 1):
            return "'#' may only stand alone as the filter's last level"
        if "+" in level and level != "+":
            return "'+' may only stand alone as a whole level"
    return None


MATCH_CACHE_SIZE = 4096
"""Topics whose wildcard handlers are remembered; the memory starts over when full."""


class Subscriptions:
    """Handlers by topic filter; several handlers may share one filter.

    The wildcard handlers of each topic seen are remembered until the table changes:
    results arrive on a few topics over and over, and matching every filter level by
    level cost more per message than the rest of the routing.
    """

    def __init__(self) -> None:
        self._exact: dict[str, list[Handler]] = {}
        # Wildcard handlers in subscription order, keyed by a sequence number, and the
        # numbers of each filter: adding, finding and removing one filter is O(1) with
        # thousands of them (two per tool in a process serving many tools).
        self._wildcard: dict[int, tuple[str, Handler]] = {}
        self._by_filter: dict[str, list[int]] = {}
        self._added = 0
        self._matched: dict[str, tuple[Handler, ...]] = {}

    def add(self, topic: str, handler: Handler) -> bool:
        """Add ``handler`` for ``topic``; True when no handler had this filter before."""
        is_new = not self.has(topic)
        self._matched.clear()
        if "+" in topic or "#" in topic:
            self._added += 1
            self._wildcard[self._added] = (topic, handler)
            self._by_filter.setdefault(topic, []).append(self._added)
        else:
            self._exact.setdefault(topic, []).append(handler)
        return is_new

    def remove(self, topic: str, handler: Handler | None = None) -> bool:
        """Remove ``handler`` (every handler when None); True when the filter has none left."""
        self._matched.clear()
        if topic in self._exact:
            handlers = [h for h in self._exact[topic] if handler is not None and h != handler]
            if handlers:
                self._exact[topic] = handlers
            else:
                del self._exact[topic]
        numbers = self._by_filter.pop(topic, None)
        if numbers is not None:
            kept = []
            for number in numbers:
                if handler is not None and self._wildcard[number][1] != handler:
                    kept.append(number)
                else:
                    del self._wildcard[number]
            if kept:
                self._by_filter[topic] = kept
        return not self.has(topic)

    def has(self, topic: str) -> bool:
        """True when some handler has exactly this filter."""
        return topic in self._exact or topic in self._by_filter

    def filters(self) -> list[str]:
        """Every filter with a handler, each once."""
        return [*self._exact, *self._by_filter]

    def handlers_for(self, topic: str) -> Iterator[Handler]:
        """The handlers a message on ``topic`` goes to, in subscription order per kind."""
        yield from self._exact.get(topic, ())
        matched = self._matched.get(topic)
        if matched is None:
            if len(self._matched) >= MATCH_CACHE_SIZE:
                self._matched.clear()
            matched = tuple(h for f, h in self._wildcard.values() if topic_matches(f, topic))
            self._matched[topic] = matched
        yield from matched

"""How often and how many at once a caller may call: ``[[limit]]`` rules of a views file.

::

    [[limit]]                     # each client: 5 calls a second, 2 at once
    rate = 5
    concurrency = 2

    [[limit]]                     # the report tools: 1 a second for everyone together
    tools = ["report_*"]
    rate = 1
    shared = true

A rule applies to the callers its ``subjects``/``scopes``/``claims`` select (all of
them when it names none; see :mod:`argentic_tools.mcp.access.views`) and to the calls of the
tools its ``tools`` patterns match (every call when it has none). ``rate`` is calls
a second (a token bucket of ``burst`` calls, ``rate`` by default), ``concurrency``
calls in flight. Each client has its own buckets, unless ``shared = true``; a
``tools`` rule counts each tool on its own.

An exceeded limit answers at once: over HTTP, a ``tools/call`` over a rate limit gets
429 with ``Retry-After`` before it reaches the gateway; a call over a concurrency
limit (or a rate limit, on stdio) gets an ``isError`` result that says when to try
again (``_meta["argentic/retryAfter"]``, seconds).
"""

import contextlib
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .views import Caller, Who, _strings, pattern_matches

RETRY_META = "argentic/retryAfter"
"""``_meta`` key of a refused call's result: seconds until a retry may succeed."""

MAX_BUCKETS = 100_000
"""Buckets kept at most (the oldest are dropped beyond: a flood of subjects stays bounded)."""


class LimitExceededError(Exception):
    """A call over a limit; ``retry_after`` seconds until it may succeed."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class LimitRule:
    """One ``[[limit]]`` rule."""

    who: Who
    tools: tuple[str, ...] = ()
    rate: float | None = None
    burst: float | None = None
    concurrency: int | None = None
    shared: bool = False

    def applies(self, caller: Caller, names: Sequence[str], tags: Sequence[str]) -> bool:
        """Whether the rule counts this caller's call of this tool."""
        if not self.who.matches(caller):
            return False
        return not self.tools or any(pattern_matches(p, names, tags) for p in self.tools)

    def describe(self, tool: str) -> str:
        """The rule in words, for refusals."""
        whose = "all clients together" if self.shared else "each client"
        what = f"tool {tool}" if self.tools else "calls"
        return f"{what}, {whose}"


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


@dataclass
class Limits:
    """The limit rules and their live counts."""

    rules: tuple[LimitRule, ...] = ()
    clock: Any = time.monotonic
    _buckets: dict[tuple[Any, ...], _Bucket] = field(default_factory=dict)
    _running: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def _key(self, number: int, rule: LimitRule, caller: Caller, tool: str) -> tuple[Any, ...]:
        return (number, None if rule.shared else caller.subject, tool if rule.tools else None)

    def admit(self, caller: Caller, tool: str, names: Sequence[str], tags: Sequence[str]) -> None:
        """Count one call against the rate limits; :class:`LimitExceededError` when over one.

        A call refused by one rule takes nothing from the others.
        """
        now = self.clock()
        taken: list[_Bucket] = []
        for number, rule in enumerate(self.rules):
            if rule.rate is None or not rule.applies(caller, names, tags):
                continue
            key = self._key(number, rule, caller, tool)
            capacity = rule.burst if rule.burst is not None else max(rule.rate, 1.0)
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= MAX_BUCKETS:
                    self._buckets.pop(next(iter(self._buckets)))
                bucket = self._buckets[key] = _Bucket(capacity, now)
            bucket.tokens = min(capacity, bucket.tokens + (now - bucket.at) * rule.rate)
            bucket.at = now
            if bucket.tokens < 1.0:
                for done in taken:
                    done.tokens += 1.0
                wait = (1.0 - bucket.tokens) / rule.rate
                raise LimitExceededError(
                    f"rate limit exceeded: {_calls(rule.rate)} a second for "
                    f"{rule.describe(tool)}; retry in {wait:.2f} s",
                    wait,
                )
            bucket.tokens -= 1.0
            taken.append(bucket)

    @contextlib.contextmanager
    def slot(
        self, caller: Caller, tool: str, names: Sequence[str], tags: Sequence[str]
    ) -> Iterator[None]:
        """Hold a place under the concurrency limits for one call (:class:`LimitExceededError`)."""
        keys = []
        for number, rule in enumerate(self.rules):
            if rule.concurrency is None or not rule.applies(caller, names, tags):
                continue
            key = self._key(number, rule, caller, tool)
            if self._running.get(key, 0) >= rule.concurrency:
                raise LimitExceededError(
                    f"concurrency limit exceeded: {_calls(rule.concurrency)} at once for "
                    f"{rule.describe(tool)}; retry when one has finished",
                    1.0,
                )
            keys.append(key)
        for key in keys:
            self._running[key] = self._running.get(key, 0) + 1
        try:
            yield
        finally:
            for key in keys:
                left = self._running[key] - 1
                if left:
                    self._running[key] = left
                else:
                    del self._running[key]


def _calls(count: float) -> str:
    return f"{count:g} call" if count == 1 else f"{count:g} calls"


def retry_after_header(seconds: float) -> str:
    """``Retry-After`` in whole seconds (at least 1)."""
    return str(max(1, math.ceil(seconds)))


def parse_limits(data: Mapping[str, Any], where: str = "views") -> Limits:
    """The limit rules of a parsed views file."""
    rules = []
    for number, entry in enumerate(data.get("limit", []), 1):
        at = f"{where}: limit {number}"
        if not isinstance(entry, Mapping):
            raise ValueError(f"{at}: expected a table")
        unknown = set(entry) - {
            "subjects", "scopes", "claims", "tools", "rate", "burst", "concurrency", "shared",
        }  # fmt: skip
        if unknown:
            raise ValueError(f"{at}: unknown keys {sorted(unknown)}")
        rate, burst, concurrency = entry.get("rate"), entry.get("burst"), entry.get("concurrency")
        if rate is not None and (not isinstance(rate, int | float) or rate <= 0):
            raise ValueError(f"{at}: rate must be a positive number (calls a second)")
        if burst is not None and (not isinstance(burst, int | float) or burst < 1):
            raise ValueError(f"{at}: burst must be at least 1")
        if concurrency is not None and (not isinstance(concurrency, int) or concurrency < 1):
            raise ValueError(f"{at}: concurrency must be a positive integer")
        if rate is None and concurrency is None:
            raise ValueError(f"{at}: give rate, concurrency or both")
        rules.append(
            LimitRule(
                Who.parse(entry, at),
                _strings(entry.get("tools"), f"{at}.tools"),
                None if rate is None else float(rate),
                None if burst is None else float(burst),
                concurrency,
                bool(entry.get("shared", False)),
            )
        )
    return Limits(tuple(rules))

"""The library's instruments, on the OpenTelemetry metrics API.

Tool side, per tool (attribute ``tool``): ``argentic_tools.tool.calls`` by ``outcome``
(``success`` or the error code), ``argentic_tools.tool.duration`` (s),
``argentic_tools.tool.in_flight``, and ``argentic_tools.tool.payload.size`` (bytes, by
``direction``: ``in`` for tasks, ``out`` for results). Caller side, per tool:
``argentic_tools.client.calls`` by outcome, ``argentic_tools.client.duration`` (s),
``argentic_tools.client.queue_wait`` (s a call waited for a free slot at its tool
instance), ``argentic_tools.client.pending``; per connection
``argentic_tools.connection.reconnects``.
"""

from opentelemetry import metrics
from opentelemetry.metrics import Histogram

_METER = metrics.get_meter("argentic_tools")
"""A proxy: instruments made now record into the provider the application installs later."""

DURATION_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24,
    20.48, 40.96, 81.92,
)  # fmt: skip
"""Seconds: the GenAI conventions' operation-duration boundaries (from 0.01 s), with three
below them, since a tool call over a local broker takes about a millisecond."""

SIZE_BUCKETS = (64, 256, 1024, 4096, 16384, 65536, 262144, 1048576)
"""Bytes, up to the default 1 MiB payload limit."""


def _seconds(name: str, description: str) -> Histogram:
    """A histogram of durations in seconds, on :data:`DURATION_BUCKETS`."""
    return _METER.create_histogram(
        name,
        unit="s",
        description=description,
        explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
    )


_TOOL_CALLS = _METER.create_counter(
    "argentic_tools.tool.calls", unit="{call}", description="Calls a tool served, by outcome"
)
_TOOL_DURATION = _seconds(
    "argentic_tools.tool.duration", "Time from a task's receipt to its reply, at the tool"
)
_TOOL_IN_FLIGHT = _METER.create_up_down_counter(
    "argentic_tools.tool.in_flight", unit="{call}", description="Calls a tool is serving"
)
_TOOL_PAYLOAD = _METER.create_histogram(
    "argentic_tools.tool.payload.size",
    unit="By",
    description="Sizes of the tasks a tool received (in) and of its replies (out)",
    explicit_bucket_boundaries_advisory=SIZE_BUCKETS,
)
_CLIENT_CALLS = _METER.create_counter(
    "argentic_tools.client.calls", unit="{call}", description="Calls a manager made, by outcome"
)
_CLIENT_DURATION = _seconds(
    "argentic_tools.client.duration", "Time from execute_tool to its result, at the caller"
)
_QUEUE_WAIT = _seconds(
    "argentic_tools.client.queue_wait",
    "Time a call waited for a free slot at its tool instance (flow control)",
)
_PENDING = _METER.create_up_down_counter(
    "argentic_tools.client.pending", unit="{call}", description="Calls waiting for a result"
)
_RECONNECTS = _METER.create_counter(
    "argentic_tools.connection.reconnects",
    unit="{reconnection}",
    description="Times a connection to the broker was established again",
)


class ToolMetrics:
    """The tool-side instruments of one tool (its attributes built once)."""

    __slots__ = ("_in", "_out", "_tool")

    def __init__(self, tool_name: str) -> None:
        self._tool = {"tool": tool_name}
        self._in = {"tool": tool_name, "direction": "in"}
        self._out = {"tool": tool_name, "direction": "out"}

    def received(self, size: int) -> None:
        """A task of ``size`` bytes arrived and starts."""
        _TOOL_IN_FLIGHT.add(1, self._tool)
        _TOOL_PAYLOAD.record(size, self._in)

    def replied(self, outcome: str, seconds: float, size: int) -> None:
        """The task ended with ``outcome`` after ``seconds``; its reply is ``size`` bytes."""
        _TOOL_IN_FLIGHT.add(-1, self._tool)
        _TOOL_CALLS.add(1, {"tool": self._tool["tool"], "outcome": outcome})
        _TOOL_DURATION.record(seconds, self._tool)
        _TOOL_PAYLOAD.record(size, self._out)


class CallerMetrics:
    """The caller-side instruments of one manager."""

    __slots__ = ()

    def started(self) -> None:
        """A call is pending."""
        _PENDING.add(1)

    def waited(self, tool_name: str, seconds: float) -> None:
        """A call waited ``seconds`` for a free slot at its tool instance."""
        _QUEUE_WAIT.record(seconds, {"tool": tool_name})

    def ended(self, tool_name: str, outcome: str, seconds: float) -> None:
        """A call ended with ``outcome`` after ``seconds``."""
        _PENDING.add(-1)
        _CLIENT_CALLS.add(1, {"tool": tool_name, "outcome": outcome})
        _CLIENT_DURATION.record(seconds, {"tool": tool_name})


def connection_reconnected() -> None:
    """A connection to the broker was established again."""
    _RECONNECTS.add(1)

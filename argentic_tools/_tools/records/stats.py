"""What a tool process has served: counts, latencies and load, for stats requests.

Each endpoint keeps a :class:`ToolCounters`; the process answers a ``STATS_REQUEST``
on its status topic with one ``TOOL_STATS`` message for all the tools it serves
(see :class:`~argentic_tools._tools.serving.status.StatusRouter`), with no manager in the loop.
"""

import math
import time
from collections import Counter, deque

LATENCY_SAMPLES = 2048
"""Durations kept per tool for its percentiles: the most recent calls."""


class ToolCounters:
    """Calls of one tool instance by outcome, and its recent durations."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        """Calls by outcome: ``success``, ``cancelled`` or the error code."""
        self.slowed = 0
        """Times a stream waited for its reader's credit (the reader was slower than the
        tool, or stopped reading): each pause counts once, when it starts."""
        self.slowed_seconds = 0.0
        """Seconds the pauses that ended lasted in all."""
        self.paused = 0
        """Streams waiting for their reader's credit right now."""
        self._durations: deque[float] = deque(maxlen=LATENCY_SAMPLES)

    def stream_paused(self) -> None:
        """A stream started waiting for its reader's credit."""
        self.slowed += 1
        self.paused += 1

    def stream_resumed(self, seconds: float) -> None:
        """A stream's wait for credit ended after ``seconds`` (credit came, or the call ended)."""
        self.slowed_seconds += seconds
        self.paused -= 1

    def record(self, outcome: str, seconds: float) -> None:
        """One call ended with ``outcome`` after ``seconds``."""
        self.outcomes[outcome] += 1
        self._durations.append(seconds)

    @property
    def calls(self) -> int:
        """Calls that ended."""
        return sum(self.outcomes.values())

    @property
    def cancelled(self) -> int:
        """Calls their caller cancelled (a timeout included): neither a success nor an error."""
        return self.outcomes["cancelled"]

    @property
    def errors(self) -> int:
        """Calls that failed: neither a success nor cancelled by their caller."""
        return self.calls - self.outcomes["success"] - self.cancelled

    def percentile_ms(self, pct: float) -> float | None:
        """The ``pct`` percentile of the recent durations, in ms (None before any call)."""
        if not self._durations:
            return None
        ordered = sorted(self._durations)
        rank = max(math.ceil(pct / 100 * len(ordered)) - 1, 0)
        return ordered[rank] * 1000


STARTED = time.time()
"""When this process imported the library: its uptime counts from here."""

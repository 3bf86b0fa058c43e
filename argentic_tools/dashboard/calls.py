"""The calls the dashboard has seen on the bus: recent ones, their counts and latencies.

:class:`CallLog` is fed every ``TASK``, ``TOOL_CANCEL`` and result that the dashboard's
observing connection receives under ``{call_base}/#`` and ``{response_base}/#``,
whichever manager made the call, and matches results to tasks by ``task_id`` in any
order. A call's duration is what the dashboard saw: from the task on the bus to its
result on the bus (the tool's own ``duration_ms`` is kept beside it).

Some outcomes never cross the bus as a result, and are inferred:

- a caller that times out sends ``TOOL_CANCEL`` with the reason its manager wrote
  (``... timed out after 5 s``): the ``cancelled`` answer that follows counts as a
  timeout;
- a call still without a result one second past its ``timeout_seconds`` counts as a
  timeout (its caller has given up; Argentic managers send no cancellation);
- a pending call whose tool leaves the registry (Last Will, unregistration) fails
  with ``tool_offline``, as it does for its caller.

The dashboard may miss messages: a broker drops those of a client that falls too far
behind (mosquitto's ``Outgoing messages are being dropped``). A result whose task
never arrives, though the task was sent after the dashboard subscribed, is such a loss
(counted in ``lost``). While losses happen, a call without a result past its timeout
ends as ``unknown`` (``result_not_seen``), not as a timeout: its result may well have
been sent, and the result, should it arrive after all, still counts.

Everything is bounded: the recent calls, the calls still pending, the size of the
arguments, results and content blocks kept, and the latency samples (per tool, in
buckets of :data:`BUCKET_SECONDS` over :data:`WINDOW_SECONDS`).

A call's questions, answers and log records (its exchange with its caller) are kept
for its details, within bounds of their own (:mod:`.exchanges`).

A result's content blocks are kept in MCP's JSON shapes for the call's details (the
page shows images and plays audio of the types a browser renders safely), up to
:data:`CONTENT_BYTES` of data per call, in order; past that, a block is kept as its
type and size (``"__truncated__": true, "bytes": N``, without its data), as a call
history keeps a block past its cap, and a text as its first :data:`PREVIEW_CHARS`.
"""

import json
import time
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from .._agent.records.calls_table import TRUNCATED
from .._protocol.content import Audio, ContentBlock, EmbeddedResource, Image, Text
from .._protocol.messages import (
    SUCCESS_STATUSES,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    TaskStatus,
    ToolCancelMessage,
    ToolResult,
)
from .._protocol.participation import ToolAnswerMessage, ToolAskMessage, ToolLogMessage
from .._telemetry.tracing import trace_id_of
from .exchanges import KeptExchanges

RECENT_CALLS = 500
"""Ended calls kept for the list and their details."""
MAX_PENDING = 10_000
"""Calls without a result kept at most; the oldest is forgotten beyond."""
KEEP_BYTES = 64 * 1024
"""Messages longer than this keep a preview of their arguments or result, not the value."""
PREVIEW_CHARS = 2_000
"""Characters of a large message kept as its preview."""
CONTENT_BYTES = 256 * 1024
"""Bytes of a call's content blocks kept (images, audio, texts); at most
:data:`RECENT_CALLS` times this in all (128 MiB), in practice far less."""
ERROR_CHARS = 300
"""Characters of an error message shown in the list (details show all of it)."""
TIMEOUT_GRACE_SECONDS = 1.0
"""A call without a result this long past its ``timeout_seconds`` counts as timed out."""
FORGET_UNBOUNDED_SECONDS = 3600.0
"""A call without a timeout and without a result is forgotten after this long."""
RATE_SECONDS = 5
"""The calls-per-second counter averages the calls started over this many seconds."""
BUCKET_SECONDS = 5
"""Width of one latency bucket of the chart."""
WINDOW_SECONDS = 600
"""How far back the latency chart reaches."""
SAMPLES_PER_BUCKET = 2_000
"""Durations kept per tool and bucket for its percentiles (the count goes on)."""
TASK_GRACE_SECONDS = 2.0
"""A result's task not seen this long after the result counts as a lost message."""
LOSS_WINDOW_SECONDS = 10.0
"""A call started this long before a lost message, or later, may have lost its result."""

ENDED = ("success", "error", "timeout", "cancelled", "unknown")
"""The statuses of a call that has ended; a pending one is ``running``."""


@dataclass(slots=True)
class CallRecord:
    """One call as the dashboard saw it."""

    task_id: str
    tool_name: str
    tool_id: str | None = None
    caller: str | None = None
    """Client id of the manager that sent the task."""
    arguments: Any = None
    thread_id: str | None = None
    trace_id: str | None = None
    started_at: float | None = None
    """Wall-clock time the task was seen; None when only its result was."""
    started: float | None = None
    """Monotonic time the task was seen."""
    timeout: float | None = None
    status: str = "running"
    ended_at: float | None = None
    duration_ms: float | None = None
    """From the task on the bus to its result on the bus."""
    tool_duration_ms: float | None = None
    """What the tool (or the caller, for a call refused before sending) reported."""
    result: Any = None
    content: list[dict[str, Any]] | None = None
    """The result's content blocks in MCP's JSON shapes, within :data:`CONTENT_BYTES`."""
    error: str | None = None
    error_code: str | None = None
    details: Any = None
    cancel_reason: str | None = None
    via_bus: bool = True
    """False for a call of the dashboard's own form that never reached the bus."""
    task_seen: bool = False
    exchanges: KeptExchanges | None = None
    """The tool's questions, their answers and its log records, once there is one."""

    def summary(self) -> dict[str, Any]:
        """The fields of the list row."""
        error = self.error
        if error is not None and len(error) > ERROR_CHARS:
            error = error[: ERROR_CHARS - 1] + "…"
        return {
            "task_id": self.task_id,
            "tool": self.tool_name,
            "tool_id": self.tool_id,
            "thread": self.thread_id,
            "status": self.status,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "duration_ms": self.shown_duration_ms,
            "error": error,
            "error_code": self.error_code,
            "exchanges": len(self.exchanges) if self.exchanges is not None else 0,
        }

    def detail(self) -> dict[str, Any]:
        """Everything kept of the call, for its detail view."""
        return {
            **self.summary(),
            "error": self.error,
            "caller": self.caller,
            "trace_id": self.trace_id,
            "timeout": self.timeout,
            "arguments": self.arguments,
            "result": self.result,
            "content": self.content,
            "details": self.details,
            "tool_duration_ms": self.tool_duration_ms,
            "observed_duration_ms": self.duration_ms,
            "cancel_reason": self.cancel_reason,
            "via_bus": self.via_bus,
            "exchanges": self.exchanges.shapes() if self.exchanges is not None else None,
        }

    @property
    def shown_duration_ms(self) -> float | None:
        """The observed duration, or the reported one when the task was not seen."""
        return self.duration_ms if self.duration_ms is not None else self.tool_duration_ms


@dataclass(slots=True)
class _Bucket:
    durations: list[float] = field(default_factory=list)
    count: int = 0
    errors: int = 0
    """Calls that failed: neither succeeded nor were cancelled by their caller."""


class CallLog:
    """Recent calls, counters and latency buckets, from the messages seen on the bus."""

    def __init__(self) -> None:
        self._pending: OrderedDict[str, CallRecord] = OrderedDict()
        self._recent: deque[CallRecord] = deque(maxlen=RECENT_CALLS)
        self._by_id: dict[str, CallRecord] = {}
        self.counts: Counter[str] = Counter()
        """Ended calls by status, and ``started``."""
        self._started_per_second: Counter[int] = Counter()
        self._latency: dict[str, dict[int, _Bucket]] = {}
        self.lost = 0
        """Messages the dashboard knows it missed (tasks of results it saw)."""
        self._since = time.monotonic()
        self._last_loss: float | None = None
        self._orphans: deque[tuple[float, CallRecord]] = deque(maxlen=MAX_PENDING)

    def observing(self, since: float | None = None) -> None:
        """The observer is subscribed since ``since`` (monotonic; now when None).

        A result whose task was sent earlier is no loss: the dashboard was not there.
        """
        self._since = time.monotonic() if since is None else since

    # -- what arrives ------------------------------------------------------------

    def task(self, message: TaskMessage, payload_bytes: int) -> CallRecord | None:
        """A task seen on a call topic; the record, or None when nothing changed."""
        record = self._by_id.get(message.task_id)
        if record is not None and record.task_seen:
            return None  # sent again (at-least-once delivery): the first sighting counts
        now = time.time()
        if record is None:
            record = CallRecord(message.task_id, message.tool_name)
            self._admit(record)
        record.tool_id = record.tool_id or message.tool_id
        record.tool_name = message.tool_name or record.tool_name
        record.caller = message.source
        record.arguments = _kept(message.arguments, payload_bytes)
        context = message.context
        record.thread_id = context.thread_id if context is not None else record.thread_id
        record.trace_id = trace_id_of(message.traceparent) or (
            context.trace_id if context is not None else None
        )
        record.timeout = message.timeout_seconds
        record.via_bus = record.task_seen = True
        self.counts["started"] += 1
        self._started_per_second[int(now)] += 1
        if record.status == "running":  # else its result came first: no duration to measure
            record.started_at = now
            record.started = time.monotonic()
        return record

    def cancel(self, message: ToolCancelMessage) -> None:
        """A cancellation seen on a call topic: remembered for the answer that follows."""
        record = self._pending.get(message.task_id)
        if record is not None:
            record.cancel_reason = message.reason or "cancelled"

    def result(
        self, message: TaskResultMessage | TaskErrorMessage, payload_bytes: int
    ) -> CallRecord | None:
        """A result seen on a response topic; the record, or None for one already ended."""
        record = self._by_id.get(message.task_id)
        if record is not None and record.status not in ("running", "unknown"):
            return None  # a repeated reply: the first one counts
        if record is None:
            record = CallRecord(message.task_id, message.tool_name, message.tool_id)
            record.arguments = _kept(message.arguments, payload_bytes)
            self._admit(record)
            if message.duration_ms is not None:
                sent = time.monotonic() - message.duration_ms / 1000
                if sent > self._since + TIMEOUT_GRACE_SECONDS:
                    # Its task may still come (another topic); sweep() decides.
                    self._orphans.append((time.monotonic(), record))
        status = _status(message.status, record.cancel_reason)
        record.tool_duration_ms = message.duration_ms
        if record.started is not None:
            record.duration_ms = (time.monotonic() - record.started) * 1000
        if status == "timeout" and record.cancel_reason is not None:
            # The caller's words: the tool only knows it was cancelled.
            self._end(record, status, error=record.cancel_reason, error_code="timeout")
        elif isinstance(message, TaskErrorMessage):
            self._end(
                record,
                status,
                error=message.error,
                error_code=message.error_code or (None if status == "timeout" else "error"),
                details=message.details,
            )
        else:
            self._end(
                record, status, result=_kept(message.result, payload_bytes), error=message.error
            )
            record.content = kept_content(message.content)
        return record

    def exchange(
        self, message: ToolAskMessage | ToolAnswerMessage | ToolLogMessage, payload_bytes: int
    ) -> CallRecord | None:
        """A question, answer or log record of a call seen; its record when it was kept.

        One of a call the dashboard does not know (its task not seen) is not kept.
        """
        record = self._by_id.get(message.task_id)
        if record is None:
            return None
        if record.exchanges is None:
            record.exchanges = KeptExchanges()
        at_ms = (time.monotonic() - record.started) * 1000 if record.started is not None else None
        if isinstance(message, ToolAskMessage):
            kept = record.exchanges.asked(message, payload_bytes, at_ms)
        elif isinstance(message, ToolAnswerMessage):
            kept = record.exchanges.answered(message, payload_bytes)
        else:
            kept = record.exchanges.logged(message, payload_bytes, at_ms)
        return record if kept else None

    def local_result(
        self, result: ToolResult, arguments: Any, thread_id: str | None
    ) -> CallRecord | None:
        """A result of the dashboard's own form: shown even when no task was published."""
        record = self._by_id.get(result.task_id)
        if record is not None:
            return None  # seen on the bus
        record = CallRecord(result.task_id, result.tool_name, result.tool_id or None)
        record.arguments = arguments
        record.thread_id = thread_id
        record.via_bus = False
        record.started_at = time.time() - (result.duration_ms or 0) / 1000
        record.tool_duration_ms = result.duration_ms
        self._admit(record)
        if isinstance(result, TaskErrorMessage):
            status = _status(result.status, None)
            self._end(
                record, status, error=result.error, error_code=result.error_code, details=None
            )
        else:
            self._end(record, "success", result=result.result)
            record.content = kept_content(result.content)
        return record

    def tool_gone(self, tool_id: str) -> list[CallRecord]:
        """The tool instance left the registry: its pending calls fail, as for their callers."""
        ended = []
        for record in [r for r in self._pending.values() if r.tool_id == tool_id]:
            if record.started is not None:
                record.duration_ms = (time.monotonic() - record.started) * 1000
            self._end(
                record,
                "error",
                error=f"Tool '{record.tool_name}' went offline while the call was pending.",
                error_code="tool_offline",
            )
            ended.append(record)
        return ended

    def sweep(self) -> list[CallRecord]:
        """End the pending calls whose caller has surely given up; the records that ended."""
        now = time.monotonic()
        while self._orphans and self._orphans[0][0] < now - TASK_GRACE_SECONDS:
            seen_at, orphan = self._orphans.popleft()
            if not orphan.task_seen:
                self.lost += 1
                self._last_loss = max(self._last_loss or seen_at, seen_at)
        ended = []
        for record in list(self._pending.values()):
            if record.started is None:
                continue
            waited = now - record.started
            if record.timeout is not None and waited > record.timeout + TIMEOUT_GRACE_SECONDS:
                record.duration_ms = waited * 1000
                if self._losing(record.started):
                    self._end(
                        record,
                        "unknown",
                        error=(
                            f"No result seen within the call's timeout of {record.timeout:g} s, "
                            f"while the dashboard missed messages from the broker ({self.lost} "
                            "so far): the call may have succeeded."
                        ),
                        error_code="result_not_seen",
                    )
                else:
                    self._end(
                        record,
                        "timeout",
                        error=f"No result within the call's timeout of {record.timeout:g} s.",
                        error_code="timeout",
                    )
                ended.append(record)
            elif record.timeout is None and waited > FORGET_UNBOUNDED_SECONDS:
                self._forget(record)
        return ended

    def _losing(self, started: float) -> bool:
        """Whether messages were lost, or may be (results still without their task), lately."""
        if self._last_loss is not None and self._last_loss >= started - LOSS_WINDOW_SECONDS:
            return True
        return any(not orphan.task_seen for _, orphan in self._orphans)

    # -- what is shown -----------------------------------------------------------

    def get(self, task_id: str) -> CallRecord | None:
        """The call with this task id, while it is kept."""
        return self._by_id.get(task_id)

    def recent(self, limit: int) -> list[CallRecord]:
        """Pending and recently ended calls, the latest first."""
        calls = list(self._pending.values()) + list(self._recent)
        calls.sort(key=lambda record: record.started_at or record.ended_at or 0.0, reverse=True)
        return calls[:limit]

    def counters(self) -> dict[str, Any]:
        """Calls per second (over the last seconds), outcomes since the start, in flight."""
        second = int(time.time())
        for old in [s for s in self._started_per_second if s < second - RATE_SECONDS - 1]:
            del self._started_per_second[old]
        started = sum(self._started_per_second[second - 1 - back] for back in range(RATE_SECONDS))
        return {
            "rate": started / RATE_SECONDS,
            "started": self.counts["started"],
            "succeeded": self.counts["success"],
            "failed": self.counts["error"],
            "timed_out": self.counts["timeout"],
            "cancelled": self.counts["cancelled"],
            "not_seen": self.counts["unknown"],
            "lost": self.lost,
            "in_flight": len(self._pending),
        }

    def latency(self, since: float = 0.0) -> dict[str, list[list[float | None]]]:
        """Per tool, ``[start, calls, p50 ms, p99 ms, failures]`` for each bucket from ``since``."""
        oldest = int(time.time()) - WINDOW_SECONDS
        series: dict[str, list[list[float | None]]] = {}
        for tool, buckets in list(self._latency.items()):
            for start in [s for s in buckets if s < oldest]:
                del buckets[start]
            if not buckets:
                del self._latency[tool]
                continue
            rows = []
            for start in sorted(buckets):
                if start + BUCKET_SECONDS <= since:
                    continue
                bucket = buckets[start]
                ordered = sorted(bucket.durations)
                rows.append(
                    [
                        start,
                        bucket.count,
                        _percentile(ordered, 0.50),
                        _percentile(ordered, 0.99),
                        bucket.errors,
                    ]
                )
            if rows:
                series[tool] = rows
        return series

    # -- bookkeeping -------------------------------------------------------------

    def _admit(self, record: CallRecord) -> None:
        self._pending[record.task_id] = record
        self._by_id[record.task_id] = record
        while len(self._pending) > MAX_PENDING:
            self._forget(next(iter(self._pending.values())))

    def _forget(self, record: CallRecord) -> None:
        self._pending.pop(record.task_id, None)
        if self._by_id.get(record.task_id) is record:
            del self._by_id[record.task_id]

    def _end(
        self,
        record: CallRecord,
        status: str,
        *,
        result: Any = None,
        error: str | None = None,
        error_code: str | None = None,
        details: Any = None,
    ) -> None:
        was_unknown = record.status == "unknown"
        record.status = status
        record.result = result
        record.error = error
        record.error_code = error_code
        record.details = details
        record.ended_at = time.time()
        self._pending.pop(record.task_id, None)
        self.counts[status] += 1
        if was_unknown:  # its result came after all: already listed and sampled
            self.counts["unknown"] -= 1
            return
        if len(self._recent) == self._recent.maxlen:
            evicted = self._recent[0]
            if self._by_id.get(evicted.task_id) is evicted:
                del self._by_id[evicted.task_id]
        self._recent.append(record)
        self._sample(record)

    def _sample(self, record: CallRecord) -> None:
        duration = record.shown_duration_ms
        ended_at = record.ended_at or time.time()
        start = int(ended_at) - int(ended_at) % BUCKET_SECONDS
        bucket = self._latency.setdefault(record.tool_name, {}).setdefault(start, _Bucket())
        bucket.count += 1
        if record.status not in ("success", "cancelled"):  # a cancelled call did not fail
            bucket.errors += 1
        if duration is not None and len(bucket.durations) < SAMPLES_PER_BUCKET:
            bucket.durations.append(duration)


def _status(status: TaskStatus, cancel_reason: str | None) -> str:
    if status in SUCCESS_STATUSES:
        return "success"
    if status == TaskStatus.TIMEOUT:
        return "timeout"
    if status == TaskStatus.CANCELLED:
        # Our managers cancel a call that timed out with the timeout as the reason.
        return "timeout" if cancel_reason and "timed out" in cancel_reason else "cancelled"
    return "error"


def _kept(value: Any, payload_bytes: int) -> Any:
    """``value``, or a note with a preview when its message was too large to keep."""
    if payload_bytes <= KEEP_BYTES:
        return value
    text = json.dumps(value, ensure_ascii=False, default=str)
    return {
        "not_kept": f"{payload_bytes} bytes; the first {PREVIEW_CHARS} characters follow",
        "preview": text[:PREVIEW_CHARS],
    }


def kept_content(content: list[ContentBlock] | None) -> list[dict[str, Any]] | None:
    """A result's blocks as the dashboard keeps them: within :data:`CONTENT_BYTES`.

    Blocks are kept whole, in order, while their data (or text) fits what is left;
    a block past that keeps its type, MIME type and size but not its data, and a
    text its first :data:`PREVIEW_CHARS` characters.
    """
    if content is None:
        return None
    left = CONTENT_BYTES
    kept: list[dict[str, Any]] = []
    for block in content:
        size = _data_size(block)
        if size <= left:
            kept.append(block.wire())
            left -= size
        else:
            kept.append(_without_data(block, size))
    return kept


def _data_size(block: ContentBlock) -> int:
    """Bytes a block's data or text takes (a link's fields are small and bounded)."""
    if isinstance(block, Image | Audio):
        return len(block.data)
    if isinstance(block, EmbeddedResource):
        return len(block.blob) if block.blob is not None else len(block.text or "")
    if isinstance(block, Text):
        return len(block.text)
    return 0


def _without_data(block: ContentBlock, size: int) -> dict[str, Any]:
    """The block's shape with its data left out: its type, MIME type and size remain."""
    shape = block.wire()
    if isinstance(block, EmbeddedResource):
        inner = {key: value for key, value in shape["resource"].items() if key != "blob"}
        if block.text is not None:
            inner["text"] = block.text[:PREVIEW_CHARS]
        return {**shape, "resource": {**inner, TRUNCATED: True, "bytes": size}}
    if isinstance(block, Text):
        return {**shape, "text": block.text[:PREVIEW_CHARS], TRUNCATED: True, "bytes": size}
    shape.pop("data", None)
    return {**shape, TRUNCATED: True, "bytes": size}


def _percentile(ordered: list[float], fraction: float) -> float | None:
    if not ordered:
        return None
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]

"""A call's exchange with its caller, as the dashboard sees it on the bus.

While a call runs, its tool may ask its caller questions (``TOOL_ASK``, on the caller's
reply topic), get answers (``TOOL_ANSWER``, on the tool's call topic) and send log
records (``TOOL_LOG``). :class:`KeptExchanges` keeps them for the call's details in the
shape a call history keeps them (:attr:`~argentic_tools.Observation.exchanges`): each a
mapping with ``kind`` and ``at_ms`` (milliseconds since the dashboard saw the task); a
question with ``ask_id``, ``request`` and, once answered, ``answer`` or ``error``; a log
record with ``record``.

Bounded per call: at most :data:`EXCHANGES_PER_CALL` exchanges and
:data:`EXCHANGE_BYTES` of their messages; past either, exchanges are counted, not kept
(a last log record says how many), and a single message larger than
:data:`MESSAGE_BYTES` keeps its kind and size but not its body.
"""

from typing import Any

from .._agent.records.calls_table import TRUNCATED
from .._protocol.participation import ToolAnswerMessage, ToolAskMessage, ToolLogMessage

EXCHANGES_PER_CALL = 200
"""Exchanges kept per call (as a call's observation keeps them)."""
EXCHANGE_BYTES = 128 * 1024
"""Bytes of a call's exchange messages kept; at most :data:`~.calls.RECENT_CALLS` times
this in all, in practice far less."""
MESSAGE_BYTES = 32 * 1024
"""A question, answer or record whose message is larger keeps its size, not its body."""


class KeptExchanges:
    """One call's questions, answers and log records, in the order they were seen."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.left_out = 0
        """Exchanges seen but not kept (past the bounds)."""
        self._bytes = 0
        self._asks: dict[str, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.items) + self.left_out

    def asked(self, message: ToolAskMessage, payload_bytes: int, at_ms: float | None) -> bool:
        """A question seen; False when it was only counted."""
        if not self._room(payload_bytes):
            return False
        entry: dict[str, Any] = {
            "kind": message.kind,
            "at_ms": at_ms,
            "ask_id": message.ask_id,
            "request": _body(message.request, payload_bytes),
        }
        self.items.append(entry)
        self._asks[message.ask_id] = entry
        return True

    def answered(self, message: ToolAnswerMessage, payload_bytes: int) -> bool:
        """An answer seen; False when its question is not kept (or is answered already)."""
        entry = self._asks.pop(message.ask_id, None)
        if entry is None:
            return False
        if message.result is not None:
            fits = payload_bytes <= MESSAGE_BYTES and self._bytes + payload_bytes <= EXCHANGE_BYTES
            entry["answer"] = message.result if fits else _marker(payload_bytes)
            self._bytes += payload_bytes if fits else 0
        else:
            entry["error"] = message.error or "no answer"
        return True

    def logged(self, message: ToolLogMessage, payload_bytes: int, at_ms: float | None) -> bool:
        """A log record seen; False when it was only counted."""
        if not self._room(payload_bytes):
            return False
        record = message.record.model_dump(mode="json")
        if payload_bytes > MESSAGE_BYTES:
            record = {**record, "data": _marker(payload_bytes), "message": record["message"][:500]}
        self.items.append({"kind": "log", "at_ms": at_ms, "record": record})
        return True

    def shapes(self) -> list[dict[str, Any]]:
        """The kept exchanges, and a last log record counting those left out."""
        if not self.left_out:
            return list(self.items)
        note = {
            "level": "warning",
            "message": f"{self.left_out} more exchanges not kept by the dashboard",
            "data": None,
            "logger": None,
        }
        return [*self.items, {"kind": "log", "at_ms": None, "record": note}]

    def _room(self, payload_bytes: int) -> bool:
        size = min(payload_bytes, MESSAGE_BYTES)
        if len(self.items) >= EXCHANGES_PER_CALL or self._bytes + size > EXCHANGE_BYTES:
            self.left_out += 1
            return False
        self._bytes += size if payload_bytes <= MESSAGE_BYTES else 0
        return True


def _body(request: dict[str, Any], payload_bytes: int) -> dict[str, Any]:
    """The question as it came, or its size (and its message, a question's words)."""
    if payload_bytes <= MESSAGE_BYTES:
        return request
    kept = _marker(payload_bytes)
    message = request.get("message")
    if isinstance(message, str):
        kept["message"] = message[:500]
    return kept


def _marker(size: int) -> dict[str, Any]:
    return {TRUNCATED: True, "bytes": size}

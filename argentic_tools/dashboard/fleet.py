"""The fleet as the dashboard shows it: each tool, its replicas, their processes.

:class:`FleetView` joins two sources. The manager's registry says which tool
instances exist, which process (client id) serves each, and when one leaves (its
Last Will, or its unregistration). The answers to ``fleet_stats`` say what each
process is (host, pid, version, uptime) and what each instance has served (calls,
errors, cancellations, p50/p99, calls in flight, its concurrency limit). A call its
caller cancelled is no error: error rates are over the calls not cancelled. An
instance whose process does not answer stats requests (an older version, another
implementation) counts its uptime from its registration. An instance that leaves
the registry stays on view as offline, with its last numbers, until it registers
again or :data:`MAX_OFFLINE` newer departures push it out.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .._protocol.fleet_messages import ToolStatsEntry, ToolStatsMessage

MAX_OFFLINE = 200
"""Offline instances kept on view at most (the oldest departures go first)."""
SILENT_SECONDS = 5.0
"""A registered instance whose process has not answered for this long is shown as silent."""


@dataclass(slots=True)
class _Instance:
    tool_id: str
    name: str
    source: str | None
    registered_at: float | None = None
    """Unix time of its latest registration, as the manager's registry says."""
    online: bool = True
    left_at: float | None = None
    stats: ToolStatsEntry | None = None


@dataclass(slots=True)
class _Process:
    answer: ToolStatsMessage
    answered_at: float


class FleetView:
    """Tool instances (online and offline) and the latest answer of each process."""

    def __init__(self) -> None:
        self._instances: dict[str, _Instance] = {}
        self._processes: dict[str, _Process] = {}

    def sync(self, registry: Mapping[str, Mapping[str, Any]], now: float) -> list[str]:
        """Follow the manager's ``tools_by_id``; returns the ids that have just left it."""
        for tool_id, entry in registry.items():
            known = self._instances.get(tool_id)
            source = entry.get("source_client_id")
            registered_at = _unix(entry.get("registered_at"))
            if known is None or known.source != source or known.name != entry["name"]:
                self._instances[tool_id] = _Instance(tool_id, entry["name"], source, registered_at)
            elif not known.online:
                known.online, known.left_at = True, None
                known.registered_at = registered_at
        gone = [
            tool_id
            for tool_id, instance in self._instances.items()
            if instance.online and tool_id not in registry
        ]
        for tool_id in gone:
            self._instances[tool_id].online = False
            self._instances[tool_id].left_at = now
        offline = sorted(
            (i for i in self._instances.values() if not i.online), key=lambda i: i.left_at or 0.0
        )
        for instance in offline[: max(0, len(offline) - MAX_OFFLINE)]:
            del self._instances[instance.tool_id]
        shown_sources = {i.source for i in self._instances.values() if i.source is not None}
        for source in [s for s in self._processes if s not in shown_sources]:
            del self._processes[source]
        return gone

    def answered(self, answers: Iterable[ToolStatsMessage], now: float) -> None:
        """Take the processes' answers to a stats request."""
        for answer in answers:
            if answer.source is None:
                continue
            self._processes[answer.source] = _Process(answer, now)
            for entry in answer.tools:
                instance = self._instances.get(entry.tool_id)
                if instance is not None and instance.source == answer.source:
                    instance.stats = entry

    def view(self, now: float) -> list[dict[str, Any]]:
        """One entry per tool name (in name order) with its replicas."""
        tools: dict[str, list[dict[str, Any]]] = {}
        for instance in self._instances.values():
            tools.setdefault(instance.name, []).append(self._replica(instance, now))
        view = []
        for name in sorted(tools):
            replicas = sorted(tools[name], key=lambda r: (not r["online"], r["process"] or ""))
            calls = sum(r["calls"] for r in replicas)
            errors = sum(r["errors"] for r in replicas)
            cancelled = sum(r["cancelled"] for r in replicas)
            starts = [r["started_at"] for r in replicas if r["online"] and r["started_at"]]
            p99s = [r["p99_ms"] for r in replicas if r["p99_ms"] is not None]
            p50s = [r["p50_ms"] for r in replicas if r["p50_ms"] is not None]
            view.append(
                {
                    "name": name,
                    "online": sum(1 for r in replicas if r["online"]),
                    "calls": calls,
                    "errors": errors,
                    "cancelled": cancelled,
                    "error_rate": _error_rate(errors, calls, cancelled),
                    # The longest-serving online replica's start: the tool's uptime.
                    "started_at": min(starts) if starts else None,
                    "p50_ms": max(p50s) if p50s else None,
                    "p99_ms": max(p99s) if p99s else None,
                    "in_flight": sum(r["in_flight"] for r in replicas if r["online"]),
                    "replicas": replicas,
                }
            )
        return view

    def _replica(self, instance: _Instance, now: float) -> dict[str, Any]:
        process = self._processes.get(instance.source or "")
        stats = instance.stats
        state = "offline"
        if instance.online:
            silent = process is None or now - process.answered_at > SILENT_SECONDS
            state = "silent" if silent else "online"
        answer = process.answer if process is not None else None
        return {
            "tool_id": instance.tool_id,
            "source": instance.source,
            "state": state,
            "online": instance.online,
            "left_at": instance.left_at,
            "process": (
                f"{answer.host.split('.', 1)[0] or '?'}:{answer.pid}" if answer else instance.source
            ),
            "host": answer.host if answer else None,
            "pid": answer.pid if answer else None,
            "version": answer.version if answer else None,
            # When the process started serving (or, when it does not say, when the
            # instance registered), so that the page counts its uptime on.
            "started_at": (
                process.answered_at - process.answer.uptime_seconds
                if process
                else instance.registered_at
            ),
            "uptime_from": "stats" if process else "registration",
            "calls": stats.calls if stats else 0,
            "errors": stats.errors if stats else 0,
            "cancelled": stats.cancelled if stats else 0,
            "error_rate": _error_rate(stats.errors, stats.calls, stats.cancelled)
            if stats
            else None,
            "outcomes": dict(stats.outcomes) if stats else {},
            "p50_ms": stats.p50_ms if stats else None,
            "p99_ms": stats.p99_ms if stats else None,
            "in_flight": stats.in_flight if stats else 0,
            "max_concurrency": stats.max_concurrency if stats else None,
        }


def _error_rate(errors: int, calls: int, cancelled: int) -> float | None:
    """Errors over the calls not cancelled; None when there is none."""
    ended = calls - cancelled
    return errors / ended if ended > 0 else None


def _unix(iso: Any) -> float | None:
    """An ISO 8601 time as Unix time; None when it is not one."""
    try:
        return datetime.fromisoformat(iso).timestamp() if isinstance(iso, str) else None
    except ValueError:
        return None

"""What a soak run records and concludes: each call's and each fault's record, the checks
made from them (see ``benchmarks.soak``), and the Markdown report."""

import asyncio
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from argentic_tools import ToolResult

if TYPE_CHECKING:
    from benchmarks.soak import Soak

TOOL = "soak_work"


@dataclass(slots=True)
class Call:
    """One call's record, as the caller saw it."""

    n: int
    task_id: str
    started: float
    ended: float = 0.0
    outcome: str = ""
    pid: int | None = None
    error: str | None = None


@dataclass
class Fault:
    """One fault: when it hit, when it ended, and when every tool process served again."""

    kind: str
    target: str
    at_call: int
    in_flight: int
    fired_at: float
    ended_at: float | None = None
    recovered_at: float | None = None
    expected: set[int] = field(default_factory=set)
    served: set[int] = field(default_factory=set)
    recovered: asyncio.Event = field(default_factory=asyncio.Event)

    def note_success(self, pid: int | None, started: float, now: float) -> None:
        if self.ended_at is None or self.recovered_at is not None or started < self.ended_at:
            return
        if pid is not None:
            self.served.add(pid)
        if self.expected <= self.served:
            self.recovered_at = now
            self.recovered.set()


def classify(result: ToolResult, n: int, fail: bool) -> tuple[str, int | None, str | None]:
    """``(outcome, pid, error)`` of one call; a success must carry its own ``n`` back."""
    if result.ok:
        value = getattr(result, "result", None)
        if fail or not isinstance(value, dict) or value.get("n") != n:
            return "wrong_result", None, f"got {value!r}"
        pid = value.get("pid")
        return "success", pid if isinstance(pid, int) else None, None
    code = getattr(result, "error_code", None) or str(result.status.value)
    error = getattr(result, "error", None)
    if code == "execution_error" and fail:
        return "tool_error (asked for)", None, None
    return code, None, error


def summarise(soak: "Soak", wall: float) -> dict[str, Any]:
    args = soak.args
    calls = soak.calls
    outcomes = Counter(call.outcome for call in calls)
    late = [c for c in calls if c.ended - c.started > args.timeout + 1.0]
    per_task = Counter(call.task_id for call in calls)
    log_path = soak.executions_log
    executions = Counter(log_path.read_text().split()) if log_path.exists() else Counter()
    duplicates = {task: count for task, count in executions.items() if count > 1}
    ok_latency = sorted((c.ended - c.started) * 1000 for c in calls if c.outcome == "success")
    examples: dict[str, str] = {}
    for call in calls:
        if call.error and call.outcome not in examples:
            examples[call.outcome] = call.error[:200]
    by_task = {call.task_id: call for call in calls}
    repeated = [task for task, count in soak.wire_results.items() if count > 1]
    faults = []
    # Each call counts for the first fault it overlapped: in flight when the fault hit,
    # or started before that fault had recovered.
    around: list[Counter[str]] = [Counter() for _ in soak.faults]
    for call in calls:
        for i, fault in enumerate(soak.faults):
            end = fault.recovered_at or fault.ended_at or fault.fired_at
            if call.started <= end and call.ended >= fault.fired_at:
                around[i][call.outcome] += 1
                break
    for fault, touched in zip(soak.faults, around, strict=True):
        faults.append(
            {
                "kind": fault.kind,
                "target": fault.target,
                "at_call": fault.at_call,
                "in_flight": fault.in_flight,
                "duration_s": (fault.ended_at or fault.fired_at) - fault.fired_at,
                "recovery_s": (
                    None
                    if fault.recovered_at is None or fault.ended_at is None
                    else fault.recovered_at - fault.ended_at
                ),
                "calls_during": dict(touched),
            }
        )
    planned = len(args.fault_list)
    checks = {
        "ended": {"value": len(calls), "required": soak.issued, "ok": len(calls) == soak.issued},
        "all_made": {
            "value": soak.issued,
            "required": args.calls,
            "ok": soak.issued >= args.calls,
        },
        "late": {"value": len(late), "required": 0, "ok": not late},
        "multiple_results": {
            "value": sum(1 for count in per_task.values() if count > 1),
            "required": 0,
            "ok": all(count == 1 for count in per_task.values()),
        },
        "wrong_results": {
            "value": outcomes.get("wrong_result", 0),
            "required": 0,
            "ok": not outcomes.get("wrong_result"),
        },
        "duplicate_executions": {"value": len(duplicates), "required": 0, "ok": not duplicates},
        "faults_recovered": {
            "value": sum(1 for f in faults if f["recovery_s"] is not None),
            "required": planned,
            "ok": sum(1 for f in faults if f["recovery_s"] is not None) == planned,
        },
    }
    return {
        "wall_s": wall,
        "calls": len(calls),
        "outcomes": dict(outcomes.most_common()),
        "error_examples": examples,
        "late": [asdict(c) for c in late[:20]],
        "executions": sum(executions.values()),
        "executed_task_ids": len(executions),
        "duplicate_executions": dict(list(duplicates.items())[:20]),
        "wire_results_over_one": len(repeated),
        "wire_results_over_one_calls": sorted(by_task[t].n for t in repeated if t in by_task)[:50],
        "wire_results_over_one_by_outcome": dict(
            Counter(by_task[t].outcome if t in by_task else "unknown" for t in repeated)
        ),
        "success_ms": {
            "p50": statistics.median(ok_latency) if ok_latency else None,
            "p99": ok_latency[int(len(ok_latency) * 0.99)] if ok_latency else None,
            "max": ok_latency[-1] if ok_latency else None,
        },
        "faults": faults,
        "checks": checks,
        "passed": all(check["ok"] for check in checks.values()),
    }


def build_markdown(data: dict[str, Any]) -> str:
    cfg, res, machine = data["config"], data["result"], data["machine"]
    lines = [
        "# Soak under faults",
        "",
        f"{machine['cpu_count']} cores, load {machine['load_before'][0]:.2f} before and "
        f"{machine['load_after'][0]:.2f} after; mosquitto {machine['versions']['mosquitto']}, "
        f"Python {machine['versions']['python']}; started {data['started']}.",
        "",
        f"{res['calls']:,} calls ({cfg['calls']:,} asked for, more while a fault was still "
        f"recovering), at most {cfg['inflight']} in flight, paced at "
        f"{cfg['rate']:g}/s, over {cfg['tools']} tool processes serving `{TOOL}`; "
        f"timeout {cfg['timeout']:g} s per call, tool work {cfg['work_ms']:g} ms on average, "
        f"every {cfg['fail_every']}th call asks the tool to fail. Faults in order: "
        f"{', '.join(cfg['faults'])}. Wall time {res['wall_s']:.1f} s.",
        "",
        "## Checks",
        "",
        "| check | measured | required | |",
        "|---|---|---|---|",
    ]
    names = {
        "ended": "calls that ended (one result each)",
        "all_made": "calls made (at least)",
        "late": "calls ended later than deadline + 1 s",
        "multiple_results": "calls with more than one result",
        "wrong_results": "successes carrying another call's value",
        "duplicate_executions": "task ids executed more than once",
        "faults_recovered": "faults recovered",
    }
    for key, check in res["checks"].items():
        verdict = "ok" if check["ok"] else "**FAILED**"
        lines.append(f"| {names[key]} | {check['value']:,} | {check['required']:,} | {verdict} |")
    lines += ["", "## Outcomes", "", "| outcome | calls |", "|---|---|"]
    lines += [f"| {outcome} | {count:,} |" for outcome, count in res["outcomes"].items()]
    ms = res["success_ms"]
    if ms["p50"] is not None:
        lines += [
            "",
            f"Successful calls: p50 {ms['p50']:.2f} ms, p99 {ms['p99']:.2f} ms, "
            f"max {ms['max']:.0f} ms. Tool executions logged: {res['executions']:,} "
            f"({res['executed_task_ids']:,} task ids). Task ids with more than one result "
            f"message on the wire (redelivered; the manager keeps the first): "
            f"{res['wire_results_over_one']}.",
        ]
    lines += [
        "",
        "## Faults",
        "",
        "| # | fault | target | at call | in flight | lasted | recovered in | calls around it |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, fault in enumerate(res["faults"], 1):
        recovery = (
            "**not recovered**" if fault["recovery_s"] is None else f"{fault['recovery_s']:.2f} s"
        )
        around = ", ".join(f"{k} {v}" for k, v in sorted(fault["calls_during"].items()))
        lines.append(
            f"| {i} | {fault['kind']} | {fault['target']} | {fault['at_call']:,} | "
            f"{fault['in_flight']} | {fault['duration_s']:.2f} s | {recovery} | {around} |"
        )
    if res["error_examples"]:
        lines += ["", "## An example of each error", ""]
        lines += [f"- {outcome}: {text}" for outcome, text in res["error_examples"].items()]
    verdict = "passed" if res["passed"] else "FAILED"
    lines += ["", f"**Soak {verdict}.**"]
    return "\n".join(lines) + "\n"

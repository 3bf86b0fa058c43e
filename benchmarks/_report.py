"""The Markdown report and the target verdicts, from the list of result records."""

import math
from collections.abc import Callable
from typing import Any

from benchmarks._chart import cdf_svg
from benchmarks.harness.stats import fmt, fmt_range, median, ratio

IMPL_ORDER = ("floor", "ours", "ours-basetool", "argentic")
CDF_FILE = "latency_cdf.svg"  # beside latest.md, which links it
TITLES = {
    "a": "(a) Sequential latency",
    "b": "(b) Throughput, batches of {batch} through get_tool_results",
    "c": "(c) Throughput over {tools} tools, batches of {batch}",
    "d": "(d) {inflight} calls in flight at once (ours only)",
    "e": "(e) {many} tools registering at once (ours only)",
    "f": "(f) Cost of input validation (ours only)",
}


def _select(results: list[dict[str, Any]], scenario: str, impl: str) -> list[dict[str, Any]]:
    return [r for r in results if r["scenario"] == scenario and r["impl"] == impl]


def _metric(rows: list[dict[str, Any]], key: str) -> list[float]:
    return [r["metrics"].get(key, math.nan) if not r["error"] else math.nan for r in rows]


def _by_rep(rows: list[dict[str, Any]], key: str) -> dict[int, float]:
    return {r["rep"]: (math.nan if r["error"] else r["metrics"].get(key, math.nan)) for r in rows}


def _calls(rows: list[dict[str, Any]]) -> str:
    total = sum(r["calls"] for r in rows)
    ok = sum(r["ok"] for r in rows)
    return f"{ok}/{total}"


def _failed(rows: list[dict[str, Any]]) -> str:
    failed = sum(r["failed"] for r in rows)
    errors = [r["error"] for r in rows if r["error"]]
    text = f"**{failed}**" if failed else "0"
    if errors:
        text += f" + {len(errors)} run(s) aborted: {errors[0][:80]}"
    return text


def sequential_latencies(results: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Scenario (a)'s per-call latencies in ms, every repetition pooled, per implementation."""
    series: dict[str, list[float]] = {}
    for impl in IMPL_ORDER:
        pooled = [v for r in _select(results, "a", impl) for v in r.get("latencies_ms", [])]
        if pooled:
            series[impl] = pooled
    return series


def latency_chart(data: dict[str, Any]) -> str | None:
    """The SVG of scenario (a)'s latency CDFs, or None when (a) has no latencies to draw."""
    series = sequential_latencies(data["results"])
    if not series:
        return None
    cfg = data["config"]
    reps = "1 repetition" if cfg["reps"] == 1 else f"{cfg['reps']} repetitions"
    return cdf_svg(
        series,
        f"{TITLES['a']}: {reps} of {cfg['sequential']} echo calls per implementation",
        "empirical CDF of every call; further left is faster, the top of a line is its tail",
    )


class Verdicts:
    """Collects ``(target, measured, met)`` rows for the summary table."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, target: str, measured: str, met: bool | None) -> None:
        self.rows.append({"target": target, "measured": measured, "met": met})


def verdict(met: bool | None) -> str:
    return "n/a" if met is None else ("met" if met else "**not met**")


def _ratio_table(
    results: list[dict[str, Any]],
    scenario: str,
    key: str,
    reps: list[int],
    checks: list[tuple[str, str, Callable[[float], bool] | None, str]],
    verdicts: Verdicts,
    label: str,
) -> list[str]:
    """One row per (numerator, denominator): the ratio per repetition and its median."""
    head = "| ratio | " + " | ".join(f"rep {r}" for r in reps) + " | median | target | result |"
    lines = [head, "|---" * (len(reps) + 4) + "|"]
    for num, den, check, target in checks:
        a = _by_rep(_select(results, scenario, num), key)
        b = _by_rep(_select(results, scenario, den), key)
        if not a or not b:
            continue
        per_rep = [ratio(a.get(r), b.get(r)) for r in reps]
        med = median(per_rep)
        met = None if (check is None or math.isnan(med)) else check(med)
        cells = " | ".join(fmt(v) for v in per_rep)
        result = verdict(met) if check is not None else "(info)"
        lines.append(f"| {num} / {den} | {cells} | {fmt(med)} | {target} | {result} |")
        if check is not None:
            verdicts.add(f"{label}: {num} / {den} {target}", fmt(med), met)
    return lines


def _rep_table(
    rows: list[dict[str, Any]],
    header: str,
    cells: Callable[[dict[str, Any], dict[str, Any]], list[str]],
) -> list[str]:
    """A table with one row per repetition (``cells(result, metrics)``), then a blank line."""
    columns = header.count("|") + 1
    out = [f"| rep | {header} |", "|---" * (columns + 1) + "|"]
    for r in rows:
        if r["error"]:
            out.append(f"| {r['rep']} | aborted: {r['error'][:100]} |" + " |" * (columns - 1))
        else:
            out.append(f"| {r['rep']} | " + " | ".join(cells(r, r["metrics"])) + " |")
    return [*out, ""]


def build_markdown(data: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    results: list[dict[str, Any]] = data["results"]
    cfg = data["config"]
    machine = data["machine"]
    reps = list(range(1, cfg["reps"] + 1))
    present = {r["scenario"] for r in results}
    impls = [i for i in IMPL_ORDER if any(r["impl"] == i for r in results)]
    verdicts = Verdicts()
    out: list[str] = ["# argentic-tools benchmark", ""]
    load = machine["load_before"]
    out += [
        f"- when: {data['started']} ({data['duration_s']:.0f} s)",
        f"- machine: {machine['cpu_count']} cores, load average {load[0]:.2f} / {load[1]:.2f} / "
        f"{load[2]:.2f} before, {machine['load_after'][0]:.2f} after; {machine['platform']}",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in machine["versions"].items()),
        f"- one mosquitto ({cfg['broker']}), `set_tcp_nodelay true`, "
        "`max_inflight_messages 0`, `max_queued_messages 1000000`; every peer in its own process",
        f"- {cfg['reps']} repetition(s), interleaved ({', '.join(impls)} in turn per scenario); "
        f"cells are `median (min-max)` over repetitions; ratios are per repetition, then their "
        f"median{'; QUICK mode: small counts' if cfg['quick'] else ''}",
    ]
    if cfg.get("argentic_note"):
        out.append(f"- argentic: {cfg['argentic_note']}")
    out.append("")

    if "a" in present:
        out += [f"## {TITLES['a']}, {cfg['sequential']} calls", ""]
        out += ["| implementation | p50 ms | p95 ms | p99 ms | ok/total | failed or lost |"]
        out += ["|---|---|---|---|---|---|"]
        for impl in impls:
            rows = _select(results, "a", impl)
            if rows:
                out.append(
                    f"| {impl} | {fmt_range(_metric(rows, 'p50_ms'), 3)} | "
                    f"{fmt_range(_metric(rows, 'p95_ms'), 3)} | "
                    f"{fmt_range(_metric(rows, 'p99_ms'), 3)} | {_calls(rows)} | {_failed(rows)} |"
                )
        out += ["", "p50 latency ratios (lower is better):", ""]
        out += _ratio_table(
            results,
            "a",
            "p50_ms",
            reps,
            [
                ("ours", "floor", lambda v: v <= 1.2, "<= 1.20"),
                ("ours-basetool", "floor", lambda v: v <= 1.2, "<= 1.20"),
                ("ours", "argentic", None, ""),
                ("ours-basetool", "argentic", None, ""),
            ],
            verdicts,
            "p50 latency",
        )
        out.append("")
        if sequential_latencies(results):
            out += [
                f"![Empirical CDF of the per-call latencies in (a), one line per "
                f"implementation]({CDF_FILE})",
                "",
                "Every call of every repetition: the fraction of calls (y) that took at most a "
                "given latency (x, log scale); further left is faster, and the top of a line is "
                "its tail. The raw values are `latencies_ms` in `latest.json`.",
                "",
            ]

    for scenario in ("b", "c"):
        if scenario not in present:
            continue
        title = TITLES[scenario].format(batch=cfg["batch"], tools=cfg["tools"])
        out += [f"## {title}, {cfg['calls']} calls", ""]
        out += ["| implementation | calls/s | elapsed s | ok/total | failed or lost |"]
        out += ["|---|---|---|---|---|"]
        for impl in impls:
            rows = _select(results, scenario, impl)
            if rows:
                out.append(
                    f"| {impl} | {fmt_range(_metric(rows, 'calls_per_s'), 0)} | "
                    f"{fmt_range(_metric(rows, 'elapsed_s'))} | {_calls(rows)} | "
                    f"{_failed(rows)} |"
                )
        out += ["", "throughput ratios (higher is better):", ""]
        out += _ratio_table(
            results,
            scenario,
            "calls_per_s",
            reps,
            [
                ("ours", "floor", lambda v: v >= 0.85, ">= 0.85"),
                ("ours", "argentic", lambda v: v >= 2.0, ">= 2.00"),
                ("ours-basetool", "floor", lambda v: v >= 0.85, ">= 0.85"),
                ("ours-basetool", "argentic", lambda v: v >= 2.0, ">= 2.00"),
            ],
            verdicts,
            f"throughput ({scenario})",
        )
        out.append("")

    if "d" in present:
        rows = _select(results, "d", "ours")
        out += [f"## {TITLES['d'].format(inflight=cfg['inflight'])}", ""]
        out += [
            f"Each call is `wait({cfg['inflight_seconds']:g})`, all sent at once by one "
            "`get_tool_results` from a fresh manager process; RSS from /proc/self/status.",
            "",
        ]
        out += _rep_table(
            rows,
            "wall s | ok/total | failed or lost | RSS before MiB | RSS peak MiB | VmHWM MiB | "
            "bytes per pending call",
            lambda r, m: [
                fmt(m["wall_s"]),
                f"{r['ok']}/{r['calls']}",
                _failed([r]),
                fmt(m["rss_before_mib"], 1),
                fmt(m["rss_peak_mib"], 1),
                fmt(m["vm_hwm_mib"], 1),
                fmt(m["bytes_per_pending"], 0),
            ],
        )
        lost = sum(r["failed"] for r in rows) + sum(1 for r in rows if r["error"])
        per_call = median(_metric(rows, "bytes_per_pending"))
        wall = median(_metric(rows, "wall_s"))
        verdicts.add(
            f"{cfg['inflight']} in-flight calls: none lost", f"{lost} lost", not lost and bool(rows)
        )
        verdicts.add(
            "... and < 4 KiB per pending call",
            f"{fmt(per_call, 0)} B",
            None if math.isnan(per_call) else per_call < 4096,
        )
        verdicts.add(f"(info) {cfg['inflight']} in-flight calls: wall time", f"{fmt(wall)} s", None)

    if "e" in present:
        rows = _select(results, "e", "ours")
        out += [f"## {TITLES['e'].format(many=cfg['many'])}", ""]
        out += [
            "One ToolService process with FunctionTool(func, name=f't{i}') tools; times from "
            "the process start (Popen) on; exports measured on their first call after the "
            "registrations (uncached) and again (cached).",
            "",
        ]
        out += _rep_table(
            rows,
            "all visible s | last one callable s | tools seen | prompt ms | prompt KiB | "
            "openai export ms | openai cached ms",
            lambda r, m: [
                fmt(m["visible_s"]),
                fmt(m["callable_s"]),
                f"{m['tools_seen']}/{m['tools']}",
                fmt(m["prompt_ms"]),
                fmt(m["prompt_bytes"] / 1024, 0),
                fmt(m["openai_ms"]),
                fmt(m["openai_cached_ms"], 3),
            ],
        )
        callable_s = median(_metric(rows, "callable_s"))
        any_failed = any(r["failed"] or r["error"] for r in rows)
        verdicts.add(
            f"{cfg['many']} tools callable within 5 s",
            f"{fmt(callable_s)} s" + (" (some never became callable)" if any_failed else ""),
            None if not rows else (not any_failed and callable_s <= 5.0),
        )
        prompt_ms = median(_metric(rows, "prompt_ms"))
        openai_ms = median(_metric(rows, "openai_ms"))
        verdicts.add(
            f"prompt export of {cfg['many']} tools < 50 ms",
            f"{fmt(prompt_ms)} ms",
            None if math.isnan(prompt_ms) else prompt_ms < 50,
        )
        verdicts.add(
            f"(also) openai export of {cfg['many']} tools < 50 ms",
            f"{fmt(openai_ms)} ms",
            None if math.isnan(openai_ms) else openai_ms < 50,
        )

    if "f" in present:
        rows = _select(results, "f", "ours")
        out += [f"## {TITLES['f']}", ""]
        out += [
            f"`typed(name: str, count: int, ratio: float, flag: bool, tags: list[str])` vs "
            f"`empty()`, {cfg['sequential']} sequential calls each in alternating blocks; and the "
            "manager's own check (`SchemaValidator.problems`, what `execute_tool` runs before "
            "publishing) timed directly.",
            "",
        ]
        out += _rep_table(
            rows,
            "typed p50 ms | empty p50 ms | difference | validator: echo µs (% of echo p50) | "
            "validator: typed µs (% of typed p50) | ok/total",
            lambda r, m: [
                fmt(m["typed_p50_ms"], 3),
                fmt(m["empty_p50_ms"], 3),
                f"{fmt(m['e2e_delta_ms'], 3)} ms ({fmt(m['e2e_delta_pct'], 1)} %)",
                f"{fmt(m['validator_echo_us'], 1)} ({fmt(m['validator_echo_pct'], 1)} %)",
                f"{fmt(m['validator_typed_us'], 1)} ({fmt(m['validator_typed_pct'], 1)} %)",
                f"{r['ok']}/{r['calls']}",
            ],
        )
        pct = median(_metric(rows, "validator_typed_pct"))
        verdicts.add(
            "input validation (5 typed fields) < 5 % of the round trip",
            f"{fmt(pct, 1)} %",
            None if math.isnan(pct) else pct < 5,
        )

    failures = [r for r in results if r["failed"] or r["error"]]
    out += ["## Targets", "", "| target | measured (median) | result |", "|---|---|---|"]
    for row in verdicts.rows:
        out.append(f"| {row['target']} | {row['measured']} | {verdict(row['met'])} |")
    out.append("")
    if failures:
        out += ["## Failed or lost calls", ""]
        for r in failures:
            what = f"aborted: {r['error']}" if r["error"] else f"{r['failed']} of {r['calls']}"
            if r["metrics"].get("call_error"):
                what += f" ({r['metrics']['call_error']})"
            out.append(f"- ({r['scenario']}) {r['impl']}, rep {r['rep']}: {what}")
    else:
        out.append("No call failed or was lost in any run.")
    out.append("")
    return "\n".join(out), verdicts.rows

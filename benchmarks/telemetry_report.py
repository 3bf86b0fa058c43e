"""The Markdown report of ``benchmarks.telemetry``: the variants side by side, ratios to
*before* within each repetition, the goal's verdict, and the checks of what ran."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness.stats import fmt, fmt_range, median, ratio

VARIANTS = ("before", "api", "sdk")
TOLERANCE = 0.03
"""The goal: with the API only, p50 at most 3 % above before, throughput at most 3 % below."""


@dataclass
class Settings:
    """The sizes of one run, which the report states."""

    warmup: int
    calls: int
    inflight: int
    seconds: float
    throughput_warmup: float = 1.0


METRICS = (
    ("p50", "p50 ms", 3),
    ("p99", "p99 ms", 3),
    ("calls_per_s", "calls/s, 100 in flight", 0),
    ("caller_cpu", "caller CPU ms per call", 3),
    ("tool_cpu", "tool CPU ms per call", 3),
)


def by_variant(runs: list[dict[str, Any]], variant: str, key: str) -> list[float]:
    return [float(run[key]) for run in runs if run["variant"] == variant]


def ratios(runs: list[dict[str, Any]], variant: str, key: str) -> list[float]:
    """``variant / before`` for ``key``, within each repetition."""
    base = {run["rep"]: run[key] for run in runs if run["variant"] == "before"}
    return [
        ratio(run[key], base.get(run["rep"]))
        for run in runs
        if run["variant"] == variant and run["rep"] in base
    ]


def cell(values: list[float], digits: int) -> str:
    if digits == 0:
        clean = sorted(values)
        if len(clean) == 1:
            return f"{clean[0]:,.0f}"
        return f"{median(clean):,.0f} ({clean[0]:,.0f}-{clean[-1]:,.0f})"
    return fmt_range(values, digits)


def percent(value: float) -> str:
    return f"{(value - 1) * 100:+.1f} %"


def verdicts(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    p50 = ratios(runs, "api", "p50")
    rate = ratios(runs, "api", "calls_per_s")
    return [
        {
            "what": "API only: p50 / before",
            "goal": f"<= {1 + TOLERANCE:.2f}",
            "values": p50,
            "met": median(p50) <= 1 + TOLERANCE,
        },
        {
            "what": "API only: calls/s / before",
            "goal": f">= {1 - TOLERANCE:.2f}",
            "values": rate,
            "met": median(rate) >= 1 - TOLERANCE,
        },
    ]


def spread(values: list[float]) -> float:
    """(max - min) / median: how far apart the repetitions of one variant landed."""
    return (max(values) - min(values)) / median(values) if values else float("nan")


def noise_note(runs: list[dict[str, Any]]) -> list[str]:
    """How the spread of *before* against itself compares with the goal's tolerance."""
    p50 = spread(by_variant(runs, "before", "p50"))
    rate = spread(by_variant(runs, "before", "calls_per_s"))
    text = (
        f"Noise: *before* against itself spread by {p50 * 100:.1f} % in p50 and "
        f"{rate * 100:.1f} % in calls/s across the repetitions ((max - min) / median)"
    )
    if max(p50, rate) > TOLERANCE:
        text += (
            f", more than the {TOLERANCE * 100:.0f} % the goal allows: on this run the verdict "
            "rests on medians that cannot resolve a 3 % difference, and a ratio inside that "
            "spread is not a measured difference. CPU ms per call is the steadier figure."
        )
    else:
        text += f", within the {TOLERANCE * 100:.0f} % the goal allows."
    return [text]


def checks_section(runs: list[dict[str, Any]], trees: dict[str, Path]) -> list[str]:
    lines = [
        "| variant | argentic_tools imported from (both processes, every run) | tracer provider "
        "| SDK imported |",
        "|---|---|---|---|",
    ]
    for variant in VARIANTS:
        mine = [run for run in runs if run["variant"] == variant]
        places = {
            str(Path(path).parent.relative_to(trees[variant].resolve()))
            for run in mine
            for path in run["library"].values()
        }
        providers = {
            otel.get("tracer_provider", "API not imported")
            for run in mine
            for otel in run["otel"].values()
        }
        sdk = {otel["sdk_imported"] for run in mine for otel in run["otel"].values()}
        lines.append(
            f"| {variant} | `<{variant} tree>/{', '.join(sorted(places))}` "
            f"| {', '.join(sorted(providers))} | {', '.join('yes' if s else 'no' for s in sdk)} |"
        )
    lines.append("")
    sdk_runs = [run for run in runs if run["variant"] == "sdk"]
    if sdk_runs:
        lines += [
            "With the SDK, per run (all calls of the run, warm-ups included):",
            "",
            "| rep | calls made | caller spans | caller `client.calls` metric | tool spans "
            "| tool spans with a remote parent | tool `tool.calls` metric "
            "| most spans held (caller / tool) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for run in sdk_runs:
            caller, tool = run["sdk"]["caller"], run["sdk"]["tool"]
            lines.append(
                f"| {run['rep']} | {run['calls_made']:,} | {caller['spans']:,} "
                f"| {caller['metric_calls']:,} | {tool['spans']:,} | {tool['remote_parents']:,} "
                f"| {tool['metric_calls']:,} "
                f"| {caller['most_spans_held']:,} / {tool['most_spans_held']:,} |"
            )
        lines.append("")
    return lines


def build_markdown(data: dict[str, Any]) -> str:
    runs: list[dict[str, Any]] = data["runs"]
    info = data["machine"]
    versions = info["versions"]
    settings: Settings = data["settings"]
    reps = data["reps"]
    lines = [
        "# Telemetry on the hot path: before it, with the OpenTelemetry API only, with the SDK",
        "",
        f"`{data['command']}`, {data['started']}, {data['duration_s']:.0f} s. "
        f"{info['cpu_count']} cores, {info['platform']}, Python {versions['python']}, mosquitto "
        f"{versions['mosquitto']}, opentelemetry-api {data['otel_versions']['api']}, "
        f"opentelemetry-sdk {data['otel_versions']['sdk']}; load average "
        f"{info['load_before'][0]:.2f} before, {info['load_after'][0]:.2f} after "
        f"(1 min; 5 min {info['load_before'][1]:.2f} / {info['load_after'][1]:.2f}).",
        "",
        "- **before**: the library at "
        f"{data['before_commit'][:7]} (the commit before telemetry), `git archive` into a "
        "temporary directory;",
        f"- **api**: the working tree, {data['working_tree']}, copied at the start; no SDK in "
        "either process (the API's no-op);",
        "- **sdk**: the same copy, with the OpenTelemetry SDK in both processes: a "
        "TracerProvider with SimpleSpanProcessor(InMemorySpanExporter) and a MeterProvider with "
        "an InMemoryMetricReader. Every 0.5 s a task on each process's event loop counts the "
        "exporter's finished spans and empties it (`get_finished_spans()`, then `clear()`).",
        "",
        "Each run is a fresh mosquitto on a free 127.0.0.1 port (`set_tcp_nodelay true`), a "
        "tool process serving `echo` (ToolService, no concurrency limit) and a caller process "
        "with one ToolManager (`benchmarks/telemetry_peer.py`, run with `python -P` and the "
        "variant's tree first on `PYTHONPATH` and as the working directory). The caller makes "
        f"{settings.warmup:,} warm-up calls, then {settings.calls:,} sequential calls (p50, "
        f"p99), then keeps {settings.inflight} calls in flight for "
        f"{settings.throughput_warmup:g} s of warm-up and a measured window of "
        f"{settings.seconds:g} s (calls/s; CPU = utime + stime from `/proc/<pid>/stat` at both "
        "ends of the window, divided by the calls in it). Every call carries its own message "
        "and counts only when that comes back. Variants interleaved per repetition "
        f"({', '.join(VARIANTS)}, {', '.join(VARIANTS)}, ...); cells are medians of {reps} "
        "(min-max).",
        "",
        "| variant | " + " | ".join(label for _, label, _ in METRICS) + " | failed or wrong |",
        "|---|" + "---|" * (len(METRICS) + 1),
    ]
    for variant in VARIANTS:
        cells = [cell(by_variant(runs, variant, key), digits) for key, _, digits in METRICS]
        bad = sum(run["failed"] + run["wrong"] for run in runs if run["variant"] == variant)
        lines.append(f"| {variant} | {' | '.join(cells)} | {bad} |")
    heads = [f"rep {rep}" for rep in range(1, reps + 1)]
    lines += [
        "",
        "Ratios to before, within each repetition, then their median:",
        "",
        "| ratio | " + " | ".join(heads) + " | median |",
        "|---|" + "---|" * (len(heads) + 1),
    ]
    for variant in ("api", "sdk"):
        for key, label, _ in METRICS:
            values = ratios(runs, variant, key)
            row = " | ".join(f"{v:.3f}" for v in values)
            lines.append(f"| {variant} / before, {label} | {row} | **{median(values):.3f}** |")
    targets = verdicts(runs)
    met = all(item["met"] for item in targets)
    lines += ["", "| target | goal | measured (median of the ratios, min-max) | result |"]
    lines.append("|---|---|---|---|")
    for item in targets:
        values = item["values"]
        lines.append(
            f"| {item['what']} | {item['goal']} | {median(values):.3f} "
            f"({min(values):.3f}-{max(values):.3f}) | {'met' if item['met'] else '**not met**'} |"
        )
    p50 = {v: median(by_variant(runs, v, "p50")) for v in VARIANTS}
    rate = {v: median(by_variant(runs, v, "calls_per_s")) for v in VARIANTS}
    cpu = {
        v: (median(by_variant(runs, v, "caller_cpu")), median(by_variant(runs, v, "tool_cpu")))
        for v in VARIANTS
    }
    api_p50, api_rate = (median(ratios(runs, "api", k)) for k in ("p50", "calls_per_s"))
    sdk_p50, sdk_rate = (median(ratios(runs, "sdk", k)) for k in ("p50", "calls_per_s"))
    lines += [
        "",
        f"**Verdict: {'met' if met else 'not met'}.** With the API only, p50 "
        f"{fmt(p50['api'], 3)} ms against {fmt(p50['before'], 3)} ms before "
        f"({percent(api_p50)} within the repetitions) and {rate['api']:,.0f} calls/s against "
        f"{rate['before']:,.0f} ({percent(api_rate)}); CPU per call {fmt(cpu['api'][0], 3)} ms "
        f"in the caller and {fmt(cpu['api'][1], 3)} ms in the tool process against "
        f"{fmt(cpu['before'][0], 3)} and {fmt(cpu['before'][1], 3)} before.",
        "",
        f"**Cost of the SDK** with in-memory exporters: p50 {fmt(p50['sdk'], 3)} ms "
        f"({percent(sdk_p50)} on before), {rate['sdk']:,.0f} calls/s ({percent(sdk_rate)}); "
        f"CPU per call {fmt(cpu['sdk'][0] - cpu['api'][0], 3)} ms more in the caller and "
        f"{fmt(cpu['sdk'][1] - cpu['api'][1], 3)} ms more in the tool process than with the "
        "API only (medians).",
        "",
        *noise_note(runs),
        "",
        "## Checks",
        "",
        *checks_section(runs, data["trees"]),
        "## Every run, in the order run",
        "",
        "| # | variant | rep | load (1 min) at its start | p50 ms | p99 ms | calls/s "
        "| caller CPU ms/call | tool CPU ms/call | calls in the window |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for index, run in enumerate(runs, 1):
        lines.append(
            f"| {index} | {run['variant']} | {run['rep']} | {run['load_1min']:.2f} "
            f"| {run['p50']:.3f} | {run['p99']:.3f} | {run['calls_per_s']:,.0f} "
            f"| {run['caller_cpu']:.3f} | {run['tool_cpu']:.3f} | {run['window_calls']:,} |"
        )
    lines.append("")
    return "\n".join(lines)

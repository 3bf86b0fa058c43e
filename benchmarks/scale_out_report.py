"""What a scale-out run concludes (``benchmarks.scale_out``): a caller's run summarised,
each scenario's record with its targets, and the Markdown report."""

import os
import statistics
from typing import Any

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
IDLE_CPU_TARGET = 5.0
"""Percent of one core the idle managers may use together."""
RATIO_TARGET = 0.9
JOIN_SECONDS_TARGET = 3.0
MESSAGES_PER_TOOL_TARGET = 3.0


def summarise_call_run(
    result: dict[str, Any], managers: int, messages: dict[str, Any]
) -> dict[str, Any]:
    """One caller process's run as reported: calls/s, CPU as % of one core, PUBLISH per call."""
    seconds = float(result["seconds"])
    ticks: dict[str, int] = result["ticks"]
    calls = int(result["calls"])

    def pct(label: str) -> float:
        return ticks.get(label, 0) / CLOCK_TICKS / seconds * 100

    all_calls = calls + result["failed"] + result["wrong"] + result["warmup_calls"]
    return {
        "idle_managers": managers,
        "seconds": seconds,
        "calls": calls,
        "failed": result["failed"],
        "wrong": result["wrong"],
        "calls_per_s": calls / seconds,
        "caller_cpu_ms_per_call": ticks.get("caller", 0) / CLOCK_TICKS * 1000 / calls
        if calls
        else None,
        "caller_cpu_pct": pct("caller"),
        "tool_cpu_pct": pct("tool"),
        "broker_cpu_pct": pct("broker"),
        "idle_managers_cpu_pct": pct("idle"),
        "missing_pids": result["missing_pids"],
        "broker_messages": messages,
        "calls_incl_warmup": all_calls,
        "publishes_per_call": messages["publish_total"] / all_calls if all_calls else None,
    }


def idle_result(settings: dict[str, Any], pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """The idle scenario's record: its (a)/(b) pairs, the median ratio, the targets."""
    ratio = statistics.median(p["ratio"] for p in pairs)
    idle_pcts = [p["with_idle"]["idle_managers_cpu_pct"] for p in pairs]
    idle_pct = statistics.median(idle_pcts)
    several = len(pairs) > 1
    return {
        "settings": settings,
        "pairs": pairs,
        "ratio": ratio,
        "targets": [
            target(
                f"{settings['idle_managers']} idle managers together"
                + (" (median of the repetitions)" if several else ""),
                f"< {IDLE_CPU_TARGET:g} % of one core",
                f"{idle_pct:.1f} %"
                + (f" ({min(idle_pcts):.1f}-{max(idle_pcts):.1f})" if several else ""),
                idle_pct < IDLE_CPU_TARGET,
            ),
            target(
                "caller's calls/s, with idle managers / alone"
                + (" (median of the repetitions)" if several else ""),
                f">= {RATIO_TARGET:g}",
                f"{ratio:.2f}"
                + (
                    f" ({min(p['ratio'] for p in pairs):.2f}-{max(p['ratio'] for p in pairs):.2f})"
                    if several
                    else ""
                ),
                ratio >= RATIO_TARGET,
            ),
        ],
    }


def join_result(settings: dict[str, Any], joins: list[dict[str, Any]]) -> dict[str, Any]:
    """The join scenario's record: every join, their summary, the targets."""
    fleet_size = settings["tools"]
    totals = [j["messages"]["publish_total"] for j in joins]
    over = sum(1 for total in totals if total > MESSAGES_PER_TOOL_TARGET * fleet_size)
    slowest = max(j["seconds"] if j["complete"] else float("inf") for j in joins)
    summary = {
        "max_seconds": slowest,
        "all_complete": all(j["complete"] for j in joins),
        "median_messages": statistics.median(totals),
        "max_messages": max(totals),
        "median_messages_per_tool": statistics.median(totals) / fleet_size,
        "max_messages_per_tool": max(totals) / fleet_size,
        "tools_cpu_s": sum(j["tools_cpu_s"] for j in joins),
        "other_managers_cpu_s": sum(j["other_managers_cpu_s"] for j in joins),
        "broker_cpu_s": sum(j["broker_cpu_s"] for j in joins),
        "all_quiet": all(j["quiet"] for j in joins),
    }
    return {
        "settings": settings,
        "joins": joins,
        "summary": summary,
        "targets": [
            target(
                f"every manager sees all {fleet_size:,} tools",
                f"within {JOIN_SECONDS_TARGET:g} s",
                f"max {fmt_seconds(slowest)}",
                slowest <= JOIN_SECONDS_TARGET,
            ),
            target(
                "broker messages per join",
                f"<= {MESSAGES_PER_TOOL_TARGET:g} x tools "
                f"({MESSAGES_PER_TOOL_TARGET * fleet_size:,.0f})",
                f"max {max(totals):,} ({max(totals) / fleet_size:.1f} x tools); "
                f"{over} of {len(totals)} joins above",
                over == 0,
            ),
        ],
    }


def target(what: str, goal: str, measured: str, met: bool) -> dict[str, Any]:
    return {"what": what, "target": goal, "measured": measured, "met": met}


def fmt_seconds(value: float) -> str:
    return "not all seen" if value == float("inf") else f"{value:.2f} s"


def targets_table(targets: list[dict[str, Any]]) -> list[str]:
    lines = ["| target | goal | measured | result |", "|---|---|---|---|"]
    for item in targets:
        verdict = "met" if item["met"] else "**not met**"
        lines.append(f"| {item['what']} | {item['target']} | {item['measured']} | {verdict} |")
    return lines


def idle_section(data: dict[str, Any]) -> list[str]:
    settings, pairs = data["settings"], data["pairs"]
    n = settings["idle_managers"]
    runs = [run for pair in pairs for run in (pair["alone"], pair["with_idle"])]

    def row(label: str, key: str, fmt: str) -> str:
        cells = [format(run[key], fmt) if run[key] is not None else "n/a" for run in runs]
        return f"| {label} | " + " | ".join(cells) + " |"

    heads = ["(a) alone", f"(b) with {n} idle managers"]
    if len(pairs) > 1:
        heads = [f"{head}, rep {i + 1}" for i in range(len(pairs)) for head in heads]
    ratios = ", ".join(f"{pair['ratio']:.2f}" for pair in pairs)
    ratio_text = (
        f"**{data['ratio']:.2f}**"
        if len(pairs) == 1
        else f"{ratios} (per repetition); median **{data['ratio']:.2f}**"
    )
    lines = [
        "## Idle managers",
        "",
        f"One tool process serving `echo` (no concurrency limit); a caller process with one "
        f"ToolManager keeps {settings['inflight']} `echo` calls in flight for 1 s of warm-up "
        f"and then a measured window of {settings['seconds']:g} s: (a) alone, (b) with {n} "
        "more manager processes connected, each initialised (it saw `echo`) and then idle. CPU "
        "is utime + stime from `/proc/<pid>/stat` at both ends of the window, as % of one core.",
        "",
        "| | " + " | ".join(heads) + " |",
        "|---|" + "---|" * len(heads),
        row("calls/s (successful)", "calls_per_s", ",.0f"),
        row("calls in the window", "calls", ","),
        row("failed", "failed", ","),
        row("wrong result", "wrong", ","),
        row("caller CPU ms per call", "caller_cpu_ms_per_call", ".3f"),
        row("caller CPU, % of one core", "caller_cpu_pct", ".0f"),
        row("tool process CPU, % of one core", "tool_cpu_pct", ".0f"),
        row("mosquitto CPU, % of one core", "broker_cpu_pct", ".0f"),
        row(f"{n} idle managers together, % of one core", "idle_managers_cpu_pct", ".1f"),
        row("PUBLISH at the broker per call (received + sent)", "publishes_per_call", ".1f"),
        "",
        f"Ratio of the caller's calls/s, (b) / (a): {ratio_text}. PUBLISH per call counts the "
        "caller's whole run (warm-up, window, its start and stop) from mosquitto's "
        "`$SYS/broker/publish/messages/*`.",
        "",
        *targets_table(data["targets"]),
        "",
    ]
    if not all(run["quiet"] for run in runs):
        lines += [
            "The broker did not go quiet around a run: its message counts are approximate.",
            "",
        ]
    return lines


def join_section(data: dict[str, Any]) -> list[str]:
    settings, summary = data["settings"], data["summary"]
    tools = settings["tools"]
    lines = [
        "## Managers joining a fleet",
        "",
        f"{settings['processes']} tool processes x {settings['tools_per_process']} tools "
        f"(`t{{proc}}_{{i}}(n: int)`), then {settings['joiners']} manager processes one after "
        "another; each starts once the previous one saw the whole fleet and the broker is quiet "
        "again, and stays connected. *Seconds*: from just before the joiner's connection "
        f"until `len(get_tool_names()) == {tools:,}` (polled every 10 ms; bound "
        f"{settings['join_limit_s']:g} s). *Messages*: PUBLISH packets mosquitto received and "
        "sent (`$SYS/broker/publish/messages/received` + `.../sent`, the $SYS reader's own "
        "deliveries taken out) from the quiet broker before the join until it was quiet again "
        "(unchanged for 2 updates). CPU: tool processes, the managers already connected, and "
        "mosquitto, over the same interval.",
        "",
        "| join | managers before | seconds | tools seen | PUBLISH received | PUBLISH sent "
        "| messages | per tool | tool procs CPU s | other managers CPU s | mosquitto CPU s "
        "| joiner CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for j in data["joins"]:
        m = j["messages"]
        quiet = "" if j["quiet"] else " (not quiet)"
        lines.append(
            f"| {j['join']} | {j['managers_before']} | {j['seconds']:.2f} | {j['tools_seen']:,} "
            f"| {m['publish_received']:,} | {m['publish_sent']:,} | {m['publish_total']:,}{quiet} "
            f"| {j['messages_per_tool']:.1f} | {j['tools_cpu_s']:.2f} "
            f"| {j['other_managers_cpu_s']:.2f} | {j['broker_cpu_s']:.2f} "
            f"| {j['joiner_cpu_s']:.2f} |"
        )
    lines += [
        "",
        "| summary | |",
        "|---|---|",
        f"| max seconds to see all {tools:,} tools | {fmt_seconds(summary['max_seconds'])} |",
        f"| messages per join, median / max | {summary['median_messages']:,.0f} / "
        f"{summary['max_messages']:,} |",
        f"| messages per join / tools, median / max | {summary['median_messages_per_tool']:.1f} "
        f"/ {summary['max_messages_per_tool']:.1f} |",
        f"| CPU of the tool processes, all joins | {summary['tools_cpu_s']:.2f} s |",
        f"| CPU of the managers already connected, all joins | "
        f"{summary['other_managers_cpu_s']:.2f} s |",
        f"| CPU of mosquitto, all joins | {summary['broker_cpu_s']:.2f} s |",
        "",
        *targets_table(data["targets"]),
        "",
    ]
    return lines


def build_markdown(data: dict[str, Any]) -> str:
    info = data["machine"]
    versions = info["versions"]
    lines = [
        "# Scale-out: idle managers and managers joining a fleet",
        "",
        f"`python -m benchmarks.scale_out --scenario {data['scenario']}`, {data['started']}, "
        f"{data['duration_s']:.0f} s; library at {data['revision']}. {info['cpu_count']} cores, "
        f"{info['platform']}, Python {versions['python']}, mosquitto {versions['mosquitto']} "
        f"(`set_tcp_nodelay true`, `sys_interval 1`), aiomqtt {versions['aiomqtt']}, "
        f"paho-mqtt {versions['paho-mqtt']}; load average {info['load_before'][0]:.2f} before, "
        f"{info['load_after'][0]:.2f} after. Every peer is its own process on 127.0.0.1.",
        "",
    ]
    if "idle" in data:
        lines += idle_section(data["idle"])
    if "join" in data:
        lines += join_section(data["join"])
    return "\n".join(lines)

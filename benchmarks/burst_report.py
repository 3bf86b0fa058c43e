"""The Markdown report of ``benchmarks.burst``: one row per broker configuration."""

from typing import Any

MEMORY_TARGET = 4096
"""Bytes per waiting call the manager may hold."""


def _num(value: Any, fmt: str = ",") -> str:
    return "n/a" if value is None else format(value, fmt)


def build_markdown(data: dict[str, Any]) -> str:
    cfg, machine = data["config"], data["machine"]
    lines = [
        f"## Burst: {data['label']}",
        "",
        f"{cfg['calls']:,} calls fired at once at one tool process (`--max-concurrency "
        f"{cfg['concurrency']}`), {cfg['seconds']:g} s each in the tool, {cfg['timeout']:g} s "
        f"timeout. `argentic_tools` from `{data['library']}`. {machine['cpu_count']} cores, "
        f"mosquitto {machine['versions']['mosquitto']}, Python {machine['versions']['python']}; "
        f"started {data['started']}.",
        "",
        "| broker config | inflight / queue | succeeded | timed out | other | wall | "
        "held in manager (peak) | bytes per waiting call (tracemalloc) | RSS growth per "
        "waiting call |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in data["runs"]:
        mem = run["memory"]
        inflight = run["max_inflight_messages"].replace(" (default)", "")
        queued = run["max_queued_messages"].replace(" (default)", "")
        lines.append(
            f"| {run['config']} | {inflight} / {queued} | {run['succeeded']:,} | "
            f"{run['timed_out']:,} | {run['other']:,} | {run['wall_s']:.1f} s | "
            f"{_num(run['peak_held_in_manager'])} | "
            f"{_num(mem.get('bytes_per_waiting_call'), ',.0f')} | "
            f"{_num(mem.get('rss_bytes_per_waiting_call'), ',.0f')} |"
        )
    lines += [
        "",
        "Memory: the manager runs in a fresh process per configuration and is measured "
        "once every call has started and none has returned (all of them waiting for a "
        "result). `tracemalloc` is started just before the first call; the bytes it traces "
        "then (allocated since and still alive: the callers' tasks and coroutines, futures, "
        "pending-call records, encoded tasks, the MQTT client's outgoing messages) are "
        "divided by the calls waiting. RSS growth is VmRSS then minus VmRSS just before the "
        "burst, "
        + (
            "less tracemalloc's own bookkeeping (approximate: it also carries allocator "
            "slack and what tracemalloc's bookkeeping costs beyond what it reports; "
            "`--memory rss` measures RSS with tracemalloc off)."
            if cfg.get("memory") == "tracemalloc"
            else "with tracemalloc off (`--memory rss`)."
        )
        + f" Target: under {MEMORY_TARGET:,} bytes per waiting call.",
        "",
    ]
    for run in data["runs"]:
        mem = run["memory"]
        traced = mem.get("traced_bytes")
        parts = ", ".join(f"{k} {v / 1024:,.0f} KiB" for k, v in mem.get("by_package", {}).items())
        where = "" if traced is None else f"traced {traced / 1024:,.0f} KiB ({parts}); "
        lines.append(
            f"- {run['config']}: {mem.get('waiting', 0):,} waiting at "
            f"{mem.get('at_s', 0):.2f} s ({_num(mem.get('held_in_manager'))} of them held in "
            f"the manager); {where}"
            f"outcomes {run['outcomes']}; last success at {_num(run['last_success_s'], '.1f')} s; "
            f"mosquitto logged {run['broker_drop_log_lines']} 'dropped' lines; the tool "
            f"advertised max_concurrency {run['advertised_max_concurrency']}."
        )
    for run in data["runs"]:
        conf = run["mosquitto_conf"].strip().replace("\n", "`, `")
        lines.append(f"- {run['config']} mosquitto.conf: `{conf}`")
    return "\n".join(lines) + "\n"

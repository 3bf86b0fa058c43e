"""The scenarios: each returns one result record for one implementation and repetition.

A record is ``{"scenario", "impl", "rep", "calls", "ok", "failed", "error", "metrics"}``;
``failed`` counts every call that timed out, failed or came back wrong, and a tool
that never became visible in the registration scenario. Where each call is timed on its
own, the record also keeps every call's latency in ms, in call order, rounded to
``LATENCY_DIGITS`` decimals (a failed call's time included): ``latencies_ms`` in (a),
``typed_latencies_ms`` and ``empty_latencies_ms`` in (f).
"""

import asyncio
import gc
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

from argentic_tools._protocol.validation import SchemaValidator
from benchmarks._impls import Impl, Ours
from benchmarks.harness.procs import Children
from benchmarks.harness.stats import median, percentile

LATENCY_DIGITS = 3  # µs resolution: finer than the floor's ~0.2 ms, coarser than timer noise


def raw_latencies(latencies: list[float]) -> list[float]:
    """Per-call latencies as kept in the JSON output: ms rounded to ``LATENCY_DIGITS``."""
    return [round(value, LATENCY_DIGITS) for value in latencies]


@dataclass
class Settings:
    sequential: int
    calls: int
    batch: int
    tools: int
    inflight: int
    inflight_seconds: float
    many: int
    call_timeout: float
    storm_limit: float


@dataclass
class Context:
    url: str
    port: int
    prefix: str
    children: Children
    settings: Settings
    ours: Ours | None = None
    ours_p50_ms: dict[int, float] = field(default_factory=dict)


def record(
    scenario: str, impl: str, rep: int, calls: int, ok: int, metrics: dict[str, Any]
) -> dict[str, Any]:
    return {
        "scenario": scenario,
        "impl": impl,
        "rep": rep,
        "calls": calls,
        "ok": ok,
        "failed": calls - ok,
        "error": None,
        "metrics": metrics,
    }


def failed_record(scenario: str, impl: str, rep: int, calls: int, error: str) -> dict[str, Any]:
    out = record(scenario, impl, rep, calls, 0, {})
    out["error"] = error
    return out


async def sequential(impl: Impl, rep: int, n: int, tool: str = "echo") -> dict[str, Any]:
    """(a) ``n`` calls one after the other: latency percentiles and every call's latency, ms."""
    gc.collect()
    latencies: list[float] = []
    ok = 0
    for _ in range(n):
        started = time.perf_counter()
        good = await impl.call(tool)
        latencies.append((time.perf_counter() - started) * 1000)
        ok += good
    metrics = {
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "p99_ms": percentile(latencies, 99),
        "mean_ms": sum(latencies) / len(latencies),
        "max_ms": max(latencies),
    }
    out = record("a", impl.name, rep, n, ok, metrics)
    out["latencies_ms"] = raw_latencies(latencies)
    return out


async def throughput(
    scenario: str, impl: Impl, rep: int, total: int, batch: int, tools: list[str]
) -> dict[str, Any]:
    """(b)/(c) ``total`` calls in concurrent batches of ``batch``: successful calls per second."""
    gc.collect()
    ok = 0
    batches = max(1, total // batch)
    started = time.perf_counter()
    for k in range(batches):
        names = [tools[(k * batch + j) % len(tools)] for j in range(batch)]
        ok += await impl.batch(names)
    elapsed = time.perf_counter() - started
    calls = batches * batch
    return record(
        scenario, impl.name, rep, calls, ok, {"calls_per_s": ok / elapsed, "elapsed_s": elapsed}
    )


async def inflight(ctx: Context, rep: int, prefix: str) -> dict[str, Any]:
    """(d) ``inflight`` calls to ``wait`` at once, from a fresh manager process."""
    s = ctx.settings
    child = ctx.children.python(
        f"inflight-{rep}",
        "benchmarks.inflight",
        "--broker",
        ctx.url,
        "--topic-prefix",
        prefix,
        "--calls",
        str(s.inflight),
        "--seconds",
        str(s.inflight_seconds),
        "--timeout",
        str(max(60.0, s.call_timeout)),
    )
    try:
        await asyncio.to_thread(child.finish, 300)
    finally:
        ctx.children.stop(child)
    lines = [ln for ln in child.log_tail(200).splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"the inflight worker printed no result: {child.log_tail(8)}")
    data = json.loads(lines[-1])
    metrics = {
        "wall_s": data["wall_s"],
        "rss_before_mib": data["rss_before_kib"] / 1024,
        "rss_peak_mib": data["rss_peak_kib"] / 1024,
        "vm_hwm_mib": data["vm_hwm_kib"] / 1024,
        "bytes_per_pending": data["bytes_per_pending"],
        "peak_pending": data["peak_pending"],
        "errors": data["errors"],
    }
    return record("d", "ours", rep, data["calls"], data["ok"], metrics)


async def registration_storm(ctx: Context, rep: int) -> dict[str, Any]:
    """(e) one process with ``many`` tools: time until all are visible and the last answers."""
    s = ctx.settings
    prefix = f"{ctx.prefix}-storm{rep}"
    impl = Ours("ours", ctx.url, prefix, s.call_timeout)
    await impl.open()
    assert impl.manager is not None
    manager = impl.manager
    child = None
    try:
        gc.collect()
        child = ctx.children.python(
            f"storm-{rep}",
            "benchmarks.ours_tool",
            "--many",
            str(s.many),
            "--broker",
            ctx.url,
            "--topic-prefix",
            prefix,
        )
        started = child.started_at
        deadline = started + s.storm_limit
        visible_s = math.nan
        while True:
            if len(manager.tools_by_name) >= s.many:
                visible_s = time.perf_counter() - started
                break
            if not child.alive():
                raise RuntimeError(f"the tool process exited: {child.log_tail(8)}")
            if time.perf_counter() > deadline:
                break
            await asyncio.sleep(0.005)
        seen = len(manager.tools_by_name)
        last = f"t{s.many - 1}"
        ok = False
        call_error: str | None = None
        if last in manager.tools_by_name:
            patience = max(1.0, deadline - time.perf_counter())
            result = await manager.execute_tool(last, {"message": "x"}, timeout=patience)
            ok = result.ok and result.result == "x"
            if not ok:
                call_error = str(getattr(result, "error", None) or f"returned {result.result!r}")
        else:
            call_error = f"{last} never registered"
        callable_s = time.perf_counter() - started if ok else math.nan
        clock = time.perf_counter()
        prompt = manager.generate_tool_descriptions_for_prompt()
        prompt_ms = (time.perf_counter() - clock) * 1000
        clock = time.perf_counter()
        manager.export_tools("openai")
        openai_ms = (time.perf_counter() - clock) * 1000
        clock = time.perf_counter()
        manager.export_tools("openai")
        openai_cached_ms = (time.perf_counter() - clock) * 1000
        metrics = {
            "tools": s.many,
            "tools_seen": seen,
            "visible_s": visible_s,
            "callable_s": callable_s,
            "prompt_ms": prompt_ms,
            "prompt_bytes": len(prompt.encode()),
            "openai_ms": openai_ms,
            "openai_cached_ms": openai_cached_ms,
            "call_error": call_error,
        }
        # Failed: each tool that never showed up, plus the call to the last one.
        out = record("e", "ours", rep, s.many + 1, seen + int(ok), metrics)
        out["failed"] = (s.many - seen) + (0 if ok else 1)
        return out
    finally:
        if child is not None:
            await asyncio.to_thread(ctx.children.stop, child, 10.0)
        await impl.close()


TYPED_ARGUMENTS = {"name": "n", "count": 3, "ratio": 0.5, "flag": True, "tags": ["a", "b"]}


def validator_us(validator: SchemaValidator, arguments: dict[str, Any], n: int = 20000) -> float:
    """Microseconds per ``problems(arguments)``: what the manager does before each publish."""
    assert validator.problems(arguments) == []
    started = time.perf_counter()
    for _ in range(n):
        validator.problems(arguments)
    return (time.perf_counter() - started) / n * 1e6


async def validation(ctx: Context, rep: int) -> dict[str, Any]:
    """(f) round trip of a 5-field tool vs a no-argument one, and the manager's validator cost."""
    impl = ctx.ours
    assert impl is not None
    assert impl.manager is not None
    n = ctx.settings.sequential
    gc.collect()
    typed: list[float] = []
    empty: list[float] = []
    ok = 0
    block = 50
    for _ in range(max(1, n // block)):
        for name, arguments, bucket in (("typed", TYPED_ARGUMENTS, typed), ("empty", {}, empty)):
            for _ in range(block):
                started = time.perf_counter()
                ok += await impl.call_with(name, arguments)
                bucket.append((time.perf_counter() - started) * 1000)
    infos = {info.name: info for info in impl.manager.get_available_tools()}
    echo_us = validator_us(SchemaValidator(infos["echo"].input_schema), {"message": "m12345"})
    typed_us = validator_us(SchemaValidator(infos["typed"].input_schema), TYPED_ARGUMENTS)
    empty_us = validator_us(SchemaValidator(infos["empty"].input_schema), {})
    reference = ctx.ours_p50_ms.get(rep)
    if reference is None:  # scenario (a) was not run: measure the echo round trip here
        reference = (await sequential(impl, rep, min(n, 200)))["metrics"]["p50_ms"]
    typed_p50 = median(typed)
    empty_p50 = median(empty)
    metrics = {
        "typed_p50_ms": typed_p50,
        "empty_p50_ms": empty_p50,
        "e2e_delta_ms": typed_p50 - empty_p50,
        "e2e_delta_pct": 100 * (typed_p50 - empty_p50) / empty_p50,
        "echo_p50_ms": reference,
        "validator_echo_us": echo_us,
        "validator_typed_us": typed_us,
        "validator_empty_us": empty_us,
        "validator_echo_pct": 100 * echo_us / (reference * 1000),
        "validator_typed_pct": 100 * typed_us / (typed_p50 * 1000),
    }
    calls = len(typed) + len(empty)
    out = record("f", "ours", rep, calls, ok, metrics)
    out["typed_latencies_ms"] = raw_latencies(typed)
    out["empty_latencies_ms"] = raw_latencies(empty)
    return out

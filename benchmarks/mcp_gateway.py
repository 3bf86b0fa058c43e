"""The MCP gateway against a plain MCP server: ``python -m benchmarks.mcp_gateway``.

Same machine, same run, interleaved, the official MCP client (``mcp`` 2.3, streamable
HTTP, protocol 2026-07-28) calls the same tools two ways:

  gateway   MCP client -> ``argentic-tools mcp serve --http`` -> MQTT (mosquitto) ->
            an argentic-tools tool process (``benchmarks.ours_tool``)
  plain     MCP client -> an ``MCPServer`` of the MCP SDK serving the tools itself over
            streamable HTTP (this module with ``--plain-server``), run as the SDK runs
            it: uvicorn's defaults (httptools when installed) on asyncio's loop; the
            gateway runs on uvloop when installed (the ``mcp`` extra brings it)

Two tools, each measured per repetition (``--reps``, 3) on both, in alternating order:

  echo    returns its message: ``--sequential`` (300) calls one at a time (p50, p99),
          then ``--calls`` (1,000) with ``--in-flight`` (100) at a time (calls/s)
  image   returns an ``Image`` of ``--image-bytes`` (750,000) random bytes, whose base64
          is 1,000,000 bytes: a 1 MB result, the most a call carries within the bus's
          1 MiB payload limit: ``--image-sequential`` (50) calls one at a time, then
          ``--image-calls`` (300) with ``--in-flight`` at a time. Each result is checked
          (an image block with all of the bytes).

Then, with a second tool process serving 1,000 more tools (``ours_tool --many 1000``),
the time an MCP client takes to list the fleet through the gateway: the median of 20
``tools/list`` per repetition.

Targets: the gateway's p50 within 1.3x the plain server's; its throughput at 100 in
flight at least the plain server's; 1,000 tools listed in under 100 ms. Ratios are taken
per repetition (the two ran back to back), then their median; cells are ``median
(min-max)`` over the repetitions. Prints a Markdown report and writes it to
``--results`` (``benchmarks/results/mcp_gateway.md``).
"""

import argparse
import asyncio
import base64
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto, free_port
from benchmarks.harness.machine import machine_info, package_version
from benchmarks.harness.measure import cpu_ticks
from benchmarks.harness.procs import Children
from benchmarks.harness.results import RESULTS_DIR, stamped, write_report
from benchmarks.harness.stats import fmt_range, percentile

RESULTS = RESULTS_DIR / "mcp_gateway.md"
IMPLS = ("plain", "gateway")
LIST_REPEATS = 20


def plain_server(port: int) -> None:
    """Serve ``echo`` and ``image`` with the MCP SDK's own server over streamable HTTP.

    Run as the SDK runs it (``MCPServer.run``): uvicorn with its defaults, which parse
    HTTP with httptools when it is installed, on asyncio's loop.
    """
    from mcp.server.mcpserver import Image, MCPServer

    from benchmarks.ours_tool import png_bytes

    server = MCPServer("plain")

    @server.tool()
    async def echo(message: str) -> str:
        """Return the message unchanged."""
        return message

    @server.tool()
    async def image(size: int) -> Image:
        """Return an image of ``size`` bytes."""
        return Image(data=png_bytes(size), format="png")

    server.run("streamable-http", host="127.0.0.1", port=port)


@dataclass
class Case:
    """One tool measured on both servers."""

    name: str
    tool: str
    arguments: Callable[[int], dict[str, Any]]
    check: Callable[[Any, int], bool]
    sequential: int
    calls: int


@dataclass
class Rows:
    """Per repetition figures of one case on one server."""

    p50: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)
    rate: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    failed: list[float] = field(default_factory=list)


def _echoed(result: Any, i: int) -> bool:
    return not result.is_error and result.content[0].text == f"m{i}"


def _image_check(size: int) -> Callable[[Any, int], bool]:
    expected = len(base64.b64encode(b"\0" * size))

    def check(result: Any, i: int) -> bool:
        if result.is_error or not result.content:
            return False
        block = result.content[0]
        return block.type == "image" and len(block.data) == expected

    return check


def cases(args: argparse.Namespace) -> list[Case]:
    return [
        Case("echo", "echo", lambda i: {"message": f"m{i}"}, _echoed, args.sequential, args.calls),
        Case(
            "image",
            "image",
            lambda i: {"size": args.image_bytes},
            _image_check(args.image_bytes),
            args.image_sequential,
            args.image_calls,
        ),
    ]


async def call_once(client: Any, url: str, case: Case, i: int, failed: int) -> bool:
    """Call ``case``'s tool; False when the call failed (said when it is the first)."""
    try:
        result = await client.call_tool(case.tool, case.arguments(i))
        if case.check(result, i):
            return True
        error = f"wrong result {str(result)[:200]}"
    except Exception as exc:  # counted as failed, not fatal
        error = repr(exc)
    if not failed:
        cli.log(f"{case.name} call {i} at {url} failed: {error}")
    return False


async def sequential(url: str, case: Case) -> tuple[list[float], int]:
    from mcp import Client

    times = []
    failed = 0
    async with Client(url) as client:
        await client.call_tool(case.tool, case.arguments(0))
        for i in range(case.sequential):
            started = time.perf_counter()
            failed += not await call_once(client, url, case, i, failed)
            times.append((time.perf_counter() - started) * 1000)
    return times, failed


async def concurrent(url: str, case: Case, in_flight: int) -> tuple[float, int]:
    from mcp import Client

    failed = 0
    async with Client(url) as client:
        await client.call_tool(case.tool, case.arguments(0))
        gate = asyncio.Semaphore(in_flight)

        async def one(i: int) -> None:
            nonlocal failed
            async with gate:
                failed += not await call_once(client, url, case, i, failed)

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(case.calls)))
        seconds = time.perf_counter() - started
    return (case.calls - failed) / seconds, failed


async def listing(
    url: str, expected: int, pid: int | None, repeats: int = LIST_REPEATS
) -> tuple[float, float, float, int]:
    """Median ms of ``repeats`` listings, then the server's and the client's CPU ms per one."""
    from mcp import Client

    async with Client(url) as client:
        deadline = time.monotonic() + 60
        count = 0
        while time.monotonic() < deadline:
            count = len((await client.list_tools(cache_mode="bypass")).tools)
            if count >= expected:
                break
            await asyncio.sleep(0.2)
        times = []
        server, client_cpu = cpu_ms([pid]), time.process_time()
        for _ in range(repeats):
            started = time.perf_counter()
            tools = (await client.list_tools(cache_mode="bypass")).tools
            times.append((time.perf_counter() - started) * 1000)
            count = len(tools)
        server = (cpu_ms([pid]) - server) / repeats
        client_cpu = (time.process_time() - client_cpu) * 1000 / repeats
    return statistics.median(times), server, client_cpu, count


async def listed(url: str) -> int:
    """How many tools ``url`` lists once ``echo`` and ``image`` are among them."""
    from mcp import Client

    async with Client(url) as client:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            names = {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}
            if {"echo", "image"} <= names:
                return len(names)
            await asyncio.sleep(0.2)
    raise TimeoutError(f"echo and image never listed at {url}")


def run(args: argparse.Namespace) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    prefix = f"mcpb{uuid.uuid4().hex[:8]}"
    gateway_port, plain_port = free_port(), free_port()
    urls = {
        "gateway": f"http://127.0.0.1:{gateway_port}/mcp",
        "plain": f"http://127.0.0.1:{plain_port}/mcp",
    }
    measured = cases(args)
    rows = {case.name: {name: Rows() for name in IMPLS} for case in measured}
    lists: dict[str, list[float]] = {"ms": [], "server": [], "client": []}
    with Mosquitto(binary) as broker, Children() as children:
        connection = ["--broker", broker.url, "--topic-prefix", prefix]
        tool = children.python(
            "tool", "benchmarks.ours_tool", *connection, "--log-level", "WARNING"
        )
        gateway = children.python(
            "gateway",
            "argentic_tools",
            "mcp",
            "serve",
            "--http",
            f"127.0.0.1:{gateway_port}",
            *connection,
        )
        plain = children.python(
            "plain", "benchmarks.mcp_gateway", "--plain-server", str(plain_port)
        )
        gateway.wait_listening(gateway_port, timeout=30)
        plain.wait_listening(plain_port, timeout=30)
        base = cli.run_async(listed(urls["gateway"]))
        servers = {"gateway": [gateway.pid, tool.pid, broker.pid], "plain": [plain.pid]}
        for rep in range(args.reps):
            order = IMPLS if rep % 2 == 0 else tuple(reversed(IMPLS))
            for case in measured:
                for name in order:
                    row = rows[case.name][name]
                    measure(row, urls[name], case, args.in_flight, servers[name])
                    cli.log(
                        f"rep {rep + 1} {case.name} {name}: p50 {row.p50[-1]:.2f} ms, "
                        f"p99 {row.p99[-1]:.2f} ms, {row.rate[-1]:,.0f} calls/s, "
                        f"{row.cpu[-1]:.2f} ms CPU per call, {row.failed[-1]:.0f} failed"
                    )
        children.python(
            "many",
            "benchmarks.ours_tool",
            *connection,
            "--many",
            "1000",
            "--log-level",
            "WARNING",
        )
        count = 0
        for rep in range(args.reps):
            ms, server, client, count = cli.run_async(
                listing(urls["gateway"], base + 1000, gateway.pid)
            )
            for key, value in (("ms", ms), ("server", server), ("client", client)):
                lists[key].append(value)
            cli.log(
                f"rep {rep + 1} tools/list of {count} tools: {ms:.1f} ms, CPU {server:.1f} ms "
                f"in the gateway, {client:.1f} ms in the client"
            )
        info = machine_info(binary)
    text = report(rows, measured, lists, count, info, args)
    text = stamped(text)  # printed as written
    print(text)
    if args.results != "-":
        write_report(Path(args.results), text)
    return 0


def cpu_ms(pids: list[int | None]) -> float:
    """CPU time the processes ``pids`` used so far, in ms (a process not started: none)."""
    ticks = sum(cpu_ticks(pid) or 0 for pid in pids if pid is not None)
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")


def measure(row: Rows, url: str, case: Case, in_flight: int, pids: list[int | None]) -> None:
    times, failed = cli.run_async(sequential(url, case))
    before = cpu_ms(pids)
    rate, failed_concurrent = cli.run_async(concurrent(url, case, in_flight))
    row.cpu.append((cpu_ms(pids) - before) / case.calls)
    row.p50.append(statistics.median(times))
    row.p99.append(percentile(times, 99))
    row.rate.append(rate)
    row.failed.append(failed + failed_concurrent)


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "python -m benchmarks.mcp_gateway", "The MCP gateway against a plain MCP server."
    )
    parser.add_argument("--reps", type=cli.positive_int, default=3)
    parser.add_argument("--sequential", type=cli.positive_int, default=300)
    parser.add_argument("--calls", type=cli.positive_int, default=1000)
    parser.add_argument("--in-flight", type=cli.positive_int, default=100)
    parser.add_argument("--image-bytes", type=cli.positive_int, default=750_000)
    parser.add_argument("--image-sequential", type=cli.positive_int, default=50)
    parser.add_argument("--image-calls", type=cli.positive_int, default=300)
    parser.add_argument("--results", default=str(RESULTS), help="report file; - for none")
    cli.add_mosquitto_argument(parser)
    parser.add_argument("--plain-server", type=int, default=None, help=argparse.SUPPRESS)
    args = cli.parse(parser, argv)
    if args.plain_server is not None:
        plain_server(args.plain_server)
        return 0
    return cli.exit_status(lambda: run(args))


def _ratios(case: dict[str, Rows], key: str) -> list[float]:
    pairs = zip(getattr(case["gateway"], key), getattr(case["plain"], key), strict=True)
    return [gateway / plain for gateway, plain in pairs]


def _verdict(ok: bool) -> str:
    return "met" if ok else "not met"


def report(
    rows: dict[str, dict[str, Rows]],
    measured: list[Case],
    lists: dict[str, list[float]],
    listed_count: int,
    info: dict[str, Any],
    args: argparse.Namespace,
) -> str:
    from argentic_tools.mcp.gateway.http_stack import describe

    versions = info["versions"]
    lines = [
        "# MCP gateway against a plain MCP server",
        "",
        f"`python -m benchmarks.mcp_gateway`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())};"
        f" {info['cpu_count']} cores, load {info['load_before'][0]:.1f} at the start, Python "
        f"{versions['python']}, mosquitto {versions['mosquitto']}, mcp "
        f"{package_version('mcp')}, gateway HTTP: {describe()}. Cells are median (min-max) of "
        f"{args.reps} interleaved repetitions; ratios (gateway / plain) are taken per "
        "repetition, then their median (min-max).",
        "",
        "| tool | measure | plain MCP server | gateway -> MQTT -> tool | ratio | target | result |",
        "|---|---|---|---|---|---|---|",
    ]
    for case in measured:
        pair = rows[case.name]
        plain, gateway = pair["plain"], pair["gateway"]
        p50 = _ratios(pair, "p50")
        p99 = _ratios(pair, "p99")
        rate = _ratios(pair, "rate")
        cpu = _ratios(pair, "cpu")
        lines += [
            f"| {case.name} | p50 latency, {case.sequential} sequential calls, ms | "
            f"{fmt_range(plain.p50)} | {fmt_range(gateway.p50)} | {fmt_range(p50)} x | "
            f"<= 1.3 x | {_verdict(statistics.median(p50) <= 1.3)} |",
            f"| {case.name} | p99 latency, ms | {fmt_range(plain.p99)} | "
            f"{fmt_range(gateway.p99)} | {fmt_range(p99)} x | | |",
            f"| {case.name} | calls/s, {case.calls} calls, {args.in_flight} in flight | "
            f"{fmt_range(plain.rate, 0)} | {fmt_range(gateway.rate, 0)} | {fmt_range(rate)} x | "
            f">= 1 x | {_verdict(statistics.median(rate) >= 1)} |",
            f"| {case.name} | server-side CPU per call at {args.in_flight} in flight, ms | "
            f"{fmt_range(plain.cpu)} | {fmt_range(gateway.cpu)} | {fmt_range(cpu)} x | | |",
            f"| {case.name} | failed calls | {sum(plain.failed):.0f} | "
            f"{sum(gateway.failed):.0f} | | 0 | |",
        ]
    lines += [
        f"| fleet | `tools/list` of {listed_count} tools, median of {LIST_REPEATS}, ms | | "
        f"{fmt_range(lists['ms'], 1)} | | < 100 ms | "
        f"{_verdict(statistics.median(lists['ms']) < 100)} |",
        f"| fleet | CPU per listing in the gateway, ms | | {fmt_range(lists['server'], 1)} | | | |",
        f"| fleet | CPU per listing in the MCP client, ms | | {fmt_range(lists['client'], 1)} "
        "| | | |",
    ]
    encoded = len(base64.b64encode(bytes(args.image_bytes)))
    lines += [
        "",
        f"image: an `Image` of {args.image_bytes:,} bytes, {encoded:,} bytes of base64 in "
        "the result. The plain server runs as `MCPServer.run` does (uvicorn's defaults on "
        "asyncio's loop). Server-side CPU: the plain server's process; for the gateway, the "
        "gateway's, the tool process's and mosquitto's. CPU times come from /proc and depend "
        "less on the machine's load than the wall-clock figures.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

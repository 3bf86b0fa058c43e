"""The MCP gateway against a plain MCP server: ``python -m benchmarks.mcp_gateway``.

Same machine, same run, interleaved, the official MCP client (``mcp`` 2.3, streamable
HTTP, protocol 2026-07-28) calls a trivial ``echo`` tool two ways:

  gateway   MCP client -> ``argentic-tools mcp serve --http`` -> MQTT (mosquitto) ->
            an argentic-tools tool process (``benchmarks.ours_tool``)
  plain     MCP client -> an ``MCPServer`` of the MCP SDK serving ``echo`` itself over
            streamable HTTP (this module with ``--plain-server``)

Per repetition (``--reps``, 3): ``--sequential`` (300) calls one at a time (p50, p99),
then ``--calls`` (1,000) calls with 100 in flight (calls/s). Then, with a second tool
process serving 1,000 more tools (``ours_tool --many 1000``), the time an MCP client
takes to list the fleet through the gateway (median of 20 ``tools/list``).

Targets: the gateway's p50 within 1.3x the plain server's; its throughput at 100 in
flight at least the plain server's; 1,000 tools listed in under 100 ms. Prints a
Markdown report and writes it to ``--results`` (``benchmarks/results/mcp_gateway.md``).
"""

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto, free_port
from benchmarks.harness.machine import machine_info
from benchmarks.harness.procs import Children
from benchmarks.harness.results import RESULTS_DIR, write_report

RESULTS = RESULTS_DIR / "mcp_gateway.md"


def plain_server(port: int) -> None:
    """Serve ``echo`` with the MCP SDK's own server over streamable HTTP."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("plain")

    @server.tool()
    async def echo(message: str) -> str:
        """Return the message unchanged."""
        return message

    server.run("streamable-http", host="127.0.0.1", port=port)


async def sequential(url: str, calls: int) -> list[float]:
    from mcp import Client

    times = []
    async with Client(url) as client:
        await client.call_tool("echo", {"message": "warm"})
        for i in range(calls):
            started = time.perf_counter()
            result = await client.call_tool("echo", {"message": f"m{i}"})
            times.append((time.perf_counter() - started) * 1000)
            assert not result.is_error, result
    return times


async def concurrent(url: str, calls: int, in_flight: int) -> tuple[float, int]:
    from mcp import Client

    failed = 0
    async with Client(url) as client:
        await client.call_tool("echo", {"message": "warm"})
        gate = asyncio.Semaphore(in_flight)

        async def one(i: int) -> None:
            nonlocal failed
            async with gate:
                try:
                    result = await client.call_tool("echo", {"message": f"m{i}"})
                    failed += result.is_error
                except Exception:
                    failed += 1

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        seconds = time.perf_counter() - started
    return calls / seconds, failed


async def listing(url: str, expected: int, repeats: int = 20) -> tuple[float, int]:
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
        for _ in range(repeats):
            started = time.perf_counter()
            tools = (await client.list_tools(cache_mode="bypass")).tools
            times.append((time.perf_counter() - started) * 1000)
            count = len(tools)
    return statistics.median(times), count


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def wait_listed(url: str, name: str) -> None:
    from mcp import Client

    async with Client(url) as client:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            names = {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}
            if name in names:
                return
            await asyncio.sleep(0.2)
    raise TimeoutError(f"{name} never listed at {url}")


def run(args: argparse.Namespace) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    prefix = f"mcpb{uuid.uuid4().hex[:8]}"
    gateway_port, plain_port = free_port(), free_port()
    urls = {
        "gateway": f"http://127.0.0.1:{gateway_port}/mcp",
        "plain": f"http://127.0.0.1:{plain_port}/mcp",
    }
    rows: dict[str, dict[str, list[float]]] = {
        name: {"p50": [], "p99": [], "rate": [], "failed": []} for name in urls
    }
    with Mosquitto(binary) as broker, Children() as children:
        connection = ["--broker", broker.url, "--topic-prefix", prefix]
        children.python("tool", "benchmarks.ours_tool", *connection, "--log-level", "WARNING")
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
        cli.run_async(wait_listed(urls["gateway"], "echo"))
        for rep in range(args.reps):
            order = list(urls) if rep % 2 == 0 else list(reversed(urls))
            for name in order:
                times = cli.run_async(sequential(urls[name], args.sequential))
                rate, failed = cli.run_async(concurrent(urls[name], args.calls, args.in_flight))
                rows[name]["p50"].append(statistics.median(times))
                rows[name]["p99"].append(p(times, 0.99))
                rows[name]["rate"].append(rate)
                rows[name]["failed"].append(failed)
                cli.log(
                    f"rep {rep + 1} {name}: p50 {statistics.median(times):.2f} ms, "
                    f"{rate:,.0f} calls/s, {failed} failed"
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
        list_ms, listed = cli.run_async(listing(urls["gateway"], 1000 + 5))
        info = machine_info(binary)
    text = report(rows, list_ms, listed, info, args)
    print(text)
    if args.results != "-":
        write_report(Path(args.results), text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "python -m benchmarks.mcp_gateway", "The MCP gateway against a plain MCP server."
    )
    parser.add_argument("--reps", type=cli.positive_int, default=3)
    parser.add_argument("--sequential", type=cli.positive_int, default=300)
    parser.add_argument("--calls", type=cli.positive_int, default=1000)
    parser.add_argument("--in-flight", type=cli.positive_int, default=100)
    parser.add_argument("--results", default=str(RESULTS), help="report file; - for none")
    cli.add_mosquitto_argument(parser)
    parser.add_argument("--plain-server", type=int, default=None, help=argparse.SUPPRESS)
    args = cli.parse(parser, argv)
    if args.plain_server is not None:
        plain_server(args.plain_server)
        return 0
    return cli.exit_status(lambda: run(args))


def _ratio(rows: dict[str, dict[str, list[float]]], key: str) -> float:
    pairs = zip(rows["gateway"][key], rows["plain"][key], strict=True)
    return statistics.median(gateway / plain for gateway, plain in pairs)


def report(
    rows: dict[str, dict[str, list[float]]],
    list_ms: float,
    listed: int,
    info: dict[str, Any],
    args: argparse.Namespace,
) -> str:
    med = {name: {k: statistics.median(v) for k, v in row.items()} for name, row in rows.items()}
    ratio_p50 = _ratio(rows, "p50")
    ratio_rate = _ratio(rows, "rate")
    versions = info["versions"]
    lines = [
        "# MCP gateway against a plain MCP server",
        "",
        f"`python -m benchmarks.mcp_gateway`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())};"
        f" {info['cpu_count']} cores, Python {versions['python']}, mosquitto "
        f"{versions['mosquitto']}, mcp 2.3, load {info['load_before'][0]:.1f}. Medians of "
        f"{args.reps} interleaved repetitions; ratios per repetition, then their median.",
        "",
        "| measure | plain MCP server | gateway -> MQTT -> tool | ratio | target | result |",
        "|---|---|---|---|---|---|",
        f"| p50 latency, {args.sequential} sequential calls | {med['plain']['p50']:.2f} ms | "
        f"{med['gateway']['p50']:.2f} ms | {ratio_p50:.2f} x | <= 1.3 x | "
        f"{'met' if ratio_p50 <= 1.3 else 'not met'} |",
        f"| p99 latency | {med['plain']['p99']:.2f} ms | {med['gateway']['p99']:.2f} ms | | | |",
        f"| calls/s, {args.calls} calls, {args.in_flight} in flight | "
        f"{med['plain']['rate']:,.0f} | {med['gateway']['rate']:,.0f} | {ratio_rate:.2f} x | "
        f">= 1 x | {'met' if ratio_rate >= 1 else 'not met'} |",
        f"| failed calls | {sum(rows['plain']['failed']):.0f} | "
        f"{sum(rows['gateway']['failed']):.0f} | | 0 | |",
        f"| `tools/list` of the fleet ({listed} tools), median of 20 | | {list_ms:.1f} ms | | "
        f"< 100 ms | {'met' if list_ms < 100 else 'not met'} |",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

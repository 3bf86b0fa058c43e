"""What the dashboard counts of a burst of calls while many pages watch it.

    python scripts/dashboard_burst.py                   # 2,000 calls, 20 pages, 3 runs
    python scripts/dashboard_burst.py --calls 500 --pages 10 --runs 1

Each run starts its own mosquitto on a free loopback port with the shipped
``mosquitto.conf``'s queue limits (mosquitto's defaults: 20 messages in flight and
1,000 queued per client), a tool process (``python -m tool_clients.calculator``), the
dashboard (``argentic-tools dashboard --http 127.0.0.1:0``) and ``--pages`` event
streams that read ``/api/events`` as fast as they can. Then a ToolManager sends
``--calls`` calls at once (``calculate``, timeout 5 s) and every one of them succeeds. The
figures, once the dashboard has nothing pending (its sweep ends a call 1 s past its
timeout): the calls it counted as started, succeeded, timed out and
``result not seen``, the messages it says it lost, and how many times mosquitto logged
``Outgoing messages are being dropped`` for a client. One line per run to stdout.
"""

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from argentic_tools import Messager, ToolManager, Topics

ROOT = Path(__file__).resolve().parent.parent
CALL_TIMEOUT = 5.0
"""Timeout of each call of the burst (every call succeeds well within it)."""
BOUND = 120.0
"""Seconds a run may take."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def state(port: int) -> dict[str, Any]:
    """``GET /api/state`` of the dashboard."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    data = await reader.read()
    writer.close()
    body = data.split(b"\r\n\r\n", 1)[1]
    result: dict[str, Any] = json.loads(body)
    return result


async def page(port: int, received: list[int]) -> None:
    """An event stream read as fast as it comes, until cancelled; counts its bytes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    try:
        while chunk := await reader.read(65536):
            received[0] += len(chunk)
    finally:
        writer.close()


def spawn(args: list[str], log: Path | None = None) -> subprocess.Popen[bytes]:
    """Start a process from the repository's root; its output to ``log`` or nowhere."""
    if log is None:
        return subprocess.Popen(  # noqa: S603
            args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
    with log.open("wb") as out:
        return subprocess.Popen(args, cwd=ROOT, stdout=out, stderr=out)  # noqa: S603


async def one_run(calls: int, pages: int, work: Path) -> dict[str, Any]:
    """One burst on fresh processes; its figures."""
    port = free_port()
    config = work / "mosquitto.conf"
    log = work / "mosquitto.log"
    # The shipped mosquitto.conf sets no queue limits: mosquitto's defaults apply.
    config.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n")
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    broker = spawn([mosquitto, "-c", str(config)], log)
    url = f"mqtt://127.0.0.1:{port}"
    prefix = f"burst{os.getpid()}"
    common = ["--broker", url, "--topic-prefix", prefix]
    processes: list[subprocess.Popen[bytes]] = []
    try:
        await asyncio.sleep(0.3)
        processes.append(
            spawn([sys.executable, "-m", "tool_clients.calculator", *common], work / "tool.log")
        )
        dashboard = spawn(
            [sys.executable, "-m", "argentic_tools", "dashboard", *common, "--http", "127.0.0.1:0"]
        )
        processes.append(dashboard)
        assert dashboard.stderr is not None
        line = await asyncio.to_thread(dashboard.stderr.readline)
        found = re.search(rb":(\d+)/", line)
        if found is None:
            raise RuntimeError(f"the dashboard did not start: {line!r}")
        http = int(found.group(1))
        topics = Topics.with_prefix(prefix)
        received = [0]
        readers = [asyncio.create_task(page(http, received)) for _ in range(pages)]
        async with Messager(url) as messager, ToolManager(messager, topics=topics) as manager:
            await manager.wait_for_tool("calculate", timeout=30)
            while pages:  # every page has its snapshot
                await asyncio.sleep(0.05)
                if received[0] > 0 and all(not r.done() for r in readers):
                    break
            started = time.monotonic()
            results = await asyncio.gather(
                *(
                    manager.execute_tool(
                        "calculate", {"expression": f"{i} + 1"}, timeout=CALL_TIMEOUT
                    )
                    for i in range(calls)
                )
            )
            burst = time.monotonic() - started
        ok = sum(1 for r in results if r.ok)
        deadline = time.monotonic() + CALL_TIMEOUT + 5
        while True:
            counters = (await state(http))["counters"]
            if counters["in_flight"] == 0 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=15)
        broker.terminate()
        broker.wait(timeout=10)
    drops = log.read_text(errors="replace").count("Outgoing messages are being dropped")
    return {
        "calls": calls,
        "pages": pages,
        "succeeded_for_callers": ok,
        "burst_s": round(burst, 2),
        "started": counters["started"],
        "succeeded": counters["succeeded"],
        "timed_out": counters["timed_out"],
        "not_seen": counters.get("not_seen"),
        "lost_messages": counters.get("lost"),
        "in_flight": counters["in_flight"],
        "mosquitto_drop_notices": drops,
        "page_mb": round(received[0] / 1e6, 1),
    }


async def main() -> None:
    """Run the bursts and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="dashboard-burst-") as tmp:
            figures = await asyncio.wait_for(one_run(args.calls, args.pages, Path(tmp)), BOUND)
        print(f"run {run + 1}: " + json.dumps(figures), flush=True)


if __name__ == "__main__":
    asyncio.run(main())

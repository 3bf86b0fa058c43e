"""``argentic-tools demo``: the example tools as separate processes, and a scripted agent.

The demo uses the broker given by ``--broker`` when one answers, and otherwise an
embedded broker on a free loopback port. Each example tool service of
``tool_clients`` runs in its own process, as it would in production; the agent
side is a :class:`~argentic_tools.ToolManager` in this process that calls them
one at a time, in a concurrent batch, with invalid arguments, past a deadline,
and while their process is killed. Whatever happens (Ctrl-C included), every
child process is terminated and the embedded broker stopped before returning.

Once the scripted agent is done, the tools stay up, serving, until Ctrl-C (or
SIGTERM, or Enter when stdin is a terminal), and the demo prints the
``argentic-tools list --broker ... --topic-prefix ...`` line that reaches them from
another terminal; ``--exit`` ends the demo after the agent instead.

With the ``dashboard`` extra installed, the dashboard serves on
``http://127.0.0.1:8080/`` (another free port when that one is taken) for as long
as the demo runs. ``ARGENTIC_TOOLS_DEMO_DASHBOARD=0`` (``make demo DASHBOARD=0``)
leaves it out; ``=HOST:PORT`` serves it there (a loopback address).
"""

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from .._agent.manager import ToolManager
from .._errors import BrokerUnavailableError
from .._protocol.messages import TaskErrorMessage, ToolCallRequest, ToolResult
from .._transport import Messager, parse_brokers
from .common import (
    CliError,
    StopRequest,
    manager_for,
    messager_from,
    shielded,
    stderr,
    stdout,
    topics_from,
)
from .options import Commands, add_command, host_and_port

EXAMPLES: dict[str, tuple[str, ...]] = {
    "calculator": ("calculate",),
    "units": ("convert_units",),
    "weather": ("get_weather",),
    "clock": ("current_time",),
    "files": ("write_file", "read_file", "list_files"),
    "slow": ("sleep", "echo"),
}
"""Example service module (``tool_clients.X``) -> the tools it serves."""

PROBE_TIMEOUT = 1.5
"""Seconds to wait for the ``--broker`` before falling back to the embedded one."""
STARTUP_TIMEOUT = 15.0
"""Seconds the tool processes get to start and register."""
RESULT_CHARS = 160
"""Longest result shown, in characters of JSON."""
STOP_TIMEOUT = 5.0
"""Seconds the tool processes get to exit after SIGTERM before they are killed."""
DASHBOARD_VARIABLE = "ARGENTIC_TOOLS_DEMO_DASHBOARD"
"""``0`` leaves the dashboard out of the demo; ``HOST:PORT`` says where it serves."""
DASHBOARD_ADDRESS = ("127.0.0.1", 8080)
"""Where the demo's dashboard serves by default (a free port if this one is taken)."""


class DemoError(CliError):
    """The demo could not run (a tool process failed to start)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status=1)


class ToolProcesses:
    """The example tool services, each in its own child process."""

    def __init__(self, url: str, prefix: str, workdir: Path, options: Sequence[str]) -> None:
        self.url = url
        self.prefix = prefix
        self.workdir = workdir
        self.options = list(options)
        self.processes: dict[str, asyncio.subprocess.Process] = {}

    async def start(self) -> None:
        """Start one process per example tool module, each logging to its own file."""
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for module in EXAMPLES:
            extra = ["--root", str(self.workdir / "sandbox")] if module == "files" else []
            with self.log_path(module).open("wb") as log:
                self.processes[module] = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    f"tool_clients.{module}",
                    "--broker",
                    self.url,
                    "--topic-prefix",
                    self.prefix,
                    "--log-level",
                    "WARNING",
                    *self.options,
                    *extra,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=log,
                    stderr=asyncio.subprocess.STDOUT,
                    env=env,
                )

    def log_path(self, module: str) -> Path:
        """The log file of ``module``'s process."""
        return self.workdir / f"{module}.log"

    def log_tail(self, module: str, lines: int = 3) -> str:
        """The last ``lines`` lines of ``module``'s log, for error messages."""
        try:
            text = self.log_path(module).read_text(errors="replace")
        except OSError:
            return ""
        return " | ".join(text.strip().splitlines()[-lines:])

    async def first_exit(self) -> str:
        """Wait until any child exits; return its module name."""
        waits = {
            asyncio.create_task(process.wait(), name=f"demo-wait:{module}"): module
            for module, process in self.processes.items()
        }
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waits:
                waiter.cancel()
        return waits[done.pop()]

    async def kill(self, module: str) -> None:
        """SIGKILL one child: no clean shutdown, only its MQTT Last Will tells."""
        process = self.processes[module]
        process.kill()
        await process.wait()

    async def stop(self) -> None:
        """SIGTERM every child, SIGKILL those still running after STOP_TIMEOUT."""
        running = [p for p in self.processes.values() if p.returncode is None]
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                await asyncio.gather(*(p.wait() for p in running))
        except TimeoutError:
            pass
        for process in running:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()


async def _connect_or_embed(
    args: argparse.Namespace, stack: contextlib.AsyncExitStack
) -> tuple[Messager, str, bool]:
    """Connect to ``--broker``, or start the embedded broker: (messager, url, embedded).

    Without ``--broker`` the demo always runs on the embedded broker, so what it shows
    does not depend on how some broker already running on the machine is configured.
    """
    if args.broker is None:
        reason, why = "no --broker given", "no --broker given"
    else:
        probe = messager_from(args, connect_timeout=PROBE_TIMEOUT)
        try:
            await probe.connect()
        except BrokerUnavailableError as exc:
            reason, why = str(exc), f"nothing answered at {probe.url}"
        else:
            stack.push_async_callback(shielded, probe.disconnect)
            stdout.print(Text.assemble("Broker: ", (probe.url, "bold"), " (it answered)"))
            return probe, args.broker, False
    from .._broker import EmbeddedBroker

    broker = EmbeddedBroker()
    try:
        await broker.start()
    except (RuntimeError, OSError) as exc:
        raise CliError(f"{reason}; and the embedded broker cannot start: {exc}") from None
    stack.push_async_callback(shielded, broker.stop)
    stdout.print(Text.assemble("Broker: ", (f"embedded, {broker.url}", "bold"), f" ({why})"))
    messager = messager_from(args, broker.url)
    await messager.connect()
    stack.push_async_callback(shielded, messager.disconnect)
    return messager, broker.url, True


def _tls_options(args: argparse.Namespace) -> list[str]:
    options = []
    for flag, value in (
        ("--ca-file", args.ca_file),
        ("--cert-file", args.cert_file),
        ("--key-file", args.key_file),
    ):
        if value:
            options += [flag, value]
    return options


async def _wait_for_tools(manager: ToolManager, children: ToolProcesses) -> float:
    names = [name for names in EXAMPLES.values() for name in names]
    started = time.perf_counter()
    registered: asyncio.Future[Any] = asyncio.ensure_future(
        asyncio.gather(*(manager.wait_for_tool(name) for name in names))
    )
    exited: asyncio.Future[Any] = asyncio.create_task(children.first_exit(), name="demo-exits")
    try:
        with stderr.status(Text(f"Starting {len(children.processes)} tool processes...")):
            done, _ = await asyncio.wait(
                {registered, exited}, timeout=STARTUP_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
            )
    finally:
        for waiter in (registered, exited):
            waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await registered
    if exited in done:
        module = exited.result()
        raise DemoError(
            f"the tool process tool_clients.{module} exited at start: {children.log_tail(module)}"
        )
    if registered not in done:
        missing = [name for name in names if name not in manager.get_tool_names()]
        raise DemoError(f"tools {missing} did not register within {STARTUP_TIMEOUT:g} s")
    return time.perf_counter() - started


def _show_tools(manager: ToolManager) -> None:
    table = Table(title="Registered tools", title_justify="left")
    table.add_column("Tool", style="bold", no_wrap=True)
    table.add_column("Tags")
    table.add_column("Description", overflow="fold")
    for info in sorted(manager.get_available_tools(), key=lambda i: i.name):
        summary = info.description.strip().splitlines()[0] if info.description else ""
        table.add_row(info.name, ", ".join(info.tags), summary)
    stdout.print(table)


def _call_text(name: str, arguments: dict[str, Any]) -> str:
    shown = ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items()
    )
    return f"{name}({shown})"


def _show(result: ToolResult, label: str | None = None) -> None:
    """Print one result: status, duration, the call, and its result or error."""
    style = "green" if result.ok else "red"
    if isinstance(result, TaskErrorMessage):
        outcome = Text.assemble((f"{result.error_code}: ", style), result.error)
    else:
        shown = json.dumps(result.result, ensure_ascii=False)
        outcome = Text(shown if len(shown) <= RESULT_CHARS else shown[: RESULT_CHARS - 3] + "...")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=8, style=f"bold {style}")
    grid.add_column(width=10, justify="right", style="dim")
    grid.add_column(overflow="fold")
    grid.add_row(
        result.status.value,
        f"{result.duration_ms or 0.0:.1f} ms",
        Text.assemble(
            (label or _call_text(result.tool_name, result.arguments or {}), "bold"),
            "\n-> ",
            outcome,
        ),
    )
    stdout.print(grid)


async def _scenario(manager: ToolManager, children: ToolProcesses) -> None:
    stdout.rule("1. One call at a time")
    for name, arguments in (
        ("calculate", {"expression": "2 * (3 + 4)"}),
        ("convert_units", {"value": 100, "from_unit": "km", "to_unit": "mi"}),
        ("get_weather", {"city": "Paris"}),
        ("current_time", {"timezone": "Europe/Paris"}),
    ):
        _show(await manager.execute_tool(name, arguments, timeout=10))

    stdout.rule("2. Six different tools at once (get_tool_results)")
    batch = [
        ToolCallRequest(tool_id=name, arguments=arguments, timeout=10)
        for name, arguments in (
            ("calculate", {"expression": "sqrt(2) * pi"}),
            ("convert_units", {"value": 72, "from_unit": "F", "to_unit": "C"}),
            ("get_weather", {"city": "Tokyo", "days": 3}),
            ("current_time", {"timezone": "Asia/Tokyo"}),
            ("write_file", {"path": "notes/hello.txt", "content": "hello\n"}),
            ("echo", {"message": "hello from the batch"}),
        )
    ]
    started = time.perf_counter()
    results, any_failed = await manager.get_tool_results(batch)
    elapsed = (time.perf_counter() - started) * 1000
    for result in results:
        _show(result)
    total = sum(r.duration_ms or 0.0 for r in results)
    stdout.print(
        f"  The batch took {elapsed:.1f} ms for {total:.1f} ms of calls"
        f"{'; some failed' if any_failed else ''}."
    )

    stdout.rule("3. Invalid arguments are refused before anything is sent")
    _show(await manager.execute_tool("get_weather", {"city": "Paris", "days": 99}, timeout=10))

    stdout.rule("4. A call that outlives its timeout")
    _show(
        await manager.execute_tool("sleep", {"seconds": 5}, timeout=1),
        label="sleep(seconds=5) with timeout=1",
    )

    stdout.rule("5. The tool process dies while a call is pending")
    pending = asyncio.create_task(
        manager.execute_tool("sleep", {"seconds": 30}, timeout=30), name="demo-pending-sleep"
    )
    try:
        # One loop turn lets the sleep call publish its task (paho sends synchronously in
        # its first step); an echo sent after it to the same process then proves that the
        # process holds the sleep task, without guessing a delay.
        await asyncio.sleep(0)
        async with asyncio.timeout(10):
            await manager.execute_tool("echo", {"message": "are you there?"}, timeout=5)
        pid = children.processes["slow"].pid
        stdout.print(
            f"  sleep(seconds=30) with timeout=30 is pending; SIGKILL to its process (pid {pid})."
        )
        killed_at = time.perf_counter()
        await children.kill("slow")
        async with asyncio.timeout(10):
            result = await pending
    finally:
        pending.cancel()
    after_kill = (time.perf_counter() - killed_at) * 1000
    _show(result, label="sleep(seconds=30) with timeout=30")
    stdout.print(
        f"  It failed {after_kill:.0f} ms after the kill, not after 30 s: the broker "
        "published the process's MQTT Last Will."
    )


async def _start_dashboard(
    args: argparse.Namespace,
    url: str,
    manager: ToolManager,
    stack: contextlib.AsyncExitStack,
) -> str | None:
    """Serve the dashboard until the demo ends; its address, or None when left out."""
    setting = os.environ.get(DASHBOARD_VARIABLE, "").strip()
    if args.no_dashboard or setting.lower() in ("0", "no", "off", "false"):
        return None
    try:
        from ..dashboard import Dashboard, bind_problem
    except ImportError:
        stdout.print("Dashboard: not shown (pip install 'argentic-tools[dashboard]').")
        return None

    chosen = setting.lower() not in ("", "1", "yes", "on", "true")
    host, port = host_and_port(setting) if chosen else DASHBOARD_ADDRESS
    problem = bind_problem(host.strip("[]"), allow_remote=False)
    if problem is not None:
        raise CliError(f"{DASHBOARD_VARIABLE}={setting}: {problem}")
    observer = messager_from(args, url)
    await observer.connect()
    stack.push_async_callback(shielded, observer.disconnect)
    dashboard = Dashboard(manager, observer)
    attempts = [port] if chosen or port == 0 else [port, 0]
    failure: OSError | None = None
    for attempt in attempts:
        try:
            bound = await stack.enter_async_context(dashboard.serving(host.strip("[]"), attempt))
        except OSError as exc:  # taken: the next attempt picks a free port
            failure = exc
            continue
        address = f"http://{host}:{bound}/"
        stdout.print(
            Text.assemble(
                "Dashboard: ",
                (address, "bold"),
                " shows the calls below as they happen (",
                (f"{DASHBOARD_VARIABLE}=0", "dim"),
                " or make demo DASHBOARD=0 leaves it out).",
            )
        )
        return address
    stdout.print(f"Dashboard: not shown, cannot listen on {host}:{port}: {failure}")
    return None


def cli_command() -> str:
    """How to run this installation's ``argentic-tools`` from another terminal.

    ``argentic-tools`` when that is the script beside this interpreter, found first on
    ``PATH``; otherwise its path (``.venv/bin/argentic-tools`` after ``make demo``,
    relative to the working directory when it is under it); ``python -m argentic_tools``
    when there is no script.
    """
    script = Path(sys.executable).parent / "argentic-tools"
    if not script.is_file():
        return f"{shlex.quote(sys.executable)} -m argentic_tools"
    found = shutil.which("argentic-tools")
    if found is not None and Path(found).resolve() == script.resolve():
        return "argentic-tools"
    with contextlib.suppress(ValueError):
        return shlex.quote(str(script.absolute().relative_to(Path.cwd())))
    return shlex.quote(str(script))


def reach_line(url: str, args: argparse.Namespace) -> str:
    """The command that lists the demo's tools from another terminal (no credentials)."""
    try:
        broker = ",".join(str(node) for node in parse_brokers(url))
    except ValueError:
        broker = url
    options = ["--broker", broker, "--topic-prefix", args.topic_prefix, *_tls_options(args)]
    return " ".join([cli_command(), "list", *(shlex.quote(option) for option in options)])


async def _stay_up(
    url: str, args: argparse.Namespace, dashboard: str | None, stop: StopRequest
) -> None:
    """Keep the tools (and the dashboard) serving until Ctrl-C, SIGTERM or Enter on a terminal.

    From here a signal ends the demo the way it ends a server: it stops its tool
    processes and exits 0 (a second signal cuts the cleanup short).
    """
    stop.graceful = True
    stop.interactive = True
    served = "The tools" if dashboard is None else f"The tools and the dashboard ({dashboard})"
    enter = " (or Enter)" if sys.stdin.isatty() else ""
    stdout.rule()
    stdout.print(f"{served} stay up until Ctrl-C{enter}. From another terminal:", soft_wrap=True)
    stdout.print(Text(f"  {reach_line(url, args)}", style="bold"), soft_wrap=True)
    stdout.file.flush()
    loop = asyncio.get_running_loop()
    descriptor = sys.stdin.fileno() if sys.stdin.isatty() else None
    if descriptor is not None:
        # A reader callback, not a thread: a thread blocked on stdin would hold up Ctrl-C.
        loop.add_reader(descriptor, stop.request)
    try:
        await stop.requested.wait()
    finally:
        if descriptor is not None:
            loop.remove_reader(descriptor)
    if descriptor is not None and stop.received is None:
        sys.stdin.readline()


async def run_demo(args: argparse.Namespace, stop: StopRequest) -> int:
    """Run the demo; returns the exit status (0 when the scenario ran to its end).

    Unless ``args.exit``, the tools then serve until ``stop`` is requested (Ctrl-C).
    """
    started = time.perf_counter()
    if args.topic_prefix is None:
        args.topic_prefix = f"demo-{uuid.uuid4().hex[:8]}"
    topics = topics_from(args)
    stdout.rule(Text("argentic-tools demo", style="bold"))
    async with contextlib.AsyncExitStack() as stack:
        messager, url, embedded = await _connect_or_embed(args, stack)
        manager = manager_for(messager, topics, args.log_level)
        await manager.async_init()
        stack.push_async_callback(shielded, manager.aclose)
        dashboard = await _start_dashboard(args, url, manager, stack)
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="argentic-demo-")))
        options = [] if embedded else _tls_options(args)
        children = ToolProcesses(url, args.topic_prefix, workdir, options)
        stack.push_async_callback(shielded, children.stop)
        await children.start()
        took = await _wait_for_tools(manager, children)
        stdout.print(
            Text.assemble(
                "Topic prefix ",
                (args.topic_prefix, "bold"),
                f": {len(children.processes)} tool processes, "
                f"{len(manager.get_tool_names())} tools registered in {took:.1f} s.",
            )
        )
        _show_tools(manager)
        await _scenario(manager, children)
        if not args.exit:
            await _stay_up(url, args, dashboard, stop)
        stdout.rule()
        stdout.print("Stopping the tool processes...")
    stdout.print(f"Demo finished in {time.perf_counter() - started:.1f} s.")
    return 0


def add_parser(commands: Commands) -> None:
    """``demo``: its options."""
    demo = add_command(
        commands,
        "demo",
        "start the example tools and run a short scripted agent",
        ("argentic-tools demo", "argentic-tools demo --no-dashboard"),
        long_running=True,
    )
    # Without --broker the demo starts the embedded broker instead of trying 1883.
    demo.add_argument(
        "--no-dashboard",
        action="store_true",
        help=f"leave the dashboard out (also {DASHBOARD_VARIABLE}=0, make demo DASHBOARD=0)",
    )
    demo.add_argument(
        "--exit",
        action="store_true",
        help="exit once the scripted agent is done, instead of serving the tools until Ctrl-C "
        "(make demo EXIT=1)",
    )
    demo.set_defaults(run=run_demo, log_level="WARNING", broker=None)

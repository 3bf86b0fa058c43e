"""A real headless Chromium driven over the Chrome DevTools Protocol, for the dashboard's tests.

Chromium runs as ``--headless=new --remote-debugging-port=0`` with its own profile
directory; its DevTools address is the one it prints once it listens. One websocket
carries every command: a single reader task resolves each command's future by id and
hands events to whoever waits for them, and a lost connection fails every waiter at once.
"""

import asyncio
import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from websockets.asyncio.client import ClientConnection, connect

_LISTENING = re.compile(rb"DevTools listening on (ws://127\.0\.0\.1:\d+/\S+)\s")

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium")

START_TIMEOUT = 30.0
"""Seconds Chromium may take to listen for DevTools."""
COMMAND_TIMEOUT = 30.0
"""Seconds any one DevTools command may take."""


def find_chromium() -> str | None:
    """The Chromium (or Chrome) binary, or None when none is installed."""
    for candidate in CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    return None


class DevToolsError(RuntimeError):
    """A DevTools command failed, or the page's script threw."""


class _Connection:
    """One DevTools websocket: commands by id, events by (session, method)."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._waiters: dict[tuple[str | None, str], list[asyncio.Future[dict[str, Any]]]] = {}
        self._lost: BaseException | None = None

    async def read(self) -> None:
        """Dispatch every message until the socket closes; then fail whoever waits."""
        try:
            async for raw in self.socket:
                message = json.loads(raw)
                if "id" in message:
                    future = self._pending.pop(message["id"], None)
                    if future is not None and not future.done():
                        if "error" in message:
                            future.set_exception(DevToolsError(str(message["error"])))
                        else:
                            future.set_result(message.get("result", {}))
                else:
                    key = (message.get("sessionId"), message["method"])
                    for waiter in self._waiters.pop(key, []):
                        if not waiter.done():
                            waiter.set_result(message.get("params", {}))
        finally:
            self._lost = DevToolsError("the DevTools connection closed")
            for future in [*self._pending.values(), *itertools.chain(*self._waiters.values())]:
                if not future.done():
                    future.set_exception(self._lost)
            self._pending.clear()
            self._waiters.clear()

    async def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        if self._lost is not None:
            raise self._lost
        command_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[command_id] = future
        message: dict[str, Any] = {"id": command_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        try:
            await self.socket.send(json.dumps(message))
            with anyio.fail_after(COMMAND_TIMEOUT):
                return await future
        finally:
            self._pending.pop(command_id, None)

    def expect(self, method: str, session: str | None) -> asyncio.Future[dict[str, Any]]:
        """A future for the next ``method`` event of ``session`` (ask before causing it)."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault((session, method), []).append(future)
        return future


class Page:
    """One browser tab."""

    def __init__(self, connection: _Connection, session: str) -> None:
        self._connection = connection
        self.session = session

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Run a DevTools command in this tab."""
        return await self._connection.send(method, self.session, **params)

    def expect(self, method: str) -> asyncio.Future[dict[str, Any]]:
        """A future for this tab's next ``method`` event (ask before causing it)."""
        return self._connection.expect(method, self.session)

    async def goto(self, url: str, timeout: float = 30.0) -> None:
        """Open ``url`` and wait for its load event."""
        loaded = self._connection.expect("Page.loadEventFired", self.session)
        answer = await self.send("Page.navigate", url=url)
        if answer.get("errorText"):
            raise DevToolsError(f"cannot open {url}: {answer['errorText']}")
        with anyio.fail_after(timeout):
            await loaded

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (promises are awaited)."""
        answer = await self.send(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise DevToolsError(f"{text} in: {expression[:200]}")
        return answer["result"].get("value")

    async def wait_for(self, condition: str, timeout: float = 10.0) -> Any:
        """Wait until the JavaScript expression ``condition`` is truthy; return its value.

        The page checks it on every change of its DOM (a MutationObserver), so this
        returns as soon as the page shows what is expected, and fails after ``timeout``.
        """
        script = f"""new Promise((resolve) => {{
            const check = () => {{
                let value;
                try {{ value = ({condition}); }} catch (error) {{ value = null; }}
                if (value) {{ observer.disconnect(); resolve(value); }}
            }};
            const observer = new MutationObserver(check);
            observer.observe(document, {{subtree: true, childList: true, attributes: true,
                                         characterData: true}});
            check();
        }})"""
        try:
            with anyio.fail_after(timeout):
                return await self.evaluate(script)
        except TimeoutError:
            raise TimeoutError(f"not within {timeout:g} s: {condition}") from None

    async def screenshot(self, path: Path) -> Path:
        """Save a PNG of the whole page at ``path``."""
        metrics = await self.send("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        answer = await self.send(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
        )
        await anyio.Path(path).write_bytes(base64.b64decode(answer["data"]))
        return path


class Browser:
    """Headless Chromium with a DevTools connection, for one ``async with`` block.

    Args:
        binary: The Chromium binary.
        profile: An empty directory for its profile (and its DevToolsActivePort).
        width: Width of each tab's viewport, in CSS pixels.
        height: Height of each tab's viewport.

    """

    def __init__(self, binary: str, profile: Path, width: int = 1440, height: int = 1000) -> None:
        self.binary = binary
        self.profile = profile
        self.width = width
        self.height = height
        self._process: anyio.abc.Process | None = None
        self._connection: _Connection | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator["Browser"]:
        """Start Chromium, connect, yield; then close the connection and stop Chromium."""
        command = [
            self.binary,
            "--headless=new",
            "--no-sandbox",
            "--remote-debugging-port=0",
            f"--user-data-dir={self.profile}",
            "--no-proxy-server",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            # A tab the test is not looking at must not be slowed down.
            "--disable-background-timer-throttling",
            "--disable-renderer-backgrounding",
            "--disable-backgrounding-occluded-windows",
            "--hide-scrollbars",
            "--mute-audio",
            "about:blank",
        ]
        env = {key: value for key, value in os.environ.items() if "proxy" not in key.lower()}
        process = await anyio.open_process(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env
        )
        self._process = process
        try:
            url = await self._devtools_url(process)
            async with (
                connect(url, max_size=None, ping_interval=None) as socket,
                anyio.create_task_group() as group,
            ):
                self._connection = _Connection(socket)
                group.start_soon(self._connection.read)
                group.start_soon(_drain, process)
                try:
                    yield self
                finally:
                    await socket.close()
                    group.cancel_scope.cancel()
        finally:
            self._connection = None
            if process.returncode is None:
                process.terminate()
                with anyio.move_on_after(10, shield=True):
                    await process.wait()
            if process.returncode is None:
                process.kill()
            with anyio.CancelScope(shield=True):
                await process.aclose()

    async def _devtools_url(self, process: anyio.abc.Process) -> str:
        """Wait until Chromium says it listens; its browser websocket's address.

        The address comes from that line itself: ``DevToolsActivePort`` in the profile
        has the same port and path, but Chromium may write it a moment after the line.
        """
        assert process.stderr is not None
        seen = b""
        with anyio.fail_after(START_TIMEOUT):
            while (found := _LISTENING.search(seen)) is None:
                try:
                    seen += await process.stderr.receive()
                except anyio.EndOfStream:
                    output = seen.decode(errors="replace")
                    raise RuntimeError(f"chromium exited: {output}") from None
        return found.group(1).decode()

    async def new_page(self) -> Page:
        """A fresh tab, its viewport set, page and runtime events on."""
        assert self._connection is not None
        target = await self._connection.send("Target.createTarget", url="about:blank")
        attached = await self._connection.send(
            "Target.attachToTarget", targetId=target["targetId"], flatten=True
        )
        page = Page(self._connection, attached["sessionId"])
        await page.send("Page.enable")
        await page.send("Runtime.enable")
        await page.send(
            "Emulation.setDeviceMetricsOverride",
            width=self.width,
            height=self.height,
            deviceScaleFactor=1,
            mobile=False,
        )
        return page


async def _drain(process: anyio.abc.Process) -> None:
    """Read and drop Chromium's further output, so that a full pipe never stalls it."""
    assert process.stderr is not None
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
        while True:
            await process.stderr.receive()

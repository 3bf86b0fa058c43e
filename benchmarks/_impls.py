"""The three callers measured side by side, behind one small interface.

Each implementation answers ``call(tool)`` (one request, True when the echo came back
right) and ``batch(tools)`` (one concurrent request per entry, returns how many came back
right). A timeout, an error result or a wrong echo counts as a failed call.
"""

import asyncio
import contextlib
import itertools
import json
import logging
import os
import sys
import time
import uuid
from typing import Any, Protocol

from argentic_tools import Messager, ToolCallRequest, ToolManager, Topics
from benchmarks._floor_common import client as floor_client


class Impl(Protocol):
    name: str

    async def open(self) -> None: ...

    def callee(self, echo_tools: int) -> list[str]:
        """``[module, *args]`` of the process that answers it, serving ``echo_tools`` more."""
        ...

    async def ready(self, tools: list[str], timeout: float) -> None: ...

    async def call(self, tool: str) -> bool: ...

    async def batch(self, tools: list[str]) -> int: ...

    async def close(self) -> None: ...


_counter = itertools.count()


def _message() -> str:
    return f"m{next(_counter)}"


async def _warm_up(impl: Impl, tools: list[str], timeout: float, calls: int = 20) -> None:
    """Retry each tool until it answers (a call sent before the peer subscribed is lost)."""
    deadline = time.monotonic() + timeout
    for tool in tools:
        while not await impl.call(tool):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{impl.name}: tool {tool!r} does not answer")
            await asyncio.sleep(0.05)
    for _ in range(calls):
        await impl.call(tools[0])
    await impl.batch([tools[i % len(tools)] for i in range(100)])


class Floor:
    """Raw aiomqtt: publish ``{"id", "message"}`` on ``P/req/<tool>``, match replies by id."""

    name = "floor"

    def __init__(self, port: int, prefix: str, call_timeout: float) -> None:
        self.port = port
        self.prefix = prefix
        self.call_timeout = call_timeout
        self._timeout = call_timeout
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._client: Any = None
        self._reader: asyncio.Task[None] | None = None

    def callee(self, echo_tools: int) -> list[str]:
        return ["benchmarks.floor_responder", "--port", str(self.port), "--prefix", self.prefix]

    async def open(self) -> None:
        self._client = floor_client(self.port, "requester")
        await self._client.__aenter__()
        await self._client.subscribe(f"{self.prefix}/resp/+", qos=1)
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self._client.messages:
            reply = json.loads(message.payload)
            future = self._pending.pop(reply["id"], None)
            if future is not None and not future.done():
                future.set_result(reply["result"])

    async def ready(self, tools: list[str], timeout: float) -> None:
        self._timeout = 0.5
        try:
            await _warm_up(self, tools, timeout)
        finally:
            self._timeout = self.call_timeout

    async def call(self, tool: str) -> bool:
        correlation = uuid.uuid4().hex
        message = _message()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[correlation] = future
        payload = json.dumps({"id": correlation, "message": message}).encode()
        try:
            async with asyncio.timeout(self._timeout):
                await self._client.publish(f"{self.prefix}/req/{tool}", payload, qos=1)
                return bool(await future == message)
        except TimeoutError:
            return False
        finally:
            self._pending.pop(correlation, None)

    async def batch(self, tools: list[str]) -> int:
        return sum(await asyncio.gather(*(self.call(tool) for tool in tools)))

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.__aexit__(None, None, None)


class Ours:
    """argentic-tools: ``Messager`` + ``ToolManager``; ``execute_tool`` / ``get_tool_results``."""

    def __init__(
        self, name: str, url: str, prefix: str, call_timeout: float, kind: str = "function"
    ) -> None:
        self.name = name
        self.url = url
        self.prefix = prefix
        self.kind = kind
        self.topics = Topics.with_prefix(prefix)
        self.call_timeout = call_timeout
        self.messager: Messager | None = None
        self.manager: ToolManager | None = None

    def callee(self, echo_tools: int) -> list[str]:
        return [
            "benchmarks.ours_tool",
            *(["--kind", self.kind] if self.kind != "function" else []),
            *("--broker", self.url, "--topic-prefix", self.prefix),
            *("--echo-tools", str(echo_tools)),
        ]

    async def open(self) -> None:
        self.messager = Messager(self.url, will_topic=None, log_level="WARNING")
        await self.messager.connect()
        self.manager = ToolManager(
            self.messager,
            log_level="WARNING",
            topics=self.topics,
            default_timeout=self.call_timeout,
        )
        await self.manager.async_init()

    async def ready(self, tools: list[str], timeout: float) -> None:
        assert self.manager is not None
        async with asyncio.timeout(timeout):
            for tool in tools:
                await self.manager.wait_for_tool(tool)
        # Warm-up calls send {"message": ...}: only the echo tools take that.
        await _warm_up(self, [t for t in tools if t.startswith("echo")] or ["echo"], timeout)

    async def call(self, tool: str) -> bool:
        assert self.manager is not None
        message = _message()
        result = await self.manager.execute_tool(
            tool, {"message": message}, timeout=self.call_timeout
        )
        return result.ok and result.result == message

    async def call_with(self, tool: str, arguments: dict[str, Any]) -> bool:
        assert self.manager is not None
        result = await self.manager.execute_tool(tool, arguments, timeout=self.call_timeout)
        return result.ok

    async def batch(self, tools: list[str]) -> int:
        assert self.manager is not None
        messages = [_message() for _ in tools]
        requests = [
            ToolCallRequest(tool_id=tool, arguments={"message": m}, timeout=self.call_timeout)
            for tool, m in zip(tools, messages, strict=True)
        ]
        results, _ = await self.manager.get_tool_results(requests)
        return sum(r.ok and r.result == m for r, m in zip(results, messages, strict=True))

    async def close(self) -> None:
        if self.manager is not None:
            with contextlib.suppress(Exception):
                await self.manager.aclose()
        if self.messager is not None:
            await self.messager.disconnect()


def argentic_version() -> str | None:
    """argentic's version when it can be imported, else None."""
    try:
        from importlib.metadata import version

        import argentic  # noqa: F401
    except ImportError:
        return None
    try:
        return version("argentic")
    except Exception:
        return "unknown"


class Argentic:
    """argentic 0.16: its Messager and ToolManager with default settings (QoS 0, Nagle on)."""

    name = "argentic"

    def __init__(self, port: int, prefix: str, call_timeout: float) -> None:
        self.port = port
        self.prefix = prefix
        self.call_timeout = call_timeout
        self._timeout = call_timeout
        self.messager: Any = None
        self.manager: Any = None

    def callee(self, echo_tools: int) -> list[str]:
        return [
            "benchmarks.argentic_tool",
            *("--port", str(self.port), "--prefix", self.prefix),
            *("--echo-tools", str(echo_tools)),
        ]

    async def open(self) -> None:
        # The MQTT driver module creates its logger at DEBUG when imported: import it
        # before lowering every argentic logger to WARNING.
        import argentic.core.messager.drivers.MQTTDriver  # noqa: F401
        from argentic.core.logger import set_global_log_level
        from argentic.core.messager.messager import Messager as ArgenticMessager
        from argentic.core.tools.tool_manager import ToolManager as ArgenticToolManager

        set_global_log_level("WARNING")
        _quiet_argentic()
        p = self.prefix
        self.messager = ArgenticMessager(
            broker_address="127.0.0.1",
            port=self.port,
            client_id=f"bench-argentic-manager-{os.getpid()}-{uuid.uuid4().hex[:8]}",
            log_level="WARNING",
        )
        if not await self.messager.connect():
            raise RuntimeError("argentic: the Messager could not connect")
        self.manager = ArgenticToolManager(
            self.messager,
            log_level="WARNING",
            register_topic=f"{p}/agent/tools/register",
            list_topic=f"{p}/agent/tools/list",
            search_topic=f"{p}/agent/tools/search",
            tool_call_topic_base=f"{p}/agent/tools/call",
            tool_response_topic_base=f"{p}/agent/tools/response",
            tool_cancel_topic_base=f"{p}/agent/tools/cancel",
            status_topic=f"{p}/agent/status/info",
            default_timeout=int(self.call_timeout),
        )
        await self.manager.async_init()
        set_global_log_level("WARNING")
        _quiet_argentic()

    async def ready(self, tools: list[str], timeout: float) -> None:
        async with asyncio.timeout(timeout):
            # argentic's manager has no event to wait on: poll its registry.
            while not all(t in self.manager.tools_by_name for t in tools):  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        # An argentic tool subscribes to its call topic only after the confirmation.
        self._timeout = 0.5
        try:
            await _warm_up(self, tools, timeout)
        finally:
            self._timeout = self.call_timeout

    async def call(self, tool: str) -> bool:
        from argentic.core.protocol.task import TaskStatus

        message = _message()
        result = await self.manager.execute_tool(
            tool, {"message": message}, timeout_seconds=self._timeout
        )
        return bool(result.status == TaskStatus.SUCCESS and result.result == message)

    async def batch(self, tools: list[str]) -> int:
        from argentic.core.protocol.task import TaskStatus
        from argentic.core.protocol.tool import ToolCallRequest as ArgenticRequest

        messages = [_message() for _ in tools]
        requests = [
            ArgenticRequest(tool_id=tool, arguments={"message": m})
            for tool, m in zip(tools, messages, strict=True)
        ]
        results, _ = await self.manager.get_tool_results(requests)
        return sum(
            r.status == TaskStatus.SUCCESS and r.result == m
            for r, m in zip(results, messages, strict=True)
        )

    async def close(self) -> None:
        if self.messager is not None:
            with contextlib.suppress(Exception):
                await self.messager.disconnect()


def _quiet_argentic() -> None:
    """Keep argentic's logging (console handlers on stdout) off the report on stdout.

    Levels go to WARNING, as on every side of the benchmark, and what is still logged
    goes to stderr. Its aiomqtt client logs through aiomqtt's default "mqtt" logger,
    which warns about every QoS 0 publish beyond ten not yet written to the socket.
    """
    from argentic.core import logger as argentic_logger

    logging.getLogger("mqtt").setLevel(logging.ERROR)
    for logger in list(argentic_logger._LOGGERS.values()):
        logger.setLevel(max(logger.level, logging.WARNING))
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stdout:
                handler.setStream(sys.stderr)

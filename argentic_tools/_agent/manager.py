"""The agent side: the tool registry and calls with deadlines.

One handler on the register topic maintains the registry. Results come back on the
manager's own inbox, ``{response_base}/+/{inbox}``, which each task names as its
``reply_to``: with many managers on one broker, a result reaches only the one that
made the call (plain Argentic tools answer on ``{response_base}/{tool_id}``, which
is subscribed too). Each pending call waits on its own future keyed by task id,
under a deadline that wraps only the wait. A tool's MQTT Last Will ends its pending
calls at once; an instance that misses a deadline without a word is skipped until
it answers again (a broker node that dies publishes no Last Will).
"""

import asyncio
import contextlib
import functools
import logging
from collections.abc import Iterable, Mapping
from typing import Any

import anyio

from .._errors import BrokerError, ProtocolError, ToolUnavailableError
from .._lifecycle import AsyncResource, TaskSet
from .._logging import DropLog, InstanceLogger, LogLevel, parse_log_level
from .._protocol.fleet_messages import ManagerOnlineMessage, ToolPongMessage, ToolStatsMessage
from .._protocol.messages import (
    PROTOCOL_VERSION,
    TaskErrorMessage,
    TaskResultMessage,
    ToolPartialMessage,
    ToolProgressMessage,
)
from .._protocol.parsing import parse_message
from .._protocol.topics import (
    DEFAULT_CALL_TOPIC_BASE,
    DEFAULT_REGISTER_TOPIC,
    DEFAULT_RESPONSE_TOPIC_BASE,
    DEFAULT_STATUS_TOPIC,
    Topics,
    inbox_level,
)
from .._telemetry import start_metrics_server
from .._transport import IncomingMessage, Messager
from .call_methods import CallMethods
from .calls import CallBook
from .delivery import Delivery
from .exports import ExportFormat, export
from .fleet import FleetStats
from .info import ToolInfo
from .liveness import Liveness
from .membership import Membership
from .observations import ObservationPump, ObservationRecorder
from .policy import AllToolsEnabled, ToolPolicy
from .registry import (
    DEFAULT_MAX_TOOLS,
    DEFAULT_MAX_TOOLS_PER_CLIENT,
    ToolRegistry,
    matching,
)
from .running import CANCEL_SEND_SECONDS, CallRunner

logger = logging.getLogger("argentic_tools.manager")

RECORDER_CLOSE_SECONDS = 5.0
"""How long closing a manager waits, by default, for its recorder to take the queued
observations."""


class ToolManager(CallMethods, AsyncResource):
    """Registry of tools on the broker and the way to call them.

    Args:
        messager: Connected :class:`Messager` (the manager does not own it).
        log_level: Level of the manager's logger.
        register_topic: Where tools register and unregister.
        tool_call_topic_base: Tasks go to ``{base}/{tool_id}``.
        tool_response_topic_base: Results come from ``{base}/{tool_id}``.
        status_topic: Where registrations are confirmed.
        default_timeout: Seconds a call waits when no timeout is given.
        topics: All four topics at once (e.g. ``Topics.with_prefix("team-a")``, as a
            :class:`ToolService` takes them); overrides the four arguments above.
        policy: Which tools each conversation thread may use (all by default).
        recorder: Receives one :class:`Observation` per call attempt.
        max_tools: Tool instances admitted in all; registrations of more are refused
            (with a TOOL_REGISTRATION_ERROR to the registering client).
        max_tools_per_client: Tool instances one MQTT client may register.
        name_owners: Tool names reserved for broker users (``{"calculate":
            "calculator"}``): only a registration on that user's own registration
            topic may use the name (see ``docs/security.md``).
        recorder_close_timeout: Seconds closing the manager waits for the recorder
            to take the observations still queued; past it they are dropped, so a
            stuck recorder never hangs the shutdown.
        private_replies: Tasks name the manager's own reply topic
            (``{response_base}/{tool_id}/{client id}``) and tools answer there, so no
            other manager receives this one's results; tools also answer its
            announcement there. False: every result on ``{response_base}/{tool_id}``,
            as before protocol 2 (for broker ACLs that let tools write only that topic).
        metrics_port: Serve the process's metrics for Prometheus on
            ``127.0.0.1:{metrics_port}`` from :meth:`async_init` (the ``[otel]``
            extra; see :func:`start_metrics_server`).

    Example:
        >>> async with Messager("mqtt://localhost:1883") as messager:  # doctest: +SKIP
        ...     manager = ToolManager(messager)
        ...     await manager.async_init()
        ...     result = await manager.execute_tool("calculate", {"expression": "2+2"})

    """

    def __init__(
        self,
        messager: Messager,
        log_level: LogLevel | str = LogLevel.INFO,
        register_topic: str = DEFAULT_REGISTER_TOPIC,
        tool_call_topic_base: str = DEFAULT_CALL_TOPIC_BASE,
        tool_response_topic_base: str = DEFAULT_RESPONSE_TOPIC_BASE,
        status_topic: str = DEFAULT_STATUS_TOPIC,
        default_timeout: int | float = 30,
        *,
        topics: Topics | None = None,
        policy: ToolPolicy | None = None,
        recorder: ObservationRecorder | None = None,
        recorder_close_timeout: float = RECORDER_CLOSE_SECONDS,
        max_tools: int = DEFAULT_MAX_TOOLS,
        max_tools_per_client: int = DEFAULT_MAX_TOOLS_PER_CLIENT,
        name_owners: Mapping[str, str] | None = None,
        private_replies: bool = True,
        metrics_port: int | None = None,
    ) -> None:
        self.messager = messager
        if topics is not None:
            register_topic, tool_call_topic_base = topics.register, topics.call_base
            tool_response_topic_base, status_topic = topics.response_base, topics.status
        self.register_topic = register_topic
        self.tool_call_topic_base = tool_call_topic_base
        self.tool_response_topic_base = tool_response_topic_base
        self.status_topic = status_topic
        self.topics = Topics(
            register_topic, tool_call_topic_base, tool_response_topic_base, status_topic
        )
        self.default_timeout = default_timeout
        self.policy: ToolPolicy = policy or AllToolsEnabled()
        self.log_level = parse_log_level(log_level)
        self.logger = InstanceLogger(logger, self.log_level, {"client_id": messager.client_id})
        self._registry = ToolRegistry(max_tools, max_tools_per_client, name_owners)
        self.tools_by_id: dict[str, dict[str, Any]] = self._registry.tools_by_id
        self.tools_by_name: dict[str, dict[str, Any]] = self._registry.tools_by_name
        self.inbox = inbox_level(messager.client_id) if private_replies else None
        """This manager's own topic level (its client id), or None without private replies."""
        self._calls = CallBook(
            self._registry,
            messager.client_id,
            None if self.inbox is None else self._reply_topic,
        )
        self._drops = DropLog(self.logger)
        self._background = TaskSet(self.logger, f"manager:{messager.client_id}")
        self._liveness = Liveness(
            self._registry, messager, self.topics, self.inbox, self.logger, self._background
        )
        self._delivery = Delivery(
            messager,
            self.topics,
            self._registry,
            self.logger,
            self._background,
            self._calls.encoded,
        )
        self._membership = Membership(
            self._registry,
            self._calls,
            messager,
            self.topics,
            self.logger,
            self._drops,
            self._background,
            self._liveness,
            self.inbox,
        )
        self._pump = ObservationPump(recorder) if recorder is not None else None
        self._runner = CallRunner(
            self._calls,
            self._delivery,
            self._membership,
            self._pump,
            lambda: self._initialised,
            self._liveness,
        )
        self.recorder_close_timeout = recorder_close_timeout
        self._initialised = False
        self._fleet = (
            None
            if self.inbox is None
            else FleetStats(
                self._registry,
                self._membership,
                functools.partial(self.messager.publish, self.topics.status),
                messager.client_id,
                self.inbox,
            )
        )
        self.metrics_port = metrics_port

    # -- lifecycle ------------------------------------------------------------

    async def _open_resource(self) -> None:
        await self.async_init()

    async def _close_resource(self) -> None:
        await self.aclose()

    async def async_init(self) -> None:
        """Subscribe to registrations and results, then announce this manager.

        Live tools answer the announcement by registering again, so a
        restarted manager has its registry back within a round trip; for the first
        0.5 s a call to a name not registered yet waits for it (within its timeout)
        instead of ending ``not_found`` at once.

        Raises:
            RuntimeError: Called twice.

        """
        if self._initialised:
            raise RuntimeError("this ToolManager is already initialised")
        self._initialised = True
        if self.metrics_port is not None:
            self.metrics_port = start_metrics_server(self.metrics_port)
        try:
            for topic in (self.topics.register, self.topics.owned_register_filter):
                await self.messager.subscribe(topic, self._membership.on_register_topic)
            for topic in self._membership.addressed_filters:
                await self.messager.subscribe(topic, self._membership.on_addressed)
            for topic in self._response_filters:
                await self.messager.subscribe(topic, self._on_response)
            self.messager.add_reconnect_hook(self._reconnected)
            await self._announce()
            self._membership.started()
        except BaseException:
            # Leave nothing attached: a failed start is as if it never happened.
            with anyio.CancelScope(shield=True):
                await self._detach()
            self._initialised = False
            raise

    async def aclose(self) -> None:
        """Stop listening; pending calls end with an error saying the manager closed."""
        if not self._initialised:
            return
        self._initialised = False
        # Calls that reached their tools: tell each tool to stop, before the connection
        # can close under the cancellations.
        for call in self._calls.pending.values():
            if call.published and not call.future.done():
                self._delivery.cancel_at_tool(call, "the caller's ToolManager was closed")
        self._calls.fail(lambda _: True, BrokerError("the ToolManager was closed"))
        await self._detach()
        self._membership.close()
        await self._background.aclose(grace=CANCEL_SEND_SECONDS)
        if self._pump is not None:
            # Hand over what is queued, but a stuck recorder must not hang the shutdown.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.recorder_close_timeout):
                    await self._pump.flush()
            await self._pump.close()

    async def _detach(self) -> None:
        self.messager.remove_reconnect_hook(self._reconnected)
        for topic, handler in (
            (self.topics.register, self._membership.on_register_topic),
            (self.topics.owned_register_filter, self._membership.on_register_topic),
            *((t, self._membership.on_addressed) for t in self._membership.addressed_filters),
            *((t, self._on_response) for t in self._response_filters),
        ):
            with contextlib.suppress(Exception):
                await self.messager.unsubscribe(topic, handler)

    async def flush_observations(self) -> None:
        """Wait until every observation so far has reached the recorder."""
        if self._pump is not None:
            await self._pump.flush()

    async def _reconnected(self) -> None:
        # The broker may have restarted and forgotten every subscription: until a tool
        # registers again (it does on its own reconnect, or on this announcement), calls
        # to it wait instead of being published into the void (see _send).
        self._membership.reconnected()
        await self._announce()

    async def _announce(self) -> None:
        await self.messager.publish(
            self.topics.status,
            ManagerOnlineMessage(source=self.messager.client_id, inbox=self.inbox),
        )

    @property
    def _response_filters(self) -> list[str]:
        """Plain Argentic tools' results, and this manager's own inbox."""
        filters = [self.topics.response_filter]
        if self.inbox is not None:
            filters.append(self.topics.reply_filter(self.inbox))
        return filters

    def _reply_topic(self, tool_id: str) -> str:
        assert self.inbox is not None  # only called with private replies
        return self.topics.reply(tool_id, self.inbox)

    def set_log_level(self, level: LogLevel | str) -> None:
        """Change the manager's log level (``"DEBUG"``, ``LogLevel.INFO``, ...)."""
        self.log_level = parse_log_level(level)
        self.logger.setLevel(self.log_level)  # this manager's, not the process's

    # -- registry --------------------------------------------------------------

    def get_tool_names(self) -> list[str]:
        """Names of all registered tools (each name once)."""
        return self._registry.names()

    def get_available_tools(
        self,
        enabled_for_thread_id: str | None = None,
        tags: Iterable[str] | None = None,
    ) -> list[ToolInfo]:
        """Registered tools enabled for a thread and carrying all of ``tags`` (one per name)."""
        return [
            info
            for info in matching(self._registry.first_per_name(), tags)
            if self.policy.is_enabled(info.name, enabled_for_thread_id)
        ]

    def generate_tool_descriptions_for_prompt(self) -> str:
        """JSON list of ``{tool_id, name, description, parameters}`` for an LLM prompt."""
        return self._registry.prompt_json()

    def export_tools(
        self,
        fmt: ExportFormat = "openai",
        *,
        thread_id: str | None = None,
        tags: Iterable[str] | None = None,
        strict: bool = True,
    ) -> list[dict[str, Any]]:
        """The registry as LLM tool definitions: ``prompt``, ``openai``, ``anthropic`` or ``mcp``.

        Only tools enabled for ``thread_id`` and carrying all ``tags`` are
        exported. OpenAI exports use strict mode when the schema allows it.

        Raises:
            ValueError: Unknown format.

        """
        if thread_id is None and not tags:
            return self._registry.export(fmt, strict)
        return export(self.get_available_tools(thread_id, tags), fmt, strict=strict)

    def get_tools_description(self) -> str:
        """Alias of :meth:`generate_tool_descriptions_for_prompt`."""
        return self.generate_tool_descriptions_for_prompt()

    async def wait_for_tool(self, tool_name_or_id: str, timeout: float | None = None) -> ToolInfo:
        """Wait until a tool with this name (or id) is registered, and return it.

        Raises:
            ToolUnavailableError: It did not register within ``timeout`` seconds (a
                ``TimeoutError`` too); the message names the broker, the closest
                registered name and what is registered.

        """
        try:
            async with asyncio.timeout(timeout):
                return await self._registry.wait_for(tool_name_or_id)
        except TimeoutError:
            raise ToolUnavailableError(self._not_registered(tool_name_or_id, timeout)) from None

    def _not_registered(self, name: str, timeout: float | None) -> str:
        return (
            f"Tool '{name}' is not registered on {self.messager.url} "
            f"(topic {self.topics.register!r}) after {timeout or 0:g} s. "
            + self._registry.what_is_there(name)
        )

    @property
    def registry_version(self) -> int:
        """A number that grows whenever the registry changes (cheap to compare)."""
        return self._registry.version

    async def registry_changed(self) -> None:
        """Return at the next change of the registry: a tool registered again, joined or left.

        For views of the fleet that must follow it (an MCP gateway's list-changed
        notifications); compare what you show, since re-registrations count too.
        """
        await self._registry.changed()

    async def wait_for_tool_removed(self, tool_id: str, timeout: float | None = None) -> None:
        """Wait until the tool with id ``tool_id`` is no longer registered.

        Raises:
            TimeoutError: It is still registered after ``timeout`` seconds.

        """
        async with asyncio.timeout(timeout):
            await self._registry.wait_removed(tool_id)

    # -- results -----------------------------------------------------------------

    def _on_response(self, message: IncomingMessage) -> None:
        tool_id = self.topics.tool_id_from_response(message.topic)
        try:
            result = parse_message(message.payload, self.messager.max_payload_bytes)
        except ProtocolError as exc:
            self._drops.drop(message.topic, str(exc))
            return
        self._liveness.alive(tool_id)
        if isinstance(result, ToolPongMessage):
            return
        if isinstance(result, ToolStatsMessage):
            if self._fleet is not None:
                self._fleet.answered(result)
            return
        if isinstance(result, ToolProgressMessage | ToolPartialMessage):
            problem = self._calls.update(result, tool_id)
            if problem is not None:
                self._drops.drop(message.topic, problem)
            return
        if not isinstance(result, TaskResultMessage | TaskErrorMessage):
            self._drops.drop(message.topic, f"expected a result, got a {result.type} message")
            return
        dropped = self._calls.resolve(result, tool_id)
        if dropped is not None:
            problem, routine = dropped
            self._drops.drop(message.topic, problem, logging.INFO if routine else logging.WARNING)
        elif result.task_id not in self._calls.pending:
            self.logger.debug("result for unknown task %s on %s", result.task_id, message.topic)

    async def fleet_stats(self, wait: float = 1.0) -> list[ToolStatsMessage]:
        """Ask every tool process what it has served; one answer per process.

        Each process answers a ``STATS_REQUEST`` itself (calls, errors and outcomes,
        p50/p99 durations, in-flight calls and concurrency limit per tool; host,
        pid, version, uptime), so this works with any number of managers. Returns
        once every process that registered a tool here has answered (a manager that
        has just started first lets the fleet register, up to 0.5 s), or after
        ``wait`` seconds in all with the answers that came.

        Raises:
            RuntimeError: The manager has no inbox (``private_replies=False``).

        """
        if self._fleet is None:
            raise RuntimeError("fleet_stats needs the manager's own inbox (private_replies)")
        return await self._fleet.gather(wait)

    @property
    def pending_calls(self) -> int:
        """Calls waiting for a result right now."""
        return len(self._calls.pending)

    @property
    def protocol_version(self) -> int:
        """Version of the protocol extensions this manager speaks."""
        return PROTOCOL_VERSION

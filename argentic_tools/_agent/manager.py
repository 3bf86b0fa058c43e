"""The agent side: the tool registry and calls with deadlines.

The manager owns one room per concern: :mod:`.calls` runs each call from its check to
its one result, :mod:`.fleet` knows who is on the bus, :mod:`.records` keeps what
happened. One handler on the register topic maintains the registry; what a change in
the fleet means for calls in flight (a window resized, calls ended, tasks sent
again) the manager applies here. Results come back on the
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
from collections.abc import AsyncIterator, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Unpack

import anyio

from .._errors import BrokerError, ToolUnavailableError
from .._lifecycle import AsyncResource, TaskSet
from .._logging import DropLog, InstanceLogger, LogLevel, parse_log_level
from .._protocol.fleet_messages import ManagerOnlineMessage, ToolStatsMessage
from .._protocol.messages import (
    PROTOCOL_VERSION,
    ToolCallRequest,
    ToolResult,
)
from .._protocol.topics import (
    DEFAULT_CALL_TOPIC_BASE,
    DEFAULT_REGISTER_TOPIC,
    DEFAULT_RESPONSE_TOPIC_BASE,
    DEFAULT_STATUS_TOPIC,
    Topics,
    inbox_level,
)
from .._telemetry import start_metrics_server
from .._transport import Messager
from .calls.batches.batch import run_batch
from .calls.participation.handlers import (
    HANDLER_KEYS,
    NO_HANDLERS,
    CallerHandlers,
    HandlerKeywords,
    handlers_of,
)
from .calls.pending.pending import CallSpec
from .calls.results.streams import ToolStream
from .calls.running.book import CallBook
from .calls.running.delivery import Delivery
from .calls.running.fleet_changes import apply_change
from .calls.running.runner import CANCEL_SEND_SECONDS, CallRunner
from .calls.settings.options import (
    BatchKeywords,
    CallKeywords,
    CallOptions,
    call_field,
    refuse_unknown,
)
from .fleet.exports import ExportFormat, export
from .fleet.info import ToolInfo
from .fleet.membership import Membership
from .fleet.model_output import model_output
from .fleet.presence import Presence
from .fleet.registry import (
    DEFAULT_MAX_TOOLS,
    DEFAULT_MAX_TOOLS_PER_CLIENT,
    ToolRegistry,
    matching,
)
from .fleet.settling import Settling
from .fleet.stats import FleetStats
from .policy import AllToolsEnabled, ToolPolicy
from .records.journal import CallJournal
from .records.observations import ObservationPump, ObservationRecorder
from .records.sqlite_journal import SqliteJournal
from .responses import Responses

logger = logging.getLogger("argentic_tools.manager")

RECORDER_CLOSE_SECONDS = 5.0
"""How long closing a manager waits, by default, for its recorder to take the queued
observations."""


def _journal_for(
    journal: "CallJournal | str | Path | None", messager: Messager
) -> CallJournal | None:
    """The journal ``ToolManager(journal=...)`` asks for: a path is a :class:`SqliteJournal`.

    Raises:
        ValueError: A journal without a stable client id, which a restarted caller needs.

    """
    if journal is None:
        return None
    if not messager.stable_id:
        raise ValueError(
            "ToolManager(journal=...) needs a stable client id (Messager(client_id=...)): "
            "tools know a caller by it, and a restarted caller must be the same one"
        )
    return SqliteJournal(journal) if isinstance(journal, str | Path) else journal


def _inbox_for(messager: Messager, tenant: bool, private_replies: bool) -> str | None:
    """The manager's own topic level: its client id, its broker user (``tenant``), or None.

    Raises:
        ValueError: ``tenant`` without private replies or a user name that fits one level.

    """
    user = messager.username
    if tenant and (not private_replies or user is None or inbox_level(user) is None):
        raise ValueError(
            "ToolManager(tenant=True) needs private replies and a broker user name that "
            f"can be one topic level (user: {user!r})"
        )
    if not private_replies:
        return None
    return user if tenant else inbox_level(messager.client_id)


class ToolManager(AsyncResource):
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
        private_replies: Tools answer on the manager's own reply topic
            (``{response_base}/{tool_id}/{client id}``), so no other manager receives its
            results. False: every result on ``{response_base}/{tool_id}``.
        tenant: Identify this manager by its broker user name, which the broker
            proves, instead of its client id, which any user can claim: tasks go out on
            ``{call_base}/{tool_id}/{user}``, results come back on
            ``{response_base}/+/{user}``, for a broker ACL that lets each user write only
            its own call level and read only its own inbox (see ``docs/security.md``).
            Needs a user name and private replies; plain Argentic tools are not reached.
        metrics_port: Serve the process's metrics for Prometheus on
            ``127.0.0.1:{metrics_port}`` from :meth:`async_init` (the ``[otel]``
            extra; see :func:`start_metrics_server`).
        gc_freeze: While a big batch runs, keep the process's objects out of
            CPython's full garbage collections (``gc.freeze()``; process-wide), which
            with tens of thousands of calls pending hold the loop 0.3 s or more each.
            ``None`` (the default): for batches of 4,096 calls or more, while the
            collector is enabled and unless the application froze objects itself;
            ``True``: for every batch of more than 128 calls; ``False``: never.
        handlers: Every call's handlers for its tool's questions and log records
            (:class:`CallerHandlers`), unless the call brings its own (see
            :meth:`execute_tool`); ``on_elicit=``, ``on_sample=``, ``on_log=`` and
            ``on_roots=`` give them one by one (:class:`HandlerKeywords`).
        journal: Keep every call until it ends in this :class:`CallJournal` (a path: a
            :class:`SqliteJournal`), so that a manager started again with it waits for the
            calls left running (:meth:`result`, :meth:`reattached`). Needs a stable client id.

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
        tenant: bool = False,
        gc_freeze: bool | None = None,
        journal: "CallJournal | str | Path | None" = None,
        handlers: CallerHandlers | None = None,
        **handler_keywords: Unpack[HandlerKeywords],
    ) -> None:
        refuse_unknown(handler_keywords, HANDLER_KEYS)  # a misspelt keyword is an error
        self.messager = messager
        self.journal = _journal_for(journal, messager)
        """Where calls are kept until they end, to outlive this process (None: nowhere)."""
        self.tenant = tenant
        """Whether tasks and results are keyed on the broker user (see ``tenant``)."""
        self.inbox = _inbox_for(messager, tenant, private_replies)
        """This manager's own topic level (its client id, or its broker user name with
        ``tenant``), or None without private replies."""
        self.topics = topics or Topics(
            register_topic, tool_call_topic_base, tool_response_topic_base, status_topic
        )
        self.register_topic = self.topics.register
        self.tool_call_topic_base = self.topics.call_base
        self.tool_response_topic_base = self.topics.response_base
        self.status_topic = self.topics.status
        self.default_timeout = default_timeout
        self.policy: ToolPolicy = policy or AllToolsEnabled()
        self.log_level = parse_log_level(log_level)
        self.logger = InstanceLogger(logger, self.log_level, {"client_id": messager.client_id})
        self.recorder_close_timeout = recorder_close_timeout
        self.metrics_port = metrics_port
        self._gc_freeze = gc_freeze
        # The collaborators, each built with what it reads; the ties between them are the
        # arguments below, in the order they are made.
        self._registry = ToolRegistry(max_tools, max_tools_per_client, name_owners)
        self.tools_by_id: dict[str, dict[str, Any]] = self._registry.tools_by_id
        self.tools_by_name: dict[str, dict[str, Any]] = self._registry.tools_by_name
        # Tasks (and pings) from a tenant go out on its own call level.
        user = messager.username
        call_topic = (
            functools.partial(self.topics.call_from, sender=user)
            if tenant and user is not None
            else None
        )
        self._calls = CallBook(self._registry, messager.client_id)
        self._settling = Settling(messager, self._registry)
        self._drops = DropLog(self.logger)
        self._background = TaskSet(self.logger, f"manager:{messager.client_id}")
        reply_topic = None if self.inbox is None else self._reply_topic
        self._delivery = Delivery(
            messager,
            self.topics,
            self._registry,
            self.logger,
            self._background,
            reply_topic,
            call_topic,
        )
        calls_in_flight = functools.partial(
            apply_change, calls=self._calls, delivery=self._delivery, logger=self.logger
        )
        self._membership = Membership(
            self._registry,
            calls_in_flight,
            messager,
            self.topics,
            self.logger,
            self._drops,
            self._background,
            self.inbox,
            call_topic,
        )
        self._liveness = self._membership.liveness
        self._presence = Presence(
            self._registry,
            self._liveness,
            messager,
            self.logger,
            self._background,
            retire=self._membership.retire,
        )
        self._pump = ObservationPump(recorder) if recorder is not None else None
        self._runner = CallRunner(
            self._calls,
            self._delivery,
            self._settling,
            self._pump,
            handlers_of(handler_keywords, handlers) or NO_HANDLERS,
            self._liveness,
            self.journal,
        )
        self._reattacher = self._runner.reattacher()
        self._fleet = (
            None
            if self.inbox is None
            else FleetStats(
                self._registry,
                self._settling,
                functools.partial(self.messager.publish, self.topics.status),
                messager.client_id,
                self.inbox,
            )
        )
        self._responses = Responses(
            self.topics,
            messager.max_payload_bytes,
            self._calls,
            self._liveness.alive,
            None if self._fleet is None else self._fleet.answered,
            self._drops,
            self.logger,
            None if self.journal is None else self._runner.noted,
        )

    # -- lifecycle ------------------------------------------------------------

    @property
    def handlers(self) -> CallerHandlers:
        """Handlers for every call's questions and log records, unless a call brings its own.

        Reattached calls (from the journal) answer with these too.
        """
        return self._runner.handlers

    @handlers.setter
    def handlers(self, handlers: CallerHandlers) -> None:
        self._runner.handlers = handlers

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
        if self._calls.open:
            raise RuntimeError("this ToolManager is already initialised")
        self._calls.open = True
        if self.metrics_port is not None:
            self.metrics_port = start_metrics_server(self.metrics_port)
        try:
            if self.journal is not None:
                await self.journal.open()
            for topic in (self.topics.register, self.topics.owned_register_filter):
                await self.messager.subscribe(topic, self._membership.on_register_topic)
            for topic in self._membership.addressed_filters:
                await self.messager.subscribe(topic, self._membership.on_addressed)
            for topic in self._response_filters:
                await self.messager.subscribe(topic, self._responses.route)
            self.messager.add_reconnect_hook(self._reconnected)
            await self._announce()
            self._settling.started()
            if self.inbox is not None:  # pongs come back to the inbox
                self._presence.start()
            if self._reattacher is not None:
                await self._reattacher.start()
        except BaseException:
            # Leave nothing attached: a failed start is as if it never happened.
            with anyio.CancelScope(shield=True):
                await self._detach()
            self._calls.open = False
            raise

    async def aclose(self) -> None:
        """Stop listening; pending calls end with an error saying the manager closed."""
        if not self._calls.open:
            return
        self._calls.open = False
        # Calls that reached their tools: tell each tool to stop, before the connection
        # can close under the cancellations (with a journal, they go on for the next one).
        for call in self._calls.pending.values():
            if call.published and not call.future.done() and self.journal is None:
                self._delivery.cancel_at_tool(call, "the caller's ToolManager was closed")
        if self._reattacher is not None:
            await self._reattacher.close()
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
        if self.journal is not None:
            await self.journal.close()

    async def _detach(self) -> None:
        self.messager.remove_reconnect_hook(self._reconnected)
        for topic, handler in (
            (self.topics.register, self._membership.on_register_topic),
            (self.topics.owned_register_filter, self._membership.on_register_topic),
            *((t, self._membership.on_addressed) for t in self._membership.addressed_filters),
            *((t, self._responses.route) for t in self._response_filters),
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
        # to it wait instead of being published into the void (see Delivery.send).
        self._settling.reconnected()
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

    # -- calls -------------------------------------------------------------------

    async def execute_tool(
        self,
        tool_name_or_id: str,
        arguments: dict[str, Any],
        task_id_override: str | None = None,
        timeout: float | None = None,
        **options: Unpack[CallKeywords],
    ) -> ToolResult:
        """Call a tool and wait for its result; never raises for a failed call.

        Args:
            tool_name_or_id: Tool name, or a tool id to pick one instance.
            arguments: Arguments object; checked against the tool's JSON Schema
                before anything is published. It is read again when the task goes
                out (and for a resend), so leave it unchanged until the call returns.
            task_id_override: The caller's label for this call, returned as the
                result's ``task_id``. The task on the wire always gets a fresh id:
                labels repeat (LLM call ids do), and a reused wire id would be
                answered with the earlier call's recorded result.
            timeout: Seconds to wait; ``default_timeout`` when None (and no
                ``idle_timeout`` is given). Zero means no time at all (the call
                times out without being sent).
            **options: The call's other settings, :class:`CallKeywords`: ``call_id``,
                ``context`` (or ``thread_id``, ``trace_id``, ``user_id``),
                ``on_progress``, ``idle_timeout``, ``max_duration``, and the handlers
                for the tool's questions and log records (``handlers``, or
                ``on_elicit``, ``on_sample``, ``on_log``, ``on_roots``; those the
                call lacks are the manager's).

        Returns:
            A :class:`TaskResultMessage` on success (its ``result`` the value, its
            ``content`` the tool's content blocks, typed, when it returned some);
            otherwise a :class:`TaskErrorMessage` whose ``error`` names the tool and the
            cause and whose ``error_code`` is one of ``not_found``, ``not_enabled``,
            ``invalid_arguments``, ``invalid_output``, ``execution_error``,
            ``ask_not_supported``, ``timeout``, ``tool_offline`` or ``cancelled``.

        Raises:
            TypeError: A keyword that is not a setting (as for any misspelt parameter).

        """
        spec = CallOptions.read(options, task_id_override, timeout).spec(
            tool_name_or_id, arguments, self.default_timeout, None, None, self.handlers
        )
        return await self._runner.run(spec, self.policy)

    def stream_tool(
        self,
        tool_name_or_id: str,
        arguments: dict[str, Any],
        task_id_override: str | None = None,
        timeout: float | None = None,
        **options: Unpack[CallKeywords],
    ) -> ToolStream:
        """Call a tool and receive its result in chunks, as the tool sends them.

        ``async for chunk in manager.stream_tool(name, args)`` yields each chunk in
        order, once; afterwards the stream's ``result`` holds the final result (for
        a generator tool, the list of all chunks). A failed call ends the iteration
        and its error is the ``result``; nothing raises. Leaving the loop early (or
        the stream's ``async with`` block) cancels the call at the tool. A tool
        that does not stream yields nothing and gives its result. The arguments
        are those of :meth:`execute_tool`.
        """
        read = CallOptions.read(options, task_id_override, timeout)
        stream = ToolStream(self._call)
        sink, wait = stream.chunk_arrived, self.default_timeout
        stream.spec = read.spec(tool_name_or_id, arguments, wait, sink, None, self.handlers)
        return stream

    async def result(self, task_id: str, timeout: float | None = None) -> ToolResult:
        """The result of a journaled call, by ``task_id_override`` or task id.

        Raises:
            KeyError: The journal knows no such call, or none is being waited for.
            TimeoutError: It has not ended within ``timeout`` seconds.

        """
        if self._reattacher is None:
            raise KeyError(f"no journal: {task_id!r} cannot be looked up")
        async with asyncio.timeout(timeout):
            return await self._reattacher.result(task_id)

    def reattached(self) -> AsyncIterator[ToolResult]:
        """The results of the calls picked up from the journal at start, as each ends."""
        if self._reattacher is None:
            raise RuntimeError("this ToolManager has no journal")
        return self._reattacher.results()

    async def cancel(self, task_id: str, reason: str | None = None) -> bool:
        """Cancel one pending call: its caller gets status ``cancelled`` and its tool stops.

        Args:
            task_id: The call's task id, or the ``task_id_override`` it was made with.
            reason: Why, for the tool's log and the result's message.

        Returns:
            False when no such call is pending (it ended, or never existed).

        """
        return await self._runner.cancel(task_id, reason)

    def _call(self, spec: CallSpec) -> Coroutine[Any, Any, ToolResult]:
        # The runner's coroutine itself, not one awaiting it: a frame less per call.
        return self._runner.run(spec, self.policy)

    async def get_tool_results(
        self,
        tool_call_requests: Sequence[ToolCallRequest],
        **options: Unpack[BatchKeywords],
    ) -> tuple[list[ToolResult], bool]:
        """Run several calls concurrently.

        Args:
            tool_call_requests: The calls, each with its own arguments and, optionally,
                its ``call_id``, ``timeout``, ``context``, ``idle_timeout`` and
                ``max_duration``.
            **options: What every request shares, :class:`BatchKeywords` (a request's
                own setting wins): ``on_progress(call_id, progress, total, message)``,
                the handlers, ``timeout``, ...

        Returns:
            The results in request order, and whether any of them failed.

        """
        shared, on_progress = CallOptions.read_batch(options)
        results = await self._batch(
            (request.tool_id, request.arguments, shared.for_request(request, on_progress))
            for request in tool_call_requests
        )
        return results, any(not r.ok for r in results)

    async def execute_tools(
        self,
        calls: Sequence[Any],
        thread_id: str | None = None,
        trace_id: str | None = None,
        **options: Unpack[BatchKeywords],
    ) -> list[ToolResult]:
        """Run parsed tool calls (``call_id``, ``tool_name``, ``arguments``) concurrently.

        Each item may be an object with those attributes or a mapping with
        those keys (``toolName``/``callId`` as ART writes them work too).
        Returns one result per call, in order, each carrying its ``call_id``;
        a failure is a result, never an exception. ``options`` (:class:`BatchKeywords`)
        apply to each call as in :meth:`execute_tool`; ``on_progress`` is called as
        ``on_progress(call_id, progress, total, message)`` for every call's reports
        (``call`` tells a handler which call asks).
        """
        shared, on_progress = CallOptions.read_batch(options, thread_id, trace_id)
        return await self._batch(
            (
                call_field(call, "tool_name", "toolName"),
                call_field(call, "arguments", "arguments"),
                shared.for_batch_call(call_field(call, "call_id", "callId"), on_progress),
            )
            for call in calls
        )

    async def _batch(self, batch: Iterable[tuple[str, Any, CallOptions]]) -> list[ToolResult]:
        """Run calls concurrently, each as :meth:`execute_tool` would; results in order."""
        overridden = type(self).execute_tool is not ToolManager.execute_tool
        return await run_batch(
            batch,
            self._call,
            self._delivery.cancelling,
            default_timeout=self.default_timeout,
            default_handlers=self.handlers,
            gc_freeze=self._gc_freeze,
            overridden=self._overridden_call if overridden else None,
        )

    def _overridden_call(
        self, call: tuple[str, Any, CallOptions]
    ) -> Coroutine[Any, Any, ToolResult]:
        """A batched call through a subclass's own ``execute_tool``."""
        name, arguments, options = call
        return self.execute_tool(
            name, arguments, options.task_id_override, options.timeout, **options.keywords()
        )

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
        """The registry as LLM tool definitions, in one of :data:`ExportFormat`'s shapes.

        ``prompt`` is document 004's; ``anthropic`` and ``mcp`` are those APIs'
        own; ``openai`` is the Chat Completions shape (``{"type": "function",
        "function": {...}}``), ``openai-responses`` the Responses API's flat one
        (``{"type": "function", "name", "description", "parameters", "strict"}``).
        Only tools enabled for ``thread_id`` and carrying all ``tags`` are exported.
        OpenAI exports use strict mode when the schema allows it.

        Raises:
            ValueError: Unknown format.

        """
        if thread_id is None and not tags:
            return self._registry.export(fmt, strict)
        return export(self.get_available_tools(thread_id, tags), fmt, strict=strict)

    def export_result(self, result: ToolResult, fmt: ExportFormat = "openai") -> Any:
        """What a model receives for ``result``, in the shape of :meth:`export_tools`' ``fmt``.

        ``prompt``: text. ``openai``: a Chat Completions ``tool`` message's
        ``content``, always a string (it takes text only: an image is its plain
        rendering, ``[image: image/png, 1,234 bytes]``). ``openai-responses``: a
        Responses API ``function_call_output``'s ``output`` (the text, or
        ``input_text``/``input_image`` parts for content blocks). ``anthropic``: a
        ``tool_result``'s ``content`` (the text, or ``text`` and ``image`` blocks).
        ``mcp``: a ``CallToolResult`` as JSON. Blocks a format cannot take reach the
        model as their plain rendering, never as base64 text.

        Raises:
            ValueError: Unknown format.

        """
        return model_output(result, fmt)

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
    def settled(self) -> bool:
        """Whether the connection is up and the registry has settled (what ``/readyz`` reports).

        False while the broker connection is down, and for a moment after the manager
        starts or reconnects, while live tools register again (see ``Settling``).
        """
        return not self._settling.active()

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

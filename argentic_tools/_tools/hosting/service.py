"""Hosting tools in a process: :class:`ToolService` and the ``serve_main`` command line."""

import argparse
import asyncio
import collections
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.abc

from ..._errors import BrokerUnavailableError, RegistrationError, ToolsError
from ..._lifecycle import AsyncResource
from ..._logging import add_log_format_argument, configure_logging, parse_log_level
from ..._protocol.fleet_messages import ClientOfflineMessage
from ..._protocol.topics import Topics
from ..._telemetry import start_metrics_server
from ..._transport import Messager
from ..definition.definition import BaseTool, as_tool
from ..records.task_record import DEFAULT_RESULT_RETENTION
from ..serving.endpoint import ToolEndpoint, registration_topic
from .watchdog import DEFAULT_BLOCKED_LOOP_SECONDS, LoopWatchdog

logger = logging.getLogger("argentic_tools.service")


class ToolService(AsyncResource):
    """Serves any number of tools from one process over one MQTT connection.

    ``await ToolService("mqtt://localhost:1883", tools=[add]).run()`` registers
    every tool, serves calls concurrently (each tool up to its
    ``max_concurrency``, else ``max_concurrency`` here), re-registers after a
    broker loss or a manager restart, and on SIGTERM/SIGINT unregisters, lets
    in-flight calls finish within ``grace_period`` and returns.

    Args:
        broker: Broker URL (``mqtt://[user:pass@]host:port``) or a Messager
            (which the service then uses but does not close).
        tools: ``@tool`` functions, BaseTool instances or BaseTool classes.
        topics: Protocol topics; defaults, or the defaults under ``topic_prefix``.
        topic_prefix: Prefix for the default topics.
        max_concurrency: Calls served at once per tool without its own limit.
        grace_period: Seconds in-flight calls get to finish on shutdown.
        tool_ids: Pinned ids by tool name (for broker ACLs).
        debug: Send tracebacks with tool failures.
        blocked_loop_threshold: Seconds an ``async def`` tool may block the event loop
            before a warning names it and the fix (None: don't watch).
        confirm_timeout: Seconds entering waits for a manager to confirm (or refuse)
            each registration. A refused tool is logged with the manager's reason,
            left out (see :attr:`refused`) and the others serve; when every tool is
            refused, entering raises :class:`RegistrationError`. With no answer by
            then the tools serve anyway and register again whenever a manager
            announces itself. Entering returns as soon as every tool is answered.
            Registrations are paced (128 unanswered at once, see ``docs/protocol.md``):
            thousands of tools take as long as the managers take to answer them, or,
            with no manager, about ``confirm_timeout / 3`` seconds per 128 tools.
        metrics_port: Serve the process's metrics for Prometheus on
            ``127.0.0.1:{metrics_port}`` when the service starts (the ``[otel]``
            extra; see :func:`start_metrics_server`).
        result_retention: Seconds each finished call's reply is kept at least (64 KB a
            reply and 64 MB in all at most), for a caller that comes back: a manager
            restarted on its journal asks again for the calls it left, and gets the kept
            reply instead of a second run.
        messager_options: Extra keyword arguments for the :class:`Messager`.

    """

    def __init__(
        self,
        broker: str | Messager = "mqtt://127.0.0.1:1883",
        tools: Sequence[Any] = (),
        *,
        topics: Topics | None = None,
        topic_prefix: str | None = None,
        max_concurrency: int = 64,
        grace_period: float = 10.0,
        tool_ids: dict[str, str] | None = None,
        debug: bool = False,
        blocked_loop_threshold: float | None = DEFAULT_BLOCKED_LOOP_SECONDS,
        metrics_port: int | None = None,
        confirm_timeout: float = 1.0,
        result_retention: float = DEFAULT_RESULT_RETENTION,
        **messager_options: Any,
    ) -> None:
        if not confirm_timeout > 0:
            raise ValueError(f"confirm_timeout must be > 0 seconds, got {confirm_timeout!r}")
        self.confirm_timeout = confirm_timeout
        self.metrics_port = metrics_port
        self.topics = topics or Topics.with_prefix(topic_prefix)
        self.tools: list[BaseTool] = [as_tool(t) for t in tools]
        names = collections.Counter(t.name for t in self.tools)
        duplicates = sorted(name for name, count in names.items() if count > 1)
        if duplicates:
            raise ValueError(f"tool names must be unique within a service: {duplicates}")
        # Serving settings live on the endpoints: the tool objects are never changed, so
        # one object can be served by two services with different settings.
        self.max_concurrency = max_concurrency
        self.tool_ids = dict(tool_ids or {})
        self.debug = debug
        self.grace_period = grace_period
        self.result_retention = result_retention
        if isinstance(broker, Messager):
            self.messager = broker
            self._owns_messager = False
        else:
            self.messager = Messager(broker, **messager_options)
            if "will_topic" not in messager_options:
                # The Last Will goes where the registrations go: the process's own topic
                # when it has a broker user (only then does the will prove anything).
                self.messager.will_topic = registration_topic(self.topics, self.messager)
            self._owns_messager = True
        self.endpoints: list[ToolEndpoint] = []
        """The tools being served, one endpoint each (refused ones are left out)."""
        self.refused: dict[str, str] = {}
        """The tools a manager refused when the service started, with its reason."""
        self.watchdog = (
            LoopWatchdog(
                self.tools,
                blocked_loop_threshold,
                ping=self.messager.ping_while_blocked,
                ping_every=max(self.messager.keepalive / 3, 0.1),
            )
            if blocked_loop_threshold is not None
            else None
        )
        """Notices a tool blocking the event loop (None when turned off)."""
        self._stop = asyncio.Event()
        self._started = False

    async def _open_resource(self) -> None:
        await self.start()

    async def _close_resource(self) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Connect (when given a URL) and register every tool; returns once they are served.

        Raises:
            RegistrationError: A manager refused every tool (one refused tool among
                others is only left out, see :attr:`refused`).

        """
        if self._started:
            raise RuntimeError("this ToolService is already running")
        self._started = True
        self.refused.clear()
        if self.metrics_port is not None:
            self.metrics_port = start_metrics_server(self.metrics_port)
        if self._owns_messager:
            await self.messager.connect()
        if self.watchdog is not None:
            self.watchdog.start()
        try:
            for item in self.tools:
                endpoint = ToolEndpoint(
                    item,
                    self.messager,
                    self.topics,
                    tool_id=self.tool_ids.get(item.name),
                    max_concurrency=self.max_concurrency,
                    debug=self.debug,
                    result_retention=self.result_retention,
                )
                self.endpoints.append(endpoint)
            # Every tool listens before any registers: the registrations then go out in
            # the order of the tools, so a manager's per-client bound cuts the last ones.
            for failure in await asyncio.gather(
                *(e.listen() for e in self.endpoints), return_exceptions=True
            ):
                if failure is not None:
                    raise failure
            ids = await asyncio.gather(
                *(
                    e.register(confirm_timeout=self.confirm_timeout, quiet=True)
                    for e in self.endpoints
                ),
                return_exceptions=True,
            )
            refused = []
            for endpoint, outcome in zip(self.endpoints, ids, strict=True):
                if isinstance(outcome, RegistrationError):
                    refused.append(endpoint)
                elif isinstance(outcome, BaseException):
                    raise outcome
            if refused:
                await self._drop_refused(refused)
        except BaseException:
            await self.aclose()
            raise
        # One line for the process, not one per tool (a bridged MCP server may bring
        # dozens), nor a second one for the tools no manager confirmed: without a
        # manager, that is every tool of every start.
        unconfirmed = [e.tool_name for e in self.endpoints if not e.confirmed.is_set()]
        pending = ""
        if unconfirmed:
            which = "them" if len(unconfirmed) == len(self.endpoints) else ", ".join(unconfirmed)
            pending = (
                f" (no manager confirmed {which} yet: registering again when one announces itself)"
            )
        logger.info(
            "serving %d tool(s) on %s: %s%s",
            len(self.endpoints),
            self.messager.url,
            ", ".join(e.tool_name for e in self.endpoints),
            pending,
        )

    async def _drop_refused(self, refused: list[ToolEndpoint]) -> None:
        """Leave out the tools a manager refused; the others serve on.

        One refused tool (a name another process serves with another schema, a schema
        too large, one tool past the manager's ``max_tools_per_client``) must not take
        down the process's other tools. Each refusal is logged with its reason.

        Raises:
            RegistrationError: Every tool was refused: there is nothing to serve.

        """
        if len(refused) == len(self.endpoints):
            raise RegistrationError(
                "; ".join(f"tool {e.tool_name!r}: {e.refusal}" for e in refused)
            )
        for endpoint in refused:
            logger.warning(
                "tool %r is not served: its registration was refused: %s",
                endpoint.tool_name,
                endpoint.refusal,
            )
            self.refused[endpoint.tool_name] = endpoint.refusal or ""
        dropped = {id(endpoint) for endpoint in refused}
        self.endpoints[:] = [e for e in self.endpoints if id(e) not in dropped]
        # Refused, so never admitted: there is nothing to unregister.
        await asyncio.gather(
            *(endpoint.stop(grace_period=0, announce=False) for endpoint in refused),
            return_exceptions=True,
        )

    async def aclose(self) -> None:
        """Unregister every tool, let in-flight calls finish, and disconnect."""
        if not self._started:
            return
        self._started = False
        if self.watchdog is not None:
            self.watchdog.stop()
        await asyncio.gather(
            *(endpoint.stop(grace_period=self.grace_period) for endpoint in self.endpoints),
            return_exceptions=True,
        )
        self.endpoints.clear()
        if self._owns_messager:
            if self.messager.is_connected():
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(2):
                        await self.messager.publish(
                            registration_topic(self.topics, self.messager),
                            ClientOfflineMessage(source=self.messager.client_id),
                        )
            await self.messager.disconnect()

    def stop(self) -> None:
        """Ask :meth:`run` to shut down (safe to call from a signal handler)."""
        self._stop.set()

    async def run(
        self,
        *,
        handle_signals: bool = True,
        task_status: anyio.abc.TaskStatus[Any] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve until :meth:`stop`, SIGTERM or SIGINT; then shut down cleanly.

        ``task_status.started()`` is signalled once every tool is registered,
        so ``await task_group.start(service.run)`` returns when calls can be made.
        """
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(sig, self.stop)
                    installed.append(sig)
        try:
            await self.start()
            task_status.started(self)
            await self._stop.wait()
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            with anyio.CancelScope(shield=True):
                await self.aclose()


BROKER_VARIABLE = "ARGENTIC_TOOLS_BROKER"
"""Environment variable with the default broker of every command."""

TOPIC_PREFIX_VARIABLE = "ARGENTIC_TOOLS_TOPIC_PREFIX"
"""Environment variable with the default topic prefix of every command."""


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--broker``, ``--topic-prefix``, TLS and ``--log-level`` options to ``parser``."""
    parser.add_argument(
        "--broker",
        default=os.environ.get(BROKER_VARIABLE) or "mqtt://127.0.0.1:1883",
        help=f"broker URL, mqtt://[user:pass@]host:port, mqtts://... or host:port; the "
        "nodes of a cluster separated by commas (tried in turn, with fail-over); "
        f"${BROKER_VARIABLE} sets the default",
    )
    parser.add_argument(
        "--topic-prefix",
        default=os.environ.get(TOPIC_PREFIX_VARIABLE) or None,
        help=f"prefix for all protocol topics; ${TOPIC_PREFIX_VARIABLE} sets the default",
    )
    parser.add_argument("--ca-file", default=None, help="CA certificate for mqtts:// brokers")
    parser.add_argument("--cert-file", default=None, help="client certificate (mutual TLS)")
    parser.add_argument("--key-file", default=None, help="client key (mutual TLS)")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")


def tls_params_from(args: argparse.Namespace) -> dict[str, Any] | None:
    """TLS settings from parsed ``add_connection_arguments`` options (None when unset)."""
    params = {
        key: value
        for key, value in (
            ("ca_certs", args.ca_file),
            ("certfile", args.cert_file),
            ("keyfile", args.key_file),
        )
        if value
    }
    return params or None


def add_service_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--max-concurrency``, ``--grace-period``, ``--tool-id``, ``--session``, ..."""
    parser.add_argument(
        "--max-concurrency", type=int, default=64, help="calls served at once per tool"
    )
    parser.add_argument(
        "--grace-period",
        type=float,
        default=10.0,
        help="seconds in-flight calls get to finish on shutdown",
    )
    parser.add_argument(
        "--tool-id",
        action="append",
        default=[],
        metavar="NAME=ID",
        help="pin a tool's id (for broker ACLs); repeatable",
    )
    parser.add_argument(
        "--session",
        choices=("clean", "persistent", "persistent-keep"),
        default="clean",
        help="MQTT session: clean (nothing kept while disconnected), persistent (the "
        "broker queues tasks while disconnected; a fail-over to another node starts a "
        "fresh session there), persistent-keep (the session is resumed on any node: "
        "for clusters that replicate sessions, like RabbitMQ with quorum queues)",
    )
    parser.add_argument(
        "--result-retention",
        type=float,
        default=DEFAULT_RESULT_RETENTION,
        metavar="SECONDS",
        help="keep each finished call's reply this long at least, for a caller that comes "
        "back (default: %(default)s)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve Prometheus metrics on 127.0.0.1:PORT/metrics (needs the [otel] extra; "
        "0 picks a free port)",
    )


def service_from_args(
    args: argparse.Namespace, tools: Sequence[Any], **options: Any
) -> ToolService:
    """A ToolService for ``tools`` from parsed connection and service options.

    Raises:
        ValueError: A ``--tool-id`` is not ``NAME=ID``.

    """
    pinned = {}
    for item in args.tool_id:
        name, sep, tool_id = item.partition("=")
        if not sep:
            raise ValueError(f"--tool-id expects NAME=ID, got {item!r}")
        pinned[name] = tool_id
    return ToolService(
        args.broker,
        tools,
        topic_prefix=args.topic_prefix,
        max_concurrency=args.max_concurrency,
        grace_period=args.grace_period,
        tool_ids=pinned,
        debug=args.debug,
        tls_params=tls_params_from(args),
        persistent_session=args.session != "clean",
        fresh_session_on_failover=args.session != "persistent-keep",
        metrics_port=args.metrics_port,
        result_retention=args.result_retention,
        **options,
    )


def serve_main(
    tools: Sequence[Any],
    argv: Sequence[str] | None = None,
    *,
    prog: str | None = None,
    description: str | None = None,
) -> None:
    """Command line for a tool process: parse options and serve ``tools`` until stopped.

    Exits with status 0 after SIGTERM/SIGINT, and with one clear line on
    stderr and status 2 when the broker cannot be reached.
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_connection_arguments(parser)
    add_service_arguments(parser)
    parser.add_argument("--debug", action="store_true", help="send tracebacks with failures")
    add_log_format_argument(parser)
    args = parser.parse_args(argv)
    try:
        level = parse_log_level(args.log_level)
    except ValueError as exc:
        parser.error(str(exc))
    configure_logging(level, args.log_format)
    try:
        service = service_from_args(args, tools)
        asyncio.run(service.run())
    except BrokerUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except (ToolsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        pass

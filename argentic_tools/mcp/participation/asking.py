"""A tool's questions and log records, put to the MCP client of the call (handshake era).

A tool asks its caller (``context.elicit``, ``context.sample``, ``context.list_roots``)
and logs to it (``context.log``); behind the gateway, that caller is the MCP client.
In the handshake era (2025-11-25 and older) the gateway asks the client directly, as a
request of its own tied to the ``tools/call`` being served, so that over streamable
HTTP it rides that call's response stream:

- an elicitation: ``elicitation/create``, the client's ``ElicitResult`` back to the tool;
- a completion: ``sampling/createMessage``, its ``CreateMessageResult`` back;
- the caller's roots: ``roots/list``, its ``ListRootsResult`` back;
- a log record: ``notifications/message`` (level, data, logger), when at or above the
  level the client chose with ``logging/setLevel`` on its connection (every level
  until it chooses one: the spec leaves that choice to the server).

A question goes to the client only when it declared the capability (``elicitation``,
``sampling``, ``roots``); otherwise the call has no handler for it, and a tool that
asks anyway gets :class:`~argentic_tools.AskNotSupportedError` at once. A client that
answers with an error (it refused, or it has no such handler after all) fails the
question: the tool gets :class:`~argentic_tools.AskError` with the client's message.

The shapes shared with the 2026-07-28 revision, where the same questions travel in
``input_required`` results instead (:mod:`argentic_tools.mcp.participation.input_required`), are
here too: :func:`input_request` builds the MCP request of a question.
"""

import logging
import weakref
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel

from ..._agent.calls.participation.handlers import CallerHandlers, CallRef
from ..._protocol.participation import (
    MCP_LOG_LEVELS,
    ElicitRequest,
    LogRecord,
    McpLogLevel,
    SampleRequest,
)
from .. import _internals

logger = logging.getLogger("argentic_tools.mcp")

ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
ROOTS = "roots/list"

CAPABILITY_OF = {ELICIT: "elicitation", SAMPLE: "sampling", ROOTS: "roots"}
"""The client capability each kind of question needs."""

KEY_META = "argentic/input_key"
"""``_meta`` key of a question naming itself (its key in an ``input_required`` result)."""


def input_request(method: str, params: Mapping[str, Any] | None) -> types.InputRequest:
    """The MCP request of a question, ``params`` in MCP's (camelCase) shape.

    ``method`` is ``elicitation/create``, ``sampling/createMessage`` or ``roots/list``.

    Raises:
        pydantic.ValidationError: ``params`` is not that method's params.

    """
    message: dict[str, Any] = {"method": method}
    if params:
        message["params"] = dict(params)
    if method == ELICIT:
        return types.ElicitRequest.model_validate(message, by_name=False)
    if method == SAMPLE:
        return types.CreateMessageRequest.model_validate(message, by_name=False)
    return types.ListRootsRequest.model_validate(message, by_name=False)


def wire(request: ElicitRequest | SampleRequest) -> dict[str, Any]:
    """A tool's question as MCP params (camelCase, nothing unset, without its key)."""
    params = request.model_dump(mode="json", by_alias=True, exclude_none=True)
    meta = params.pop("_meta", None)
    if isinstance(meta, Mapping):
        rest = {name: value for name, value in meta.items() if name != KEY_META}
        if rest:
            params["_meta"] = rest
    return params


def key_hint(request: BaseModel | None) -> str | None:
    """The key a tool gave its question (``_meta["argentic/input_key"]``), if any."""
    meta = getattr(request, "meta", None)
    if isinstance(meta, Mapping):
        key = meta.get(KEY_META)
        if isinstance(key, str) and key:
            return key
    return None


def declared(capabilities: types.ClientCapabilities | None) -> frozenset[str]:
    """The questions a client can answer, by method, from the capabilities it declared."""
    if capabilities is None:
        return frozenset()
    return frozenset(
        method
        for method, capability in CAPABILITY_OF.items()
        if getattr(capabilities, capability) is not None
    )


def at_least(level: McpLogLevel | None) -> frozenset[McpLogLevel]:
    """The log levels at or above ``level`` (every level for None)."""
    if level is None:
        return frozenset(MCP_LOG_LEVELS)
    return frozenset(MCP_LOG_LEVELS[MCP_LOG_LEVELS.index(level) :])


def log_params(record: LogRecord) -> types.LoggingMessageNotificationParams:
    """A tool's log record as MCP's ``notifications/message`` params."""
    return types.LoggingMessageNotificationParams(
        level=record.level, data=record.mcp_data(), logger=record.logger
    )


class LogLevels:
    """The level each handshake-era connection chose with ``logging/setLevel``.

    Kept per connection (stdio, or a streamable HTTP session) and forgotten with it.
    """

    def __init__(self) -> None:
        self._levels: weakref.WeakKeyDictionary[Any, McpLogLevel] = weakref.WeakKeyDictionary()

    def set(self, ctx: ServerRequestContext[Any], level: McpLogLevel) -> None:
        """``logging/setLevel`` from the connection of ``ctx``."""
        self._levels[_internals.connection_of(ctx)] = level

    def allowed(self, ctx: ServerRequestContext[Any]) -> frozenset[McpLogLevel]:
        """The levels sent to the connection of ``ctx``."""
        return at_least(self._levels.get(_internals.connection_of(ctx)))


class HandshakeAsker:
    """The handlers of one handshake-era ``tools/call``.

    The tool's questions and log records go to the client as requests and
    notifications tied to that call.
    """

    def __init__(self, ctx: ServerRequestContext[Any], levels: LogLevels) -> None:
        self.ctx = ctx
        self.levels = levels
        self._related = ServerMessageMetadata(related_request_id=ctx.request_id)

    def handlers(self) -> CallerHandlers:
        """The call's handlers: one for each question the client can answer, and ``on_log``."""
        can = declared(self.ctx.session.client_capabilities)
        return CallerHandlers(
            on_elicit=self.on_elicit if ELICIT in can else None,
            on_sample=self.on_sample if SAMPLE in can else None,
            on_log=self.on_log,
            on_roots=self.on_roots if ROOTS in can else None,
        )

    async def on_elicit(self, request: ElicitRequest, call: CallRef) -> dict[str, Any]:
        """``elicitation/create`` to the client."""
        return await self._ask(input_request(ELICIT, wire(request)), types.ElicitResult)

    async def on_sample(self, request: SampleRequest, call: CallRef) -> dict[str, Any]:
        """``sampling/createMessage`` to the client."""
        asked = input_request(SAMPLE, wire(request))
        return await self._ask(asked, types.CreateMessageResult)

    async def on_roots(self, call: CallRef) -> dict[str, Any]:
        """``roots/list`` to the client."""
        return await self._ask(input_request(ROOTS, None), types.ListRootsResult)

    async def on_log(self, record: LogRecord, call: CallRef) -> None:
        """``notifications/message`` to the client, at the level it chose."""
        if record.level not in self.levels.allowed(self.ctx):
            return
        notification = types.LoggingMessageNotification(params=log_params(record))
        await self.ctx.session.send_notification(
            notification, related_request_id=self.ctx.request_id
        )

    async def _ask(self, request: types.InputRequest, result: type[BaseModel]) -> dict[str, Any]:
        answer = await self.ctx.session.send_request(request, result, metadata=self._related)
        return answer.model_dump(mode="json", by_alias=True, exclude_none=True)

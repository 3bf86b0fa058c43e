"""A bridged MCP server's requests and log records, taken to the caller of their call.

The bridge declares to the server it bridges what the bus lets its callers do:
elicitation (form mode), sampling, and, when the bridge was given roots, roots. The
server's requests then come to :class:`ServerRequests`' callbacks, which hand each
to the caller of the call it belongs to (see :mod:`argentic_tools.mcp.bridge.origins`):

- ``elicitation/create`` and ``sampling/createMessage``: their params go unchanged
  to ``context.ask`` of the call, as an :class:`~argentic_tools.ElicitRequest` or
  :class:`~argentic_tools.SampleRequest`; the caller's answer goes back as the MCP
  result. When there is no answer the server gets a JSON-RPC error naming why, as an
  MCP client that cannot answer does: ``-32600`` (invalid request) when the request
  belongs to no call or the call's caller has no handler for it, ``-32603`` (internal
  error) when the caller's handler failed.
- ``roots/list``: answered by the bridge from its roots (``--root``), whatever call
  is in flight. Roots belong to the MCP session, and the bridge's one session serves
  all its callers: a server that keeps the roots it was told would use one caller's
  roots for another's calls, so callers are not asked.
- ``notifications/message``: a record that belongs to a call goes to that call's
  caller (``on_log``), when it has a handler; others are dropped with a debug line
  in the bridge's log, never given to another caller.
"""

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.client.session import ClientRequestContext
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from ..._errors import AskError, AskNotSupportedError
from ..._protocol.participation import ElicitRequest, LogRecord, SampleRequest
from .origins import ORIGIN, StreamWrapper

CLIENT_CAPABILITIES = types.CLIENT_CAPABILITIES_META_KEY

logger = logging.getLogger("argentic_tools.mcp")

WHO = "argentic-tools bridge"
"""How the bridge names itself in the errors it answers a server with."""


class ServerRequests:
    """The MCP client callbacks of a bridge.

    Args:
        server: The server, for log lines.
        roots: The roots the bridge answers ``roots/list`` with.

    """

    def __init__(self, server: str, roots: Sequence[types.Root] = ()) -> None:
        self.server = server
        self.roots = list(roots)

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """``elicitation/create``: the caller's answer (``context`` is not needed)."""
        if isinstance(params, types.ElicitRequestURLParams):
            return _refused(
                "URL-mode elicitation cannot reach a caller on the bus (it was not declared)"
            )
        shape = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        answer = await self._ask("elicitation", ElicitRequest.model_validate(shape))
        if isinstance(answer, types.ErrorData):
            return answer
        try:
            return types.ElicitResult.model_validate(answer)
        except ValidationError as exc:
            return _unusable(exc)

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        """``sampling/createMessage``: a completion of the caller's model."""
        shape = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        try:
            request = SampleRequest.model_validate(shape)
        except ValidationError as exc:
            return types.ErrorData(
                code=types.INVALID_PARAMS, message=f"{WHO}: cannot forward this request: {exc}"
            )
        answer = await self._ask("sampling", request)
        if isinstance(answer, types.ErrorData):
            return answer
        try:
            if isinstance(answer.get("content"), list):
                return types.CreateMessageResultWithTools.model_validate(answer)
            return types.CreateMessageResult.model_validate(answer)
        except ValidationError as exc:
            return _unusable(exc)

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        """``roots/list``: the bridge's roots."""
        return types.ListRootsResult(roots=self.roots)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        """``notifications/message``: to the caller of the record's call."""
        origin = ORIGIN.get()
        call = origin.call
        if call is None:
            logger.debug(
                "log record of %s given to no caller (%s): %s %s",
                self.server,
                origin.why,
                params.level,
                params.data,
            )
            return
        if not call.caller_can("log"):
            return
        record = LogRecord.from_mcp(params.level, params.data, params.logger)
        call.log(record.level, record.message, record.data, logger=record.logger)

    async def _ask(
        self, what: str, request: ElicitRequest | SampleRequest
    ) -> dict[str, Any] | types.ErrorData:
        """The caller's answer in MCP's shape, or the error the server gets instead."""
        origin = ORIGIN.get()
        call = origin.call
        if call is None:
            return _refused(
                f"cannot tell which call this {what} request belongs to, so no caller"
                f" can answer it: {origin.why}"
            )
        try:
            answer = await call.ask(request)
        except AskNotSupportedError as exc:
            return _refused(f"the caller of {call.tool_name} cannot answer {what} requests: {exc}")
        except AskError as exc:
            return types.ErrorData(
                code=types.INTERNAL_ERROR,
                message=f"{WHO}: the caller of {call.tool_name} did not answer: {exc}",
            )
        shape: dict[str, Any] = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
        return shape


def root_from(text: str) -> types.Root:
    """A root from a path (made absolute) or a ``file://`` URI, named after its last part.

    Raises:
        ValueError: A URI of another scheme (MCP's roots are ``file://`` URIs).

    """
    if "://" in text:
        if not text.startswith("file://"):
            raise ValueError(f"{text!r}: a root is a path or a file:// URI")
        name = text.rstrip("/").rsplit("/", 1)[-1] or None
        return types.Root(uri=text, name=name)
    path = Path(text).expanduser().resolve()
    return types.Root(uri=path.as_uri(), name=path.name or str(path))


def _refused(why: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=f"{WHO}: {why}")


def _unusable(exc: ValidationError) -> types.ErrorData:
    return types.ErrorData(
        code=types.INTERNAL_ERROR, message=f"{WHO}: the caller's answer is not MCP's shape: {exc}"
    )


def declared(message: types.JSONRPCMessage) -> types.JSONRPCMessage:
    """``message`` as the bridge sends it: its client capabilities say what the bridge forwards.

    The MCP SDK declares URL-mode elicitation with form mode, and roots that may
    change; the bridge forwards form mode only (a caller's answer is a form's), and its
    roots never change. The capabilities are in ``initialize`` (handshake era) or in
    each request's ``_meta`` (2026-07-28).
    """
    if not isinstance(message, types.JSONRPCRequest) or not message.params:
        return message
    params = dict(message.params)
    if message.method == "initialize" and isinstance(params.get("capabilities"), dict):
        params["capabilities"] = _declared(params["capabilities"])
    meta = params.get("_meta")
    if isinstance(meta, dict) and isinstance(meta.get(CLIENT_CAPABILITIES), dict):
        params["_meta"] = {**meta, CLIENT_CAPABILITIES: _declared(meta[CLIENT_CAPABILITIES])}
    if params == message.params:
        return message
    return message.model_copy(update={"params": params})


def _declared(capabilities: dict[str, Any]) -> dict[str, Any]:
    capabilities = dict(capabilities)
    if "elicitation" in capabilities:
        capabilities["elicitation"] = {"form": {}}
    if "roots" in capabilities:
        capabilities["roots"] = {"listChanged": False}
    return capabilities


@contextlib.asynccontextmanager
async def declaring(
    transport: AbstractAsyncContextManager[tuple[Any, Any]],
) -> AsyncIterator[tuple[Any, "DeclaringSendStream"]]:
    """``transport`` whose requests go out :func:`declared`; its read stream unchanged."""
    async with transport as (read_stream, write_stream):
        yield read_stream, DeclaringSendStream(write_stream)


class DeclaringSendStream(StreamWrapper):
    """A transport's write stream whose requests go out :func:`declared`.

    ``send`` runs in the sender's task, so a transport that keeps the sender's context
    with each message still gets the right one.
    """

    async def send(self, item: SessionMessage) -> None:
        """Send ``item``, its capabilities as the bridge declares them."""
        message = declared(item.message)
        if message is not item.message:
            item = SessionMessage(message, metadata=item.metadata)
        await self._inner.send(item)

"""One entry point for every received payload: :func:`parse_message`.

A ``type`` string selects the model (tasks, results and errors all carry ``"TASK"``, and
are told apart by their ``status`` and ``error``); payloads over the size limit, invalid
JSON, unknown types and missing required fields become a :class:`ProtocolError` whose
message says which.
"""

from typing import Annotated, Any, Union

from pydantic import BaseModel, Discriminator, Tag, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from .._errors import PayloadTooLargeError, ProtocolError
from .fleet_messages import (
    ClientOfflineMessage,
    ManagerOnlineMessage,
    RegisterToolMessage,
    StatsRequestMessage,
    ToolPingMessage,
    ToolPongMessage,
    ToolRegisteredMessage,
    ToolRegistrationErrorMessage,
    ToolStatsMessage,
    ToolUnregisteredMessage,
    UnregisterToolMessage,
)
from .messages import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    BaseMessage,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    ToolCancelMessage,
    ToolCreditMessage,
    ToolPartialMessage,
    ToolProgressMessage,
)
from .participation import ToolAnswerMessage, ToolAskMessage, ToolLogMessage


def _discriminate(value: Any) -> str | None:
    if isinstance(value, BaseModel):
        value = value.__dict__
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind == "TASK":
        if "status" not in value:
            return "TASK"
        status = value.get("status")
        if isinstance(status, str) and status.lower() in ("success", "completed"):
            return "TASK_RESULT"
        return "TASK_ERROR" if isinstance(value.get("error"), str) else "TASK_RESULT"
    return kind if isinstance(kind, str) else None


AnyMessage = Annotated[
    Union[  # noqa: UP007 - tagged members read best as a Union
        Annotated[RegisterToolMessage, Tag("REGISTER_TOOL")],
        Annotated[ToolRegisteredMessage, Tag("TOOL_REGISTERED")],
        Annotated[ToolRegistrationErrorMessage, Tag("TOOL_REGISTRATION_ERROR")],
        Annotated[UnregisterToolMessage, Tag("UNREGISTER_TOOL")],
        Annotated[ToolUnregisteredMessage, Tag("TOOL_UNREGISTERED")],
        Annotated[ClientOfflineMessage, Tag("CLIENT_OFFLINE")],
        Annotated[ManagerOnlineMessage, Tag("MANAGER_ONLINE")],
        Annotated[StatsRequestMessage, Tag("STATS_REQUEST")],
        Annotated[ToolStatsMessage, Tag("TOOL_STATS")],
        Annotated[ToolPingMessage, Tag("TOOL_PING")],
        Annotated[ToolPongMessage, Tag("TOOL_PONG")],
        Annotated[ToolCancelMessage, Tag("TOOL_CANCEL")],
        Annotated[ToolCreditMessage, Tag("TOOL_CREDIT")],
        Annotated[ToolProgressMessage, Tag("TOOL_PROGRESS")],
        Annotated[ToolPartialMessage, Tag("TOOL_PARTIAL")],
        Annotated[ToolAskMessage, Tag("TOOL_ASK")],
        Annotated[ToolAnswerMessage, Tag("TOOL_ANSWER")],
        Annotated[ToolLogMessage, Tag("TOOL_LOG")],
        Annotated[TaskMessage, Tag("TASK")],
        Annotated[TaskResultMessage, Tag("TASK_RESULT")],
        Annotated[TaskErrorMessage, Tag("TASK_ERROR")],
    ],
    Discriminator(_discriminate),
]
_ADAPTER: TypeAdapter[AnyMessage] = TypeAdapter(AnyMessage)


def parse_message(payload: bytes | str, max_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES) -> BaseMessage:
    """Parse one MQTT payload into its message model.

    Args:
        payload: The raw payload (UTF-8 JSON).
        max_bytes: Payloads longer than this are refused before parsing.

    Returns:
        The model selected by the payload's ``type`` (and, for ``"TASK"``, by
        whether it carries a status and an error).

    Raises:
        PayloadTooLargeError: The payload is longer than ``max_bytes``.
        ProtocolError: The payload is not JSON, not an object, has an unknown
            type, or lacks a required field; the message says which.

    """
    if len(payload) > max_bytes:
        raise PayloadTooLargeError(f"payload of {len(payload)} bytes exceeds {max_bytes} bytes")
    try:
        message: BaseMessage = _ADAPTER.validate_json(payload)
    except PydanticValidationError as exc:
        raise ProtocolError(_summarise(exc)) from None
    return message


def _summarise(exc: PydanticValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False)[0]
    kind = first["type"]
    where = ".".join(str(part) for part in first["loc"])
    if kind == "json_invalid":
        return f"not valid JSON ({first['msg']})"
    if kind in ("union_tag_not_found", "union_tag_invalid"):
        return "unknown or missing message type"
    if kind == "model_attributes_type" or kind == "model_type":
        return "payload is not a JSON object"
    return f"{where or 'message'}: {first['msg']}"

"""A tool's questions to its caller, built and their answers checked.

:class:`~argentic_tools.ToolContext` asks through the call's
:class:`~.asking.CallerLine`; here are the pure parts: the request in MCP's shape
from what the tool wrote, and the answer read back into its typed model. An answer is
the caller's claim like any message: an accepted elicitation whose content does not
match the requested schema, or a malformed completion, is refused with
:class:`~argentic_tools.AskError` naming what is wrong.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Required, TypedDict, Unpack

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from ..._errors import AskError
from ..._protocol.participation import (
    ElicitRequest,
    ElicitResult,
    Root,
    RootsResult,
    SampleRequest,
    SampleResult,
    SamplingMessage,
)
from ..._protocol.validation import SchemaValidator, describe_problems

CONFIRM_FIELD = "confirm"
"""The field of the yes/no question :func:`confirm_request` asks."""


def elicit_request(message: str, schema: "Mapping[str, Any] | type[BaseModel]") -> ElicitRequest:
    """The question ``message`` with the answer's shape ``schema`` (a JSON Schema or a model).

    Raises:
        ValueError: ``schema`` is not a JSON Schema object.

    """
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        shape: dict[str, Any] = schema.model_json_schema()
    else:
        shape = dict(schema)
    if shape.get("type") != "object":
        raise ValueError(
            f"an elicitation's schema must be a JSON Schema object "
            f'({{"type": "object", "properties": ...}}), got {shape!r:.80}'
        )
    SchemaValidator(shape)  # raises ValueError for a schema that is not one
    return ElicitRequest(message=message, requested_schema=shape)


def confirm_request(question: str) -> ElicitRequest:
    """A yes/no question for a person: one required boolean, :data:`CONFIRM_FIELD`."""
    return ElicitRequest(
        message=question,
        requested_schema={
            "type": "object",
            "properties": {
                CONFIRM_FIELD: {
                    "type": "boolean",
                    "title": "Confirm",
                    "description": question,
                }
            },
            "required": [CONFIRM_FIELD],
        },
    )


def confirmed(result: ElicitResult) -> bool:
    """True only when the person accepted and said yes."""
    return result.accepted and result.data.get(CONFIRM_FIELD) is True


def elicit_result(request: ElicitRequest, answer: Mapping[str, Any]) -> ElicitResult:
    """The caller's answer to ``request``, checked against its schema when accepted.

    Raises:
        AskError: The answer is malformed, or accepted content violates the schema.

    """
    try:
        result = ElicitResult.model_validate(answer)
    except PydanticValidationError as exc:
        raise AskError(f"the caller's answer is malformed: {_first(exc)}") from None
    if result.accepted:
        problems = SchemaValidator(request.requested_schema).problems(result.content or {})
        if problems:
            raise AskError(
                f"the caller's answer does not match the question's "
                f"schema: {describe_problems(problems)}"
            )
    elif result.content is not None:
        result = result.model_copy(update={"content": None})
    return result


class SampleOptions(TypedDict, total=False):
    """What a completion is asked with, besides the conversation (see ``context.sample``)."""

    max_tokens: Required[int]
    system: str | None
    temperature: float | None
    stop_sequences: Sequence[str] | None
    model_preferences: Mapping[str, Any] | None
    include_context: str | None
    metadata: Mapping[str, Any] | None


def sample_request(
    messages: "str | Sequence[SamplingMessage | Mapping[str, Any] | str]",
    **options: Unpack[SampleOptions],
) -> SampleRequest:
    """A completion to ask of the caller's model.

    ``messages`` is the conversation: one string (a user message), or messages as
    :class:`SamplingMessage`, MCP mappings (``{"role": ..., "content": ...}``) or
    strings (user messages).

    Raises:
        ValueError: A message or parameter is malformed.

    """
    if isinstance(messages, str):
        messages = [messages]
    conversation = [
        SamplingMessage(role="user", content=item) if isinstance(item, str) else item
        for item in messages
    ]
    fields: dict[str, Any] = {"messages": conversation, "max_tokens": options["max_tokens"]}
    stop, preferences, metadata = (
        options.get("stop_sequences"),
        options.get("model_preferences"),
        options.get("metadata"),
    )
    for name, value in (
        ("system_prompt", options.get("system")),
        ("temperature", options.get("temperature")),
        ("stop_sequences", None if stop is None else list(stop)),
        ("model_preferences", None if preferences is None else dict(preferences)),
        ("include_context", options.get("include_context")),
        ("metadata", None if metadata is None else dict(metadata)),
    ):
        if value is not None:
            fields[name] = value
    try:
        return SampleRequest.model_validate(fields)
    except PydanticValidationError as exc:
        raise ValueError(f"invalid sampling request: {_first(exc)}") from None


def sample_result(answer: Mapping[str, Any]) -> SampleResult:
    """The caller's completion, checked.

    Raises:
        AskError: The completion is malformed.

    """
    try:
        return SampleResult.model_validate(answer)
    except (PydanticValidationError, ValueError) as exc:
        why = _first(exc) if isinstance(exc, PydanticValidationError) else str(exc)
        raise AskError(f"the caller's completion is malformed: {why}") from None


def roots_result(answer: Mapping[str, Any]) -> list[Root]:
    """The caller's roots, checked.

    Raises:
        AskError: The answer is malformed.

    """
    try:
        return RootsResult.model_validate(answer).roots
    except PydanticValidationError as exc:
        raise AskError(f"the caller's roots are malformed: {_first(exc)}") from None


def _first(exc: PydanticValidationError) -> str:
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "answer"
    return f"{where}: {error['msg']}"

"""The exception tree of argentic-tools.

Every exception the library raises derives from :class:`ToolsError`. Where a
builtin category fits, the exception also inherits it, so ``except TimeoutError``
catches a tool timeout and ``except ConnectionError`` a broker failure::

    ToolsError
    ├── BrokerError ........................ (also ConnectionError)
    │   └── BrokerUnavailableError           the broker cannot be reached or refused us
    ├── ProtocolError                        a message on the wire is malformed
    │   └── PayloadTooLargeError             a payload exceeds the configured limit
    ├── ToolDefinitionError ................ (also TypeError) a tool cannot be built
    ├── RegistrationError                    the manager refused a registration
    ├── ToolUnavailableError ............... (also TimeoutError) wait_for_tool ran out of time
    ├── ToolError                            (in a tool) raise it to fail the call with a message
    ├── AskError                             (in a tool) the caller did not answer its question
    │   └── AskNotSupportedError             the caller cannot answer that kind of question
    └── ToolCallError                        one call did not succeed
        ├── ToolNotFoundError .............. (also LookupError)
        ├── ToolNotEnabledError              the thread's policy does not allow the tool
        ├── ValidationError ................ (also ValueError)
        │   ├── InputValidationError         arguments violate the tool's schema
        │   └── OutputValidationError        a result violates the tool's output schema
        ├── ToolExecutionError               the tool ran and reported a failure
        ├── ToolTimeoutError ............... (also TimeoutError)
        ├── ToolOfflineError                 the tool went away before answering
        ├── ToolCancelledError               the call was cancelled (manager.cancel, a tool's stop)
        └── StreamInterruptedError           streamed chunks were lost and cannot be recovered

``execute_tool`` never raises for a failed call: it returns a
:class:`~argentic_tools.TaskErrorMessage`. Call ``result.raise_for_status()``
to turn such a result into the matching :class:`ToolCallError`.
"""

from typing import Any


class ToolsError(Exception):
    """Base class of every exception raised by argentic-tools."""


class BrokerError(ToolsError, ConnectionError):
    """Talking to the MQTT broker failed."""


class BrokerUnavailableError(BrokerError):
    """The broker could not be reached, or it refused the connection."""


class ProtocolError(ToolsError):
    """A message on the wire does not follow the protocol."""


class PayloadTooLargeError(ProtocolError):
    """A payload is larger than the configured ``max_payload_bytes``."""


class ToolDefinitionError(ToolsError, TypeError):
    """A tool cannot be built from what its author wrote (signature, name, schema)."""


class RegistrationError(ToolsError):
    """A tool could not be registered with a manager."""


class ToolUnavailableError(ToolsError, TimeoutError):
    """``wait_for_tool`` ran out of time: no tool of that name (or id) registered.

    The message names the tool, the broker, the closest registered name and what
    is registered.
    """


class ToolCallError(ToolsError):
    """A single tool call did not succeed.

    Attributes:
        tool_name: Name of the tool that was called.
        task_id: Id of the task the call ran as.
        code: Machine-readable error code, as carried on the wire.
        details: Structured details (for validation errors: a list of problems).

    """

    code = "execution_error"

    def __init__(
        self,
        message: str,
        *,
        tool_name: str = "",
        task_id: str = "",
        details: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.tool_name = tool_name
        self.task_id = task_id
        self.details = details


class ToolNotFoundError(ToolCallError, LookupError):
    """No tool with that name or id is registered."""

    code = "not_found"


class ToolNotEnabledError(ToolCallError):
    """The tool exists but is not enabled for the calling thread."""

    code = "not_enabled"


class ValidationError(ToolCallError, ValueError):
    """Data did not match a tool's JSON Schema.

    ``details`` is a list of ``{"path": "$.field", "message": ..., "expected": ...}``
    dictionaries, one per problem.
    """

    code = "validation_error"


class InputValidationError(ValidationError):
    """The arguments of a call violate the tool's argument schema."""

    code = "invalid_arguments"


class OutputValidationError(ValidationError):
    """A successful result violates the tool's declared output schema."""

    code = "invalid_output"


class ToolExecutionError(ToolCallError):
    """The tool ran and reported a failure (an exception in the tool)."""

    code = "execution_error"


class ToolTimeoutError(ToolCallError, TimeoutError):
    """The tool did not answer before the call's deadline."""

    code = "timeout"


class ToolOfflineError(ToolCallError):
    """The tool disconnected or unregistered while the call was pending."""

    code = "tool_offline"


class ToolCancelledError(ToolCallError):
    """The call was cancelled before it finished (``manager.cancel``, or the tool stopped)."""

    code = "cancelled"


class StreamInterruptedError(ToolCallError):
    """A streamed result is broken: chunks were lost, or its caller left too many unread.

    Lost in a broker outage, or a missing chunk did not come in time; or the caller
    left more chunks unread than a stream holds. ``details`` say which.
    """

    code = "stream_interrupted"


class AskError(ToolsError):
    """Raised in a tool: its caller did not answer a question (``elicit``, ``sample``).

    The caller's handler failed (the message says why), its answer was malformed, or
    the call ended meanwhile. Left uncaught, it fails the call with that message.
    """


class AskNotSupportedError(AskError):
    """Raised in a tool at once: its caller cannot answer this kind of question.

    The caller gave no handler for it (``on_elicit``, ``on_sample``), it is an MCP client
    that declared no such capability, or an older peer (argentic 0.16) that knows no
    questions. Check ``context.caller_can(...)`` first to offer another way. Left
    uncaught, the call fails with ``error_code`` ``ask_not_supported`` and ``details``
    ``{"kind": kind}``, so a gateway can tell its client which capability was missing.
    """

    def __init__(self, message: str, *, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        """The kind of question: ``elicit``, ``sample`` or ``roots``."""


class ToolError(ToolsError):
    """Raise this inside a tool to fail the call with a clear message.

    Any exception fails the call; ``ToolError`` marks an expected failure
    (bad input, an unavailable upstream) so that no traceback is logged.

    Example:
        >>> raise ToolError("division by zero in '1/0'")  # doctest: +SKIP

    """

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


ERROR_CODES: dict[str, type[ToolCallError]] = {
    cls.code: cls
    for cls in (
        ToolNotFoundError,
        ToolNotEnabledError,
        InputValidationError,
        OutputValidationError,
        ToolExecutionError,
        ToolTimeoutError,
        ToolOfflineError,
        ToolCancelledError,
        StreamInterruptedError,
    )
}
"""Maps the ``error_code`` carried by a result to the exception it stands for."""

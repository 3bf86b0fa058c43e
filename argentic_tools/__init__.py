"""Tools as MQTT microservices for LLM agents.

Tools run in their own processes and register over MQTT; a :class:`ToolManager`
in the agent's process discovers them and calls them with deadlines, typed
errors and Last-Will liveness.
"""

from importlib.metadata import PackageNotFoundError, version

from ._errors import (
    BrokerError,
    BrokerUnavailableError,
    InputValidationError,
    OutputValidationError,
    PayloadTooLargeError,
    ProtocolError,
    RegistrationError,
    ToolCallError,
    ToolDefinitionError,
    ToolError,
    ToolExecutionError,
    ToolNotEnabledError,
    ToolNotFoundError,
    ToolOfflineError,
    ToolsError,
    ToolTimeoutError,
    ValidationError,
)
from ._logging import LogLevel
from ._manager import ToolManager
from ._messages import (
    PROTOCOL_VERSION,
    BaseMessage,
    CallContext,
    ClientOfflineMessage,
    ManagerOnlineMessage,
    RegisterToolMessage,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    TaskStatus,
    ToolCallRequest,
    ToolRegisteredMessage,
    ToolRegistrationErrorMessage,
    ToolResult,
    ToolSpec,
    ToolUnregisteredMessage,
    UnregisterToolMessage,
    parse_message,
)
from ._pipeline import (
    AllToolsEnabled,
    InMemoryRecorder,
    JsonLinesRecorder,
    Observation,
    ObservationRecorder,
    ThreadToolPolicy,
    ToolPolicy,
)
from ._registry import ToolInfo
from ._service import ToolService, serve_main
from ._tool import BaseTool, FunctionTool, ToolContext, tool
from ._topics import Topics
from ._transport import BrokerURL, IncomingMessage, Messager

try:
    __version__ = version("argentic-tools")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "PROTOCOL_VERSION",
    "AllToolsEnabled",
    "BaseMessage",
    "BaseTool",
    "BrokerError",
    "BrokerURL",
    "BrokerUnavailableError",
    "CallContext",
    "ClientOfflineMessage",
    "FunctionTool",
    "InMemoryRecorder",
    "IncomingMessage",
    "InputValidationError",
    "JsonLinesRecorder",
    "LogLevel",
    "ManagerOnlineMessage",
    "Messager",
    "Observation",
    "ObservationRecorder",
    "OutputValidationError",
    "PayloadTooLargeError",
    "ProtocolError",
    "RegisterToolMessage",
    "RegistrationError",
    "TaskErrorMessage",
    "TaskMessage",
    "TaskResultMessage",
    "TaskStatus",
    "ThreadToolPolicy",
    "ToolCallError",
    "ToolCallRequest",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolExecutionError",
    "ToolInfo",
    "ToolManager",
    "ToolNotEnabledError",
    "ToolNotFoundError",
    "ToolOfflineError",
    "ToolPolicy",
    "ToolRegisteredMessage",
    "ToolRegistrationErrorMessage",
    "ToolResult",
    "ToolService",
    "ToolSpec",
    "ToolTimeoutError",
    "ToolUnregisteredMessage",
    "ToolsError",
    "Topics",
    "UnregisterToolMessage",
    "ValidationError",
    "__version__",
    "parse_message",
    "serve_main",
    "tool",
]

"""Tools as MQTT microservices for LLM agents.

Tools run in their own processes and register over MQTT; a :class:`ToolManager`
in the agent's process discovers them and calls them with deadlines, typed
errors and Last-Will liveness.
"""

from importlib import metadata as _metadata

from ._agent.calls.handlers import (
    CallerHandlers,
    CallRef,
    ElicitHandler,
    HandlerKeywords,
    LogHandler,
    RootsHandler,
    SampleHandler,
)
from ._agent.calls.options import BatchKeywords, CallKeywords
from ._agent.calls.progress import BatchProgressCallback, ProgressCallback
from ._agent.calls.streams import ToolStream
from ._agent.fleet.exports import ExportFormat
from ._agent.fleet.info import ToolInfo
from ._agent.manager import ToolManager
from ._agent.policy import AllToolsEnabled, ThreadToolPolicy, ToolPolicy
from ._agent.records.history import SqliteRecorder
from ._agent.records.journal import CallJournal, JournaledCall
from ._agent.records.observations import (
    InMemoryRecorder,
    JsonLinesRecorder,
    Observation,
    ObservationRecorder,
)
from ._agent.records.sqlite_journal import SqliteJournal
from ._broker import EmbeddedBroker
from ._errors import (
    AskError,
    AskNotSupportedError,
    BrokerError,
    BrokerUnavailableError,
    InputValidationError,
    OutputValidationError,
    PayloadTooLargeError,
    ProtocolError,
    RegistrationError,
    StreamInterruptedError,
    ToolCallError,
    ToolCancelledError,
    ToolDefinitionError,
    ToolError,
    ToolExecutionError,
    ToolNotEnabledError,
    ToolNotFoundError,
    ToolOfflineError,
    ToolsError,
    ToolTimeoutError,
    ToolUnavailableError,
    ValidationError,
)
from ._logging import LogLevel
from ._protocol.content import (
    Annotations,
    Audio,
    ContentBlock,
    EmbeddedResource,
    Image,
    ResourceLink,
    Text,
)
from ._protocol.fleet_messages import (
    ClientOfflineMessage,
    ManagerOnlineMessage,
    RegisterToolMessage,
    StatsRequestMessage,
    ToolPingMessage,
    ToolPongMessage,
    ToolRegisteredMessage,
    ToolRegistrationErrorMessage,
    ToolSpec,
    ToolStatsEntry,
    ToolStatsMessage,
    ToolUnregisteredMessage,
    UnregisterToolMessage,
)
from ._protocol.messages import (
    PROTOCOL_VERSION,
    BaseMessage,
    CallContext,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    TaskStatus,
    ToolCallRequest,
    ToolCancelMessage,
    ToolCreditMessage,
    ToolPartialMessage,
    ToolProgressMessage,
    ToolResult,
)
from ._protocol.parsing import parse_message
from ._protocol.participation import (
    ElicitRequest,
    ElicitResult,
    LogRecord,
    Root,
    RootsResult,
    SampleRequest,
    SampleResult,
    SamplingMessage,
    ToolAnswerMessage,
    ToolAskMessage,
    ToolLogMessage,
)
from ._protocol.topics import Topics
from ._telemetry import start_metrics_server
from ._tools.call.context import ToolContext
from ._tools.call.output import ToolOutput
from ._tools.definition.definition import BaseTool, FunctionTool, tool
from ._tools.hosting.service import ToolService, serve_main
from ._transport import BrokerURL, IncomingMessage, Messager

try:
    __version__ = _metadata.version("argentic-tools")
except _metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "PROTOCOL_VERSION",
    "AllToolsEnabled",
    "Annotations",
    "AskError",
    "AskNotSupportedError",
    "Audio",
    "BaseMessage",
    "BaseTool",
    "BatchKeywords",
    "BatchProgressCallback",
    "BrokerError",
    "BrokerURL",
    "BrokerUnavailableError",
    "CallContext",
    "CallJournal",
    "CallKeywords",
    "CallRef",
    "CallerHandlers",
    "ClientOfflineMessage",
    "ContentBlock",
    "ElicitHandler",
    "ElicitRequest",
    "ElicitResult",
    "EmbeddedBroker",
    "EmbeddedResource",
    "ExportFormat",
    "FunctionTool",
    "HandlerKeywords",
    "Image",
    "InMemoryRecorder",
    "IncomingMessage",
    "InputValidationError",
    "JournaledCall",
    "JsonLinesRecorder",
    "LogHandler",
    "LogLevel",
    "LogRecord",
    "ManagerOnlineMessage",
    "Messager",
    "Observation",
    "ObservationRecorder",
    "OutputValidationError",
    "PayloadTooLargeError",
    "ProgressCallback",
    "ProtocolError",
    "RegisterToolMessage",
    "RegistrationError",
    "ResourceLink",
    "Root",
    "RootsHandler",
    "RootsResult",
    "SampleHandler",
    "SampleRequest",
    "SampleResult",
    "SamplingMessage",
    "SqliteJournal",
    "SqliteRecorder",
    "StatsRequestMessage",
    "StreamInterruptedError",
    "TaskErrorMessage",
    "TaskMessage",
    "TaskResultMessage",
    "TaskStatus",
    "Text",
    "ThreadToolPolicy",
    "ToolAnswerMessage",
    "ToolAskMessage",
    "ToolCallError",
    "ToolCallRequest",
    "ToolCancelMessage",
    "ToolCancelledError",
    "ToolContext",
    "ToolCreditMessage",
    "ToolDefinitionError",
    "ToolError",
    "ToolExecutionError",
    "ToolInfo",
    "ToolLogMessage",
    "ToolManager",
    "ToolNotEnabledError",
    "ToolNotFoundError",
    "ToolOfflineError",
    "ToolOutput",
    "ToolPartialMessage",
    "ToolPingMessage",
    "ToolPolicy",
    "ToolPongMessage",
    "ToolProgressMessage",
    "ToolRegisteredMessage",
    "ToolRegistrationErrorMessage",
    "ToolResult",
    "ToolService",
    "ToolSpec",
    "ToolStatsEntry",
    "ToolStatsMessage",
    "ToolStream",
    "ToolTimeoutError",
    "ToolUnavailableError",
    "ToolUnregisteredMessage",
    "ToolsError",
    "Topics",
    "UnregisterToolMessage",
    "ValidationError",
    "__version__",
    "parse_message",
    "serve_main",
    "start_metrics_server",
    "tool",
]

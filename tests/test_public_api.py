"""The one public namespace: exactly these names, nothing else public."""

import types
import typing

import argentic_tools
from argentic_tools import ExportFormat

PUBLIC_NAMES = [
    "PROTOCOL_VERSION",
    "AllToolsEnabled",
    "BaseMessage",
    "BaseTool",
    "BatchProgressCallback",
    "BrokerError",
    "BrokerURL",
    "BrokerUnavailableError",
    "CallContext",
    "ClientOfflineMessage",
    "EmbeddedBroker",
    "ExportFormat",
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
    "ProgressCallback",
    "ProtocolError",
    "RegisterToolMessage",
    "RegistrationError",
    "SqliteRecorder",
    "StatsRequestMessage",
    "StreamInterruptedError",
    "TaskErrorMessage",
    "TaskMessage",
    "TaskResultMessage",
    "TaskStatus",
    "ThreadToolPolicy",
    "ToolCallError",
    "ToolCallRequest",
    "ToolCancelMessage",
    "ToolCancelledError",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolExecutionError",
    "ToolInfo",
    "ToolManager",
    "ToolNotEnabledError",
    "ToolNotFoundError",
    "ToolOfflineError",
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


def test_all_is_exactly_the_public_names() -> None:
    assert argentic_tools.__all__ == PUBLIC_NAMES


def test_nothing_public_leaks_besides_all() -> None:
    leaked = {
        name
        for name, value in vars(argentic_tools).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert leaked == set(PUBLIC_NAMES) - {"__version__"}


def test_every_public_name_is_importable() -> None:
    for name in PUBLIC_NAMES:
        assert getattr(argentic_tools, name) is not None, name


def test_export_formats_are_a_literal_type() -> None:
    assert typing.get_args(ExportFormat) == ("prompt", "openai", "anthropic", "mcp")

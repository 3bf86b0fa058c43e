"""The one public namespace: exactly these names, nothing else public."""

import inspect
import sys
import types
import typing
from importlib import metadata
from pathlib import Path

import argentic_tools
from argentic_tools import ExportFormat

PUBLIC_NAMES = [
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


def test_all_is_exactly_the_public_names() -> None:
    assert argentic_tools.__all__ == PUBLIC_NAMES


def test_nothing_public_leaks_besides_all() -> None:
    leaked = {
        name
        for name, value in vars(argentic_tools).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert leaked == set(PUBLIC_NAMES) - {"__version__"}


TYPE_ALIASES = {
    "BatchProgressCallback",
    "ContentBlock",
    "ElicitHandler",
    "ExportFormat",
    "LogHandler",
    "ProgressCallback",
    "RootsHandler",
    "SampleHandler",
    "ToolResult",
}
"""Public names that are type annotations, not classes or functions."""


def test_every_public_name_is_importable() -> None:
    """Each name imports as what it names, not as an alias of something else or a stub."""
    for name in PUBLIC_NAMES:
        namespace: dict[str, object] = {}
        exec(f"from argentic_tools import {name}", namespace)  # the names listed above
        value = namespace[name]
        if name == "__version__":
            assert value == metadata.version("argentic-tools")
        elif name == "PROTOCOL_VERSION":
            assert isinstance(value, int) and value >= 1
        elif name in TYPE_ALIASES:
            assert typing.get_origin(value) is not None, name
        else:
            assert inspect.isclass(value) or inspect.isfunction(value), name
            # Defined under that name inside the library, and imported from there.
            assert value.__name__ == name, (name, value)
            assert value.__module__.startswith("argentic_tools."), (name, value.__module__)
            assert getattr(sys.modules[value.__module__], name) is value, name


def test_export_formats_are_a_literal_type() -> None:
    formats = ("prompt", "openai", "anthropic", "mcp", "openai-responses")
    assert typing.get_args(ExportFormat) == formats


def test_the_architecture_page_names_every_module_of_the_library() -> None:
    """docs/architecture.md draws the package tree; a module it does not name is missing."""
    root = Path(argentic_tools.__file__).parent
    page = (root.parent / "docs" / "architecture.md").read_text()
    tree = page.split("```", 2)[1]
    drawn: set[str] = set()
    folders: list[tuple[int, str]] = []  # (indent, folder) from the root down
    for line in tree.splitlines()[1:]:
        name = line.strip().split(" ", 1)[0]
        if not name:
            continue
        indent = len(line) - len(line.lstrip())
        while folders and folders[-1][0] >= indent:
            folders.pop()
        path = "/".join([*(folder for _, folder in folders), name.rstrip("/")])
        if name.endswith("/"):
            folders.append((indent, name.rstrip("/")))
        elif name.endswith(".py"):
            drawn.add(path)
    modules = {
        str(path.relative_to(root.parent))
        for path in root.rglob("*.py")
        if path.name != "__init__.py" or path.parent == root
    }
    assert modules - drawn == set(), "modules missing from docs/architecture.md"
    assert drawn - modules == set(), "docs/architecture.md names modules that do not exist"


def test_public_namespace_is_pinned() -> None:
    assert len(argentic_tools.__all__) == len(set(argentic_tools.__all__))
    for name in argentic_tools.__all__:
        assert hasattr(argentic_tools, name), name
    assert set(argentic_tools.__all__) >= {
        "ToolManager",
        "Messager",
        "BaseTool",
        "tool",
        "ToolService",
        "TaskStatus",
        "RegisterToolMessage",
        "ToolRegisteredMessage",
        "UnregisterToolMessage",
        "TaskMessage",
        "TaskResultMessage",
        "TaskErrorMessage",
        "ToolCallRequest",
        "ToolsError",
    }

"""The ``mcp`` extra's modules, imported when a command needs them."""

import importlib
from types import ModuleType

from ..common import CliError


def mcp_module(module: str, extra_packages: tuple[str, ...]) -> ModuleType:
    """Import ``argentic_tools.mcp.<module>``, or say that the mcp extra is missing.

    Args:
        module: The module below ``argentic_tools.mcp``.
        extra_packages: The top-level packages whose absence means the extra is not
            installed; any other missing module is raised as it is.

    Raises:
        CliError: One of ``extra_packages`` cannot be imported.

    """
    try:
        return importlib.import_module(f"argentic_tools.mcp.{module}")
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] in extra_packages:
            raise CliError(
                "the MCP commands need the mcp extra: pip install 'argentic-tools[mcp]'"
            ) from None
        raise

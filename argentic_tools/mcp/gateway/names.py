"""Tool names as MCP clients accept them: 1-64 characters of ``[A-Za-z0-9_.-]``.

The specification allows 128 characters; the official conformance suite (and
clients built to it) accept at most 64 (and ``/`` too), so names keep to what both
accept. Registry names are freer (``Email Sender``, up to 128 characters;
``wetter/heute`` is refused but ``café`` is not). :class:`McpNames` maps every
registered name onto a valid MCP name and back, deterministically and without
collisions: a valid name keeps itself; another becomes its nearest valid spelling
(cut to 64 characters), and when that spelling is taken (by a valid name, or by
another name spelled the same way) it gets a suffix derived from the original
name, so the same fleet always gets the same names whatever order its tools
registered in.
"""

import hashlib
import re
from collections.abc import Iterable

MAX_LENGTH = 64
"""Longest MCP tool name given out."""

MCP_NAME = re.compile(rf"^[A-Za-z0-9_.-]{{1,{MAX_LENGTH}}}$")
"""What every MCP client accepts as a tool name."""

_INVALID = re.compile(r"[^A-Za-z0-9_.-]+")


def is_mcp_name(name: str) -> bool:
    """Whether ``name`` is a valid MCP tool name as it is."""
    return MCP_NAME.match(name) is not None


def spelled_for_mcp(name: str) -> str:
    """The nearest valid MCP spelling of ``name`` (runs of other characters become ``_``)."""
    spelled = _INVALID.sub("_", name).strip("_") or "tool"
    return spelled[:MAX_LENGTH]


def _suffixed(name: str, spelled: str) -> str:
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{spelled[: MAX_LENGTH - 9]}_{digest}"


class McpNames:
    """A two-way map between registry names and MCP names for one set of tools."""

    def __init__(self, names: Iterable[str]) -> None:
        unique = sorted(set(names))
        valid = {name for name in unique if is_mcp_name(name)}
        spellings: dict[str, list[str]] = {}
        for name in unique:
            if name not in valid:
                spellings.setdefault(spelled_for_mcp(name), []).append(name)
        self.to_mcp: dict[str, str] = {name: name for name in valid}
        """Registry name -> MCP name."""
        for spelled, originals in spellings.items():
            for name in originals:
                clash = spelled in valid or len(originals) > 1
                self.to_mcp[name] = _suffixed(name, spelled) if clash else spelled
        self.to_registry: dict[str, str] = {mcp: name for name, mcp in self.to_mcp.items()}
        """MCP name -> registry name."""

    def registry_name(self, mcp_name: str) -> str:
        """The registry name an MCP client's name stands for (unknown names unchanged)."""
        return self.to_registry.get(mcp_name, mcp_name)

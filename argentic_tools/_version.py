"""The installed distribution's version (``0.0.0`` when run from a bare source tree)."""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("argentic-tools")
except _metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

"""The event loop and HTTP parser the gateway's HTTP server runs on.

uvicorn serves ``argentic-tools mcp serve --http``. With the ``mcp`` extra it runs on
uvloop's event loop and parses HTTP with httptools (both C implementations), which
``benchmarks/mcp_gateway.py`` measured faster than asyncio's loop and h11; without
them (a platform with no wheels, e.g. Windows for uvloop) it falls back to asyncio
and h11 and works the same.
"""

import asyncio
import importlib.util
from collections.abc import Callable
from typing import Any


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The ``new_event_loop`` of uvloop when it is installed, else None (asyncio's own)."""
    if not _installed("uvloop"):
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = importlib.import_module(
        "uvloop"
    ).new_event_loop
    return factory


def uvicorn_options() -> dict[str, Any]:
    """Options for ``uvicorn.Config``: httptools when installed, no access log."""
    return {"http": "httptools" if _installed("httptools") else "h11", "access_log": False}


def describe() -> str:
    """Which loop and HTTP parser a gateway started now would use, for reports."""
    loop = "uvloop" if _installed("uvloop") else "asyncio"
    return f"uvicorn on {loop}, {uvicorn_options()['http']}"

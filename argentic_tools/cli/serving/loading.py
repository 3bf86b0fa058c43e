"""Finding tools to serve: ``module``, ``module:object`` or a path to a ``.py`` file."""

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from ..._tools.definition.definition import TOOL_ATTRIBUTE, BaseTool
from ..common import CliError


def load_tools(specs: Sequence[str]) -> list[Any]:
    """Resolve ``MODULE``, ``MODULE:OBJECT`` and ``path/to/file.py[:OBJECT]`` to tool objects.

    ``MODULE`` gives every ``@tool`` function and ``BaseTool`` instance in the
    module and every concrete ``BaseTool`` class defined there; ``OBJECT`` (a
    dotted attribute path) may be one tool or a list of them.
    """
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        # As with `python -m`, modules in the current directory can be served.
        sys.path.insert(0, cwd)
    found: list[Any] = []
    seen: set[int] = set()
    for spec in specs:
        module_name, sep, attribute = spec.partition(":")
        if not module_name or (sep and not attribute):
            raise CliError(f"invalid tool reference {spec!r}; use MODULE or MODULE:OBJECT")
        module = _import(module_name)
        if sep:
            value = _attribute(module, attribute, spec)
            items = list(value) if isinstance(value, list | tuple | set | frozenset) else [value]
        else:
            items = _tools_in(module)
            if not items:
                raise CliError(
                    f"module {module_name!r} defines no tools (@tool functions or BaseTool "
                    "classes); name one with MODULE:OBJECT"
                )
        for item in items:
            if id(item) not in seen:
                seen.add(id(item))
                found.append(item)
    return found


def _import(name: str) -> ModuleType:
    if name.endswith(".py") or "/" in name:
        return _import_file(Path(name))
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise CliError(f"cannot import module {name!r}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - whatever the module's own code raised
        raise CliError(f"importing module {name!r} failed: {type(exc).__name__}: {exc}") from None


def _import_file(path: Path) -> ModuleType:
    """Import a ``.py`` file as ``python path/to/file.py`` would see its neighbours."""
    if not path.is_file():
        raise CliError(f"no such file: {str(path)!r}")
    loaded = sys.modules.get(path.stem)
    if (
        loaded is not None
        and Path(getattr(loaded, "__file__", "") or "").resolve() == path.resolve()
    ):
        return loaded  # the same file named twice (FILE and FILE:OBJECT)
    directory = str(path.resolve().parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)  # its sibling modules import as they do for python FILE
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot import {str(path)!r}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - whatever the module's own code raised
        del sys.modules[path.stem]
        raise CliError(f"importing {str(path)!r} failed: {type(exc).__name__}: {exc}") from None
    return module


def _attribute(module: ModuleType, path: str, spec: str) -> Any:
    value: Any = module
    for part in path.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise CliError(f"{spec!r}: module {module.__name__!r} has no {path!r}") from None
    return value


def _tools_in(module: ModuleType) -> list[Any]:
    return [value for value in vars(module).values() if _is_tool(value, module)]


def _is_tool(value: Any, module: ModuleType) -> bool:
    if getattr(value, TOOL_ATTRIBUTE, None) is not None or isinstance(value, BaseTool):
        return True
    # Classes only when defined here: an imported BaseTool or FunctionTool is no tool of ours.
    return (
        isinstance(value, type)
        and issubclass(value, BaseTool)
        and value.__module__ == module.__name__
        and not inspect.isabstract(value)
    )

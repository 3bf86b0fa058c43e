"""The exception tree: one root, and the drawing in ``_errors``' docstring is the tree."""

import inspect
import re

from argentic_tools import ToolError, ToolsError, _errors


def exception_classes() -> dict[str, type[BaseException]]:
    return {
        name: value
        for name, value in vars(_errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException)
    }


def test_every_library_exception_derives_from_tools_error() -> None:
    outside = [name for name, cls in exception_classes().items() if not issubclass(cls, ToolsError)]
    assert outside == []
    assert issubclass(ToolError, ToolsError)


def test_the_docstring_draws_each_exception_under_its_parent() -> None:
    """Each class sits in the drawing one level under its library base class."""
    drawn: dict[str, str | None] = {}
    parents: list[str] = []  # by depth
    for line in (_errors.__doc__ or "").splitlines():
        found = re.match(r"^    ((?:[│ ]   )*)(?:[├└]── )?([A-Z]\w+Error)\b", line)
        if found is None:
            continue
        depth = len(found[1]) // 4 + (0 if found[2] == "ToolsError" else 1)
        name = found[2]
        del parents[depth:]
        drawn[name] = parents[-1] if parents else None
        parents.append(name)
    expected = {
        name: next((base.__name__ for base in cls.__bases__ if issubclass(base, ToolsError)), None)
        for name, cls in exception_classes().items()
    }
    assert drawn == expected

import importlib
from collections.abc import Callable

import pytest

from argentic_tools.cli.common import CliError
from argentic_tools.cli.mcp.extra import mcp_module


def _missing(name: str) -> Callable[[str], None]:
    def import_module(module: str) -> None:
        raise ImportError(f"No module named {name!r}", name=name)

    return import_module


def test_a_missing_extra_package_says_to_install_the_mcp_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(importlib, "import_module", _missing("jwt.algorithms"))
    with pytest.raises(CliError, match=r"pip install 'argentic-tools\[mcp\]'"):
        mcp_module("access.auth", ("mcp", "mcp_types", "jwt"))


def test_a_missing_package_outside_the_named_ones_is_raised_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(importlib, "import_module", _missing("jwt"))
    with pytest.raises(ImportError) as raised:
        mcp_module("gateway", ("mcp", "mcp_types", "uvicorn"))
    assert raised.value.name == "jwt"
    assert not isinstance(raised.value, CliError)


def test_an_installed_module_is_returned() -> None:
    assert mcp_module("access.views", ("mcp",)).__name__ == "argentic_tools.mcp.access.views"

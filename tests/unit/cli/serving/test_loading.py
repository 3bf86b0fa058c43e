"""Finding the tools ``argentic-tools serve`` serves: modules, objects and file paths."""

import pathlib
import sys

import pytest

from argentic_tools._tools.definition.definition import as_tool
from argentic_tools.cli.common import CliError
from argentic_tools.cli.serving.loading import load_tools


def test_a_file_path_is_served_with_its_neighbours_importable(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "helpers_for_file_tools.py").write_text("FACTOR = 3\n")
    (tmp_path / "file_tools.py").write_text(
        "from argentic_tools import tool\n"
        "from helpers_for_file_tools import FACTOR\n\n\n"
        "@tool\n"
        "def triple(x: int) -> int:\n"
        '    """Multiply by three."""\n'
        "    return x * FACTOR\n"
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    (found,) = load_tools([str(tmp_path / "file_tools.py")])
    assert as_tool(found).name == "triple"
    (named,) = load_tools([f"{tmp_path / 'file_tools.py'}:triple"])
    assert named is found
    with pytest.raises(CliError, match="no such file"):
        load_tools([str(tmp_path / "missing.py")])

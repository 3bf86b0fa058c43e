"""What ``serve --reload`` runs and watches: the child's command line, the directories."""

import pathlib
import sys

import pytest

from argentic_tools.cli.common import CliError
from argentic_tools.cli.serving.reload import child_argv, watched_directories

ROOT = pathlib.Path(__file__).resolve().parents[4]


def test_the_child_runs_the_same_serve_without_reload_however_it_was_spelled() -> None:
    argv = ["serve", "m:x", "--reload", "--rel", "--broker", "mqtt://h:1", "--grace-period", "3"]
    assert child_argv(argv) == ["serve", "m:x", "--broker", "mqtt://h:1", "--grace-period", "3"]


def test_a_file_is_watched_through_its_directory(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "tools.py").write_text("")
    spec = f"{tmp_path / 'tools.py'}:add"
    assert watched_directories([spec, str(tmp_path / "tools.py")]) == [tmp_path.resolve()]


def test_a_module_is_watched_through_its_top_level_package_without_importing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    sys.modules.pop("tool_clients.calculator", None)
    assert watched_directories(["tool_clients.calculator:calculate"]) == [ROOT / "tool_clients"]
    assert "tool_clients.calculator" not in sys.modules


def test_a_module_that_cannot_be_found_is_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(CliError, match="cannot find module 'no_such_module_here' to watch"):
        watched_directories(["no_such_module_here:x"])

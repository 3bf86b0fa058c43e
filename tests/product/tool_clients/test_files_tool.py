"""Pure-logic tests of the sandboxed file tools (called directly, no broker)."""

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from argentic_tools import ToolError
from tool_clients import files
from tool_clients.files import MAX_FILE_BYTES, MAX_LIST_ENTRIES, make_tools, resolve

Tool = Callable[..., Any]


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    root = tmp_path / "sandbox"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret_dir = tmp_path / "outside"
    secret_dir.mkdir()
    (secret_dir / "secret.txt").write_text("top secret", encoding="utf-8")
    return secret_dir


@pytest.fixture
def tools(sandbox: Path) -> dict[str, Tool]:
    return {function.__name__: function for function in make_tools(sandbox)}


def test_make_tools_returns_write_read_list_in_order(sandbox: Path) -> None:
    names = [function.__name__ for function in make_tools(sandbox)]
    assert names == ["write_file", "read_file", "list_files"]


def test_make_tools_rejects_missing_root(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        make_tools(tmp_path / "missing")


def test_write_then_read_round_trips_text(tools: dict[str, Tool], sandbox: Path) -> None:
    result = tools["write_file"]("hello.txt", "Bonjour, monde ✓\n")
    assert result == {"path": "hello.txt", "bytes_written": len("Bonjour, monde ✓\n".encode())}
    assert tools["read_file"]("hello.txt") == "Bonjour, monde ✓\n"
    assert (sandbox / "hello.txt").read_text(encoding="utf-8") == "Bonjour, monde ✓\n"


def test_write_file_creates_parent_directories(tools: dict[str, Tool], sandbox: Path) -> None:
    assert tools["write_file"]("a/b/c.txt", "x")["path"] == "a/b/c.txt"
    assert (sandbox / "a" / "b" / "c.txt").read_text(encoding="utf-8") == "x"


def test_write_file_normalises_the_reported_path(tools: dict[str, Tool]) -> None:
    assert tools["write_file"]("./notes//todo.txt", "x")["path"] == "notes/todo.txt"


def test_write_file_overwrites_existing_file(tools: dict[str, Tool]) -> None:
    tools["write_file"]("f.txt", "a much longer first version")
    tools["write_file"]("f.txt", "short")
    assert tools["read_file"]("f.txt") == "short"


def test_write_file_accepts_content_at_the_size_cap(tools: dict[str, Tool]) -> None:
    content = "x" * MAX_FILE_BYTES
    assert tools["write_file"]("big.txt", content)["bytes_written"] == MAX_FILE_BYTES
    assert tools["read_file"]("big.txt") == content


def test_write_file_rejects_content_over_the_size_cap(
    tools: dict[str, Tool], sandbox: Path
) -> None:
    with pytest.raises(ToolError, match=re.escape("content for 'big.txt' is too large")):
        tools["write_file"]("big.txt", "x" * (MAX_FILE_BYTES + 1))
    assert not (sandbox / "big.txt").exists()


def test_write_file_size_cap_counts_utf8_bytes(tools: dict[str, Tool]) -> None:
    with pytest.raises(ToolError, match="too large"):
        tools["write_file"]("big.txt", "é" * (MAX_FILE_BYTES // 2 + 1))


def test_read_file_rejects_file_over_the_size_cap(tools: dict[str, Tool], sandbox: Path) -> None:
    (sandbox / "huge.txt").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(ToolError, match=re.escape("file 'huge.txt' is too large")):
        tools["read_file"]("huge.txt")


def test_read_file_rejects_binary_content(tools: dict[str, Tool], sandbox: Path) -> None:
    (sandbox / "blob.bin").write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(ToolError, match=re.escape("file 'blob.bin' is not UTF-8 text")):
        tools["read_file"]("blob.bin")


def test_read_file_reports_missing_file_by_path(tools: dict[str, Tool]) -> None:
    with pytest.raises(ToolError, match=re.escape("file 'nope/missing.txt' does not exist")):
        tools["read_file"]("nope/missing.txt")


def test_read_file_refuses_directory(tools: dict[str, Tool], sandbox: Path) -> None:
    (sandbox / "docs").mkdir()
    with pytest.raises(ToolError, match="'docs' is a directory"):
        tools["read_file"]("docs")


def test_write_file_refuses_directory_target(tools: dict[str, Tool], sandbox: Path) -> None:
    (sandbox / "docs").mkdir()
    with pytest.raises(ToolError, match="'docs' is a directory"):
        tools["write_file"]("docs", "x")


def test_write_file_refuses_the_sandbox_root(tools: dict[str, Tool]) -> None:
    with pytest.raises(ToolError, match="sandbox root"):
        tools["write_file"](".", "x")


def test_write_file_refuses_file_used_as_directory(tools: dict[str, Tool]) -> None:
    tools["write_file"]("plain.txt", "x")
    with pytest.raises(ToolError, match="not a directory"):
        tools["write_file"]("plain.txt/child.txt", "y")
    with pytest.raises(ToolError, match="not a directory"):
        tools["write_file"]("plain.txt/deeper/child.txt", "y")


@pytest.mark.parametrize("path", ["", "   "])
def test_read_and_write_reject_empty_path(tools: dict[str, Tool], path: str) -> None:
    with pytest.raises(ToolError, match="path must not be empty"):
        tools["read_file"](path)
    with pytest.raises(ToolError, match="path must not be empty"):
        tools["write_file"](path, "x")


@pytest.mark.parametrize("tool_name", ["read_file", "write_file", "list_files"])
@pytest.mark.parametrize("path", ["/etc/passwd", "/tmp", "\\\\server\\share"])
def test_tools_reject_absolute_paths(tools: dict[str, Tool], tool_name: str, path: str) -> None:
    args = (path, "x") if tool_name == "write_file" else (path,)
    with pytest.raises(ToolError, match="is absolute"):
        tools[tool_name](*args)


@pytest.mark.parametrize("tool_name", ["read_file", "write_file", "list_files"])
@pytest.mark.parametrize("path", ["..", "../outside/secret.txt", "a/../../x", "a/b/../c"])
def test_tools_reject_dot_dot_components(tools: dict[str, Tool], tool_name: str, path: str) -> None:
    args = (path, "x") if tool_name == "write_file" else (path,)
    with pytest.raises(ToolError, match=r"must not contain '\.\.'") as excinfo:
        tools[tool_name](*args)
    assert path in str(excinfo.value)


def test_read_file_refuses_symlink_to_file_outside(
    tools: dict[str, Tool], sandbox: Path, outside: Path
) -> None:
    (sandbox / "leak.txt").symlink_to(outside / "secret.txt")
    expected = "escapes the sandbox through the symbolic link 'leak.txt'"
    with pytest.raises(ToolError, match=re.escape(expected)):
        tools["read_file"]("leak.txt")


def test_write_file_refuses_symlink_to_file_outside(
    tools: dict[str, Tool], sandbox: Path, outside: Path
) -> None:
    (sandbox / "leak.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="escapes the sandbox"):
        tools["write_file"]("leak.txt", "pwned")
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "top secret"


def test_write_file_refuses_dangling_symlink_pointing_outside(
    tools: dict[str, Tool], sandbox: Path, outside: Path
) -> None:
    (sandbox / "new.txt").symlink_to(outside / "created-by-attacker.txt")
    with pytest.raises(ToolError, match="escapes the sandbox"):
        tools["write_file"]("new.txt", "pwned")
    assert not (outside / "created-by-attacker.txt").exists()


def test_tools_refuse_symlinked_directory_component_pointing_outside(
    tools: dict[str, Tool], sandbox: Path, outside: Path
) -> None:
    (sandbox / "escape").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolError, match="symbolic link 'escape'"):
        tools["read_file"]("escape/secret.txt")
    with pytest.raises(ToolError, match="symbolic link 'escape'"):
        tools["write_file"]("escape/new.txt", "pwned")
    with pytest.raises(ToolError, match="symbolic link 'escape'"):
        tools["list_files"]("escape")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_tools_refuse_chained_symlinks_that_end_outside(
    tools: dict[str, Tool], sandbox: Path, outside: Path
) -> None:
    (sandbox / "hop2").symlink_to(outside / "secret.txt")
    (sandbox / "hop1").symlink_to(sandbox / "hop2")
    with pytest.raises(ToolError, match="escapes the sandbox"):
        tools["read_file"]("hop1")


def test_tools_refuse_symlink_nested_behind_an_inside_link(
    tools: dict[str, Tool], sandbox: Path, outside: Path
) -> None:
    (sandbox / "real").mkdir()
    (sandbox / "real" / "evil").symlink_to(outside, target_is_directory=True)
    (sandbox / "alias").symlink_to(sandbox / "real", target_is_directory=True)
    with pytest.raises(ToolError, match="escapes the sandbox"):
        tools["read_file"]("alias/evil/secret.txt")


def test_tools_follow_symlinks_that_stay_inside(tools: dict[str, Tool], sandbox: Path) -> None:
    (sandbox / "real").mkdir()
    (sandbox / "real" / "data.txt").write_text("inside", encoding="utf-8")
    (sandbox / "alias").symlink_to("real", target_is_directory=True)
    (sandbox / "link.txt").symlink_to("real/data.txt")
    assert tools["read_file"]("alias/data.txt") == "inside"
    assert tools["read_file"]("link.txt") == "inside"
    assert tools["write_file"]("link.txt", "updated")["path"] == "real/data.txt"
    assert (sandbox / "real" / "data.txt").read_text(encoding="utf-8") == "updated"


def test_sandbox_root_may_itself_be_reached_through_a_symlink(
    tmp_path: Path, sandbox: Path
) -> None:
    link = tmp_path / "root-link"
    link.symlink_to(sandbox, target_is_directory=True)
    write_file, read_file, _ = make_tools(link)
    write_file("x.txt", "ok")
    assert read_file("x.txt") == "ok"
    assert (sandbox / "x.txt").exists()


def test_resolve_rejects_nul_character(sandbox: Path) -> None:
    with pytest.raises(ToolError, match="NUL"):
        resolve(sandbox, "a\x00b")


def test_resolve_rejects_overlong_path(sandbox: Path) -> None:
    with pytest.raises(ToolError, match="too long"):
        resolve(sandbox, "a/" * 5000)


def test_resolve_maps_dot_and_empty_to_the_root(sandbox: Path) -> None:
    root = sandbox.resolve()
    assert resolve(root, ".") == root
    assert resolve(root, "") == root


def test_list_files_lists_sorted_entries_with_types_and_sizes(
    tools: dict[str, Tool], sandbox: Path, outside: Path
) -> None:
    (sandbox / "b.txt").write_text("12345", encoding="utf-8")
    (sandbox / "a_dir").mkdir()
    (sandbox / "c_link").symlink_to(outside / "secret.txt")
    result = tools["list_files"]()
    assert result == {
        "path": ".",
        "entries": [
            {"name": "a_dir", "type": "directory", "size": None},
            {"name": "b.txt", "type": "file", "size": 5},
            {"name": "c_link", "type": "symlink", "size": None},
        ],
        "truncated": False,
    }


def test_list_files_lists_a_subdirectory(tools: dict[str, Tool]) -> None:
    tools["write_file"]("sub/one.txt", "1")
    result = tools["list_files"]("sub")
    assert result["path"] == "sub"
    assert [entry["name"] for entry in result["entries"]] == ["one.txt"]


def test_list_files_of_empty_root_is_empty(tools: dict[str, Tool]) -> None:
    assert tools["list_files"](".") == {"path": ".", "entries": [], "truncated": False}


def test_list_files_truncates_long_listings(tools: dict[str, Tool], sandbox: Path) -> None:
    for index in range(MAX_LIST_ENTRIES + 5):
        (sandbox / f"f{index:05d}").touch()
    result = tools["list_files"]()
    assert len(result["entries"]) == MAX_LIST_ENTRIES
    assert result["truncated"] is True
    assert result["entries"][0]["name"] == "f00000"


def test_list_files_reports_missing_directory(tools: dict[str, Tool]) -> None:
    with pytest.raises(ToolError, match="directory 'ghost' does not exist"):
        tools["list_files"]("ghost")


def test_list_files_refuses_a_file(tools: dict[str, Tool]) -> None:
    tools["write_file"]("f.txt", "x")
    with pytest.raises(ToolError, match=re.escape("'f.txt' is not a directory")):
        tools["list_files"]("f.txt")


def test_main_parses_root_and_passes_remaining_argv_to_serve_main(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    captured: dict[str, Any] = {}

    def fake_serve_main(
        tools: list[Tool], argv: list[str] | None = None, *, prog: str, description: str
    ) -> None:
        captured.update(tools=tools, argv=argv, prog=prog, description=description)

    monkeypatch.setattr(files, "serve_main", fake_serve_main)
    root = tmp_path / "new-root"
    files.main(["--root", str(root), "--broker", "mqtt://127.0.0.1:1883", "--log-level", "DEBUG"])
    assert root.is_dir()
    assert captured["argv"] == ["--broker", "mqtt://127.0.0.1:1883", "--log-level", "DEBUG"]
    names = [tool.__name__ for tool in captured["tools"]]
    assert names == ["write_file", "read_file", "list_files"]
    captured["tools"][0]("probe.txt", "ok")
    assert (root / "probe.txt").read_text(encoding="utf-8") == "ok"


def test_main_defaults_root_to_sandbox_in_working_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(files, "serve_main", lambda *args, **kwargs: None)
    files.main([])
    assert (tmp_path / "sandbox").is_dir()


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="needs O_NOFOLLOW")
def test_final_component_is_opened_without_following_symlinks(
    monkeypatch: pytest.MonkeyPatch, tools: dict[str, Tool], sandbox: Path, outside: Path
) -> None:
    # Simulate a symlink swapped in after the path check (time-of-check/time-of-use race).
    (sandbox / "racy.txt").write_text("inside", encoding="utf-8")
    real_resolve = files.resolve

    def racing_resolve(root: Path, path: str) -> Path:
        resolved = real_resolve(root, path)
        resolved.unlink()
        resolved.symlink_to(outside / "secret.txt")
        return resolved

    monkeypatch.setattr(files, "resolve", racing_resolve)
    with pytest.raises(ToolError, match="symbolic link"):
        tools["read_file"]("racy.txt")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_tools_refuse_fifo_without_blocking(tools: dict[str, Tool], sandbox: Path) -> None:
    os.mkfifo(sandbox / "pipe")
    with pytest.raises(ToolError, match="'pipe' is not a regular file"):
        tools["read_file"]("pipe")
    with pytest.raises(ToolError, match="pipe"):
        tools["write_file"]("pipe", "x")

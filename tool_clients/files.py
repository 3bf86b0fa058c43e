"""File tools microservice: read, write and list UTF-8 text files inside a sandbox.

All paths given by the caller are relative to a sandbox root directory chosen when the
service starts (``--root``). Paths are confined to that root:

* absolute paths and any ``..`` component are rejected outright;
* every existing path component is checked: a symbolic link whose target lies outside the
  root is refused (links that stay inside the root are followed normally);
* the fully resolved path must still be inside the resolved root;
* the final component is opened with ``O_NOFOLLOW`` so that a symlink swapped in after
  the check is not followed.

Files are text only (UTF-8) and limited to :data:`MAX_FILE_BYTES` (1 MiB) both when
reading and when writing; directory listings are capped at :data:`MAX_LIST_ENTRIES`.

Run it with::

    python -m tool_clients.files --root ./sandbox --broker mqtt://127.0.0.1:1883
"""

import argparse
import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import Annotated, Any

from pydantic import Field

from argentic_tools import ToolError, serve_main, tool

__all__ = ["DEFAULT_ROOT", "MAX_FILE_BYTES", "MAX_LIST_ENTRIES", "main", "make_tools", "resolve"]

MAX_FILE_BYTES = 1024 * 1024
"""Largest file that can be written or read, in bytes of UTF-8."""

MAX_LIST_ENTRIES = 1000
"""Largest number of entries returned by ``list_files``."""

MAX_PATH_LENGTH = 4096

DEFAULT_ROOT = Path("sandbox")
"""Sandbox root used when ``--root`` is not given (relative to the working directory)."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # never hang on a FIFO planted in the sandbox


def resolve(root: Path, path: str) -> Path:
    """Map a caller-supplied relative ``path`` to an absolute path inside ``root``.

    Args:
        root: The sandbox root; must already be resolved (absolute, no symlinks).
        path: Relative path supplied by the caller ("" and "." mean the root itself).

    Returns:
        The resolved absolute path, guaranteed to be ``root`` or inside it at the time of
        the call. It may not exist yet.

    Raises:
        ToolError: If the path is absolute, contains ``..``, or reaches outside the
            sandbox through a symbolic link.

    """
    if "\x00" in path:
        raise ToolError(f"path {path!r} contains a NUL character")
    if len(path) > MAX_PATH_LENGTH:
        raise ToolError(f"path is too long ({len(path)} characters, limit {MAX_PATH_LENGTH})")
    relative = PurePath(path)
    if relative.is_absolute() or path.startswith(("/", "\\")):
        raise ToolError(f"path '{path}' is absolute; use a path relative to the sandbox root")
    if ".." in relative.parts:
        raise ToolError(f"path '{path}' must not contain '..' (it would leave the sandbox)")

    current = root
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            target = current.resolve()
            if not target.is_relative_to(root):
                shown = current.relative_to(root).as_posix()
                raise ToolError(
                    f"path '{path}' escapes the sandbox through the symbolic link '{shown}'"
                )
    resolved = (root / relative).resolve()
    if not resolved.is_relative_to(root):  # defence in depth; unreachable by construction
        raise ToolError(f"path '{path}' resolves outside the sandbox")
    return resolved


def _display(root: Path, resolved: Path) -> str:
    """Return ``resolved`` relative to ``root`` as a POSIX path ("." for the root)."""
    return resolved.relative_to(root).as_posix()


def _read_text(target: Path, path: str) -> str:
    try:
        fd = os.open(target, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except FileNotFoundError:
        raise ToolError(f"file '{path}' does not exist") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolError(f"file '{path}' is a symbolic link and cannot be read") from None
        raise ToolError(f"cannot read '{path}': {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"'{path}' is a directory; use list_files to see its content")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"'{path}' is not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise ToolError(
                f"file '{path}' is too large ({info.st_size} bytes, limit {MAX_FILE_BYTES})"
            )
        with os.fdopen(fd, "rb") as handle:
            fd = -1  # now owned (and closed) by the file object
            data = handle.read(MAX_FILE_BYTES + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise ToolError(f"file '{path}' is too large (more than {MAX_FILE_BYTES} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"file '{path}' is not UTF-8 text") from None


def _write_text(root: Path, target: Path, path: str, data: bytes) -> None:
    if target == root:
        raise ToolError("path must name a file, not the sandbox root")
    if target.is_dir():
        raise ToolError(f"'{path}' is a directory; choose a file name")
    parent = target.parent
    if parent.exists() and not parent.is_dir():
        raise ToolError(f"cannot write '{path}': '{_display(root, parent)}' is not a directory")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _NONBLOCK, 0o644)
    except NotADirectoryError:
        raise ToolError(f"cannot write '{path}': a parent of it is not a directory") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolError(f"'{path}' is a symbolic link and cannot be written") from None
        raise ToolError(f"cannot write '{path}': {exc.strerror}") from None
    with os.fdopen(fd, "wb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ToolError(f"'{path}' is not a regular file")
        handle.truncate(0)
        handle.write(data)


def _entry(item: os.DirEntry[str]) -> dict[str, Any]:
    if item.is_symlink():
        return {"name": item.name, "type": "symlink", "size": None}
    if item.is_dir(follow_symlinks=False):
        return {"name": item.name, "type": "directory", "size": None}
    if item.is_file(follow_symlinks=False):
        return {"name": item.name, "type": "file", "size": item.stat(follow_symlinks=False).st_size}
    return {"name": item.name, "type": "other", "size": None}


def make_tools(root: Path) -> list[Callable[..., Any]]:
    """Build the ``write_file``, ``read_file`` and ``list_files`` tools for a sandbox.

    Args:
        root: Existing directory to confine the tools to. It is resolved once, here.

    Returns:
        The three decorated tool functions, in that order.

    Raises:
        NotADirectoryError: If ``root`` is not an existing directory.

    """
    sandbox = root.resolve()
    if not sandbox.is_dir():
        raise NotADirectoryError(f"sandbox root '{root}' is not an existing directory")

    @tool(
        tags=["files"],
        examples=[
            {
                "input": {"path": "notes/todo.txt", "content": "buy milk\n"},
                "output": {"path": "notes/todo.txt", "bytes_written": 9},
            }
        ],
    )
    def write_file(
        path: Annotated[
            str,
            Field(description="File path relative to the sandbox root, e.g. 'notes/todo.txt'."),
        ],
        content: Annotated[str, Field(description="Full text content to write (UTF-8).")],
    ) -> dict[str, Any]:
        """Write a UTF-8 text file in the sandbox, replacing it if it already exists.

        Missing parent directories are created. Paths are relative to the sandbox root;
        absolute paths and '..' are refused. Content is limited to 1 MiB.

        Args:
            path: Relative path of the file to write.
            content: Text to store in the file.

        Returns:
            A dict with the normalised "path" and the number of "bytes_written".

        """
        data = content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise ToolError(
                f"content for '{path}' is too large ({len(data)} bytes, limit {MAX_FILE_BYTES})"
            )
        if not path.strip():
            raise ToolError("path must not be empty")
        target = resolve(sandbox, path)
        _write_text(sandbox, target, path, data)
        return {"path": _display(sandbox, target), "bytes_written": len(data)}

    @tool(tags=["files"])
    def read_file(
        path: Annotated[
            str,
            Field(description="File path relative to the sandbox root, e.g. 'notes/todo.txt'."),
        ],
    ) -> str:
        """Read a UTF-8 text file from the sandbox and return its full content.

        Paths are relative to the sandbox root; absolute paths and '..' are refused.
        Files larger than 1 MiB or not valid UTF-8 text cannot be read.

        Args:
            path: Relative path of the file to read.

        Returns:
            The text content of the file.

        """
        if not path.strip():
            raise ToolError("path must not be empty")
        return _read_text(resolve(sandbox, path), path)

    @tool(tags=["files"])
    def list_files(
        path: Annotated[
            str,
            Field(description="Directory relative to the sandbox root; '.' is the root."),
        ] = ".",
    ) -> dict[str, Any]:
        """List the entries of a directory in the sandbox.

        Entries are sorted by name; each has a name, a type (file, directory, symlink or
        other) and a size in bytes (files only, null otherwise). At most 1000 entries are
        returned; "truncated" tells whether some were left out.

        Args:
            path: Relative path of the directory to list; defaults to the sandbox root.

        Returns:
            A dict with the normalised "path", the "entries" and "truncated".

        """
        target = resolve(sandbox, path or ".")
        if not target.exists():
            raise ToolError(f"directory '{path}' does not exist")
        if not target.is_dir():
            raise ToolError(f"'{path}' is not a directory; use read_file to read a file")
        try:
            with os.scandir(target) as iterator:
                items = sorted(iterator, key=lambda item: item.name)
        except OSError as exc:
            raise ToolError(f"cannot list '{path}': {exc.strerror}") from None
        entries = [_entry(item) for item in items[:MAX_LIST_ENTRIES]]
        return {
            "path": _display(sandbox, target),
            "entries": entries,
            "truncated": len(items) > MAX_LIST_ENTRIES,
        }

    return [write_file, read_file, list_files]


def main(argv: list[str] | None = None) -> None:
    """Serve the file tools on the ``--root`` sandbox until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument(
        "--root",
        type=Path,
        default=DEFAULT_ROOT,
        help=f"sandbox directory, created if missing (default: ./{DEFAULT_ROOT})",
    )
    options, remaining = parser.parse_known_args(argv)
    root: Path = options.root
    root.mkdir(parents=True, exist_ok=True)
    serve_main(
        make_tools(root),
        remaining,
        prog="python -m tool_clients.files",
        description=(
            "Serve the 'write_file', 'read_file' and 'list_files' tools over MQTT, confined "
            f"to a sandbox directory (--root DIR, default ./{DEFAULT_ROOT})."
        ),
    )


if __name__ == "__main__":
    main()

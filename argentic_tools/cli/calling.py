"""``argentic-tools call``: one call, with its progress, its streamed chunks and Ctrl-C.

On a terminal, progress is a bar on stderr; with ``--json`` every event is one
JSON line on stdout (``{"progress": ...}``, ``{"chunk": ...}``, then
``{"result": ...}``), for scripts. Chunks of a streaming tool are printed as
they come. Ctrl-C cancels the call at the tool before the command exits.
"""

import argparse
import json
import sys
from types import TracebackType
from typing import Any

from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.text import Text

from .._protocol.messages import TaskErrorMessage, ToolResult
from .commands import ELSEWHERE_HINT, print_json
from .common import EXIT_CALL_FAILED, EXIT_OK, CliError, StopRequest, connected_manager, stderr


def parse_arguments(parts: list[str]) -> dict[str, Any] | None:
    """ARGS as given: one JSON object (``-`` reads it from stdin), or None for pairs.

    ``KEY=VALUE`` pairs need the tool's schema to be typed (see :func:`typed_pairs`).
    """
    if not parts:
        return {}
    if len(parts) == 1 and not _is_pair(parts[0]):
        text = sys.stdin.read() if parts[0] == "-" else parts[0]
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CliError(f"ARGS_JSON is not valid JSON ({exc}): {text!r}") from None
        if not isinstance(value, dict):
            raise CliError(
                f"ARGS_JSON must be a JSON object of arguments, like '{{\"x\": 1}}', "
                f"not {type(value).__name__}"
            )
        return value
    odd = [part for part in parts if not _is_pair(part)]
    if odd:
        raise CliError(f"arguments are one JSON object or KEY=VALUE pairs; {odd[0]!r} is neither")
    return None


def _is_pair(text: str) -> bool:
    key, sep, _ = text.partition("=")
    return bool(sep) and key.isidentifier()


def typed_pairs(parts: list[str], schema: dict[str, Any]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as the tool's schema types them.

    A string property takes the text as it is; any other type (numbers, booleans,
    arrays, objects, null) reads the text as JSON, falling back to the text.
    """
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    arguments: dict[str, Any] = {}
    for part in parts:
        key, _, text = part.partition("=")
        kind = properties.get(key, {}).get("type") if isinstance(properties, dict) else None
        if kind == "string":
            arguments[key] = text
            continue
        try:
            arguments[key] = json.loads(text)
        except json.JSONDecodeError:
            arguments[key] = text  # the tool's schema check names the problem
    return arguments


def print_json_line(value: Any) -> None:
    """Print ``value`` as one line of JSON on stdout, flushed at once."""
    print(json.dumps(value, ensure_ascii=False), flush=True)


async def call_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``call``: call one tool and print its result as JSON (exit 1 when it failed)."""
    arguments = parse_arguments(args.arguments)
    async with connected_manager(args) as manager:
        with stderr.status(Text(f"Waiting for tool {args.name!r}...")):
            try:
                info = await manager.wait_for_tool(args.name, timeout=args.wait)
            except TimeoutError as exc:
                hint = "" if manager.tools_by_id else f" {ELSEWHERE_HINT}"
                raise CliError(
                    f"tool {args.name!r} not found: {exc}{hint}", EXIT_CALL_FAILED
                ) from None
        if arguments is None:
            arguments = typed_pairs(args.arguments, info.input_schema)
        with CallView(args.name, json_lines=args.json, debug=args.debug) as view:
            stream = manager.stream_tool(
                args.name,
                arguments,
                timeout=args.timeout,
                on_progress=view.progress,
                idle_timeout=args.idle_timeout,
                max_duration=args.max_duration,
            )
            async with stream:
                async for chunk in stream:
                    view.chunk(chunk)
    assert stream.result is not None
    return view.finish(stream.result)


class CallView:
    """What ``call`` shows while the call runs: a progress bar, or JSON lines."""

    def __init__(self, name: str, *, json_lines: bool, debug: bool = False) -> None:
        self.name = name
        self.json_lines = json_lines
        self.debug = debug
        self.chunks = 0
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        if not json_lines and stderr.is_terminal:
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[done]}"),
                TimeElapsedColumn(),
                console=stderr,
                transient=True,
            )
            self._task = self._bar.add_task(f"Calling {name!r}", total=None, done="")

    def __enter__(self) -> "CallView":
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Show one progress report."""
        if self.json_lines:
            print_json_line({"progress": progress, "total": total, "message": message})
        elif self._bar is not None and self._task is not None:
            done = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
            description = f"{self.name}: {message}" if message else f"Calling {self.name!r}"
            self._bar.update(
                self._task, completed=progress, total=total, done=done, description=description
            )

    def chunk(self, chunk: Any) -> None:
        """Print one streamed chunk as it comes."""
        self.chunks += 1
        if self.json_lines:
            print_json_line({"chunk": chunk})
        else:
            print(json.dumps(chunk, ensure_ascii=False), flush=True)

    def finish(self, result: ToolResult) -> int:
        """Print the result (or raise the error); the exit status."""
        if isinstance(result, TaskErrorMessage):
            if self.debug and result.traceback:
                # The tool's own traceback (tools send one when they run with --debug).
                print(result.traceback.rstrip(), file=sys.stderr)
            raise CliError(f"{result.error} [{result.error_code}]", EXIT_CALL_FAILED)
        if self.json_lines:
            print_json_line({"result": result.result})
        elif not self.chunks:
            print_json(result.result)
        # A streamed result was printed chunk by chunk already.
        return EXIT_OK

"""``argentic-tools call``: one call, with its progress, its streamed chunks and Ctrl-C.

On a terminal, progress is a bar on stderr; with ``--json`` every event is one
JSON line on stdout (``{"progress": ...}``, ``{"chunk": ...}``, ``{"log": ...}``, then
``{"result": ...}``), for scripts. Chunks of a streaming tool are printed as
they come. Ctrl-C cancels the call at the tool before the command exits. The tool's
questions are put to the person at the terminal and its log records printed
(:mod:`.terminal_caller`).
"""

import argparse
import contextlib
import json
import re
import shlex
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.text import Text

from ..._agent.fleet.info import ToolInfo
from ..._agent.fleet.registry import closest_name, what_is_there
from ..._agent.manager import ToolManager
from ..._errors import ToolUnavailableError
from ..._protocol.content import ContentBlock, blocks_in
from ..._protocol.messages import TaskErrorMessage, ToolResult
from ..common import (
    EXIT_CALL_FAILED,
    EXIT_OK,
    CliError,
    StopRequest,
    connected_manager,
    print_json,
    settle,
    stderr,
)
from ..fleet.registry import ELSEWHERE_HINT, parameters
from ..mcp.commands import McpServer
from ..mcp.target import (
    add_mcp_server_arguments,
    client_module,
    connected_client,
    mcp_server_from,
)
from ..options import Commands, add_command, positive_seconds
from .content import block_text, content_text, save_content
from .terminal_caller import TerminalCaller, shown_level

DEFAULT_CALL_SECONDS = 30.0
"""How long ``call --mcp`` waits for a result without ``--timeout`` (as calls on the bus)."""

ARGS = "ARGS"
"""What ``call``'s help and its errors call the tool's arguments."""


class ArgumentsError(CliError):
    """ARGS that are neither ``KEY=VALUE`` pairs nor one JSON object (exit status 2).

    ``text`` is what was given, when it reads as plain words (``call shout hello``):
    the value the tool's schema can suggest a form for (:func:`suggested_arguments`).
    """

    def __init__(self, message: str, text: str | None = None) -> None:
        super().__init__(message)
        self.text = text


def parse_arguments(parts: list[str]) -> dict[str, Any] | None:
    """ARGS as given: one JSON object (``-`` reads it from stdin), or None for pairs.

    ``KEY=VALUE`` pairs need the tool's schema to be typed (see :func:`typed_pairs`).

    Raises:
        ArgumentsError: ARGS are neither; the message says why, and how to write
            pairs written another way (``text: hi``, ``--text=hi``, ``text=two words``).

    """
    if not parts:
        return {}
    if len(parts) == 1 and not _is_pair(parts[0]):
        text = sys.stdin.read() if parts[0] == "-" else parts[0]
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            hint = _pair_hint([text])
            raise ArgumentsError(
                f"{ARGS} {text!r} are neither KEY=VALUE pairs nor a JSON object "
                f"(not JSON: {exc.msg}){hint}",
                None if hint else text,
            ) from None
        if not isinstance(value, dict):
            raise ArgumentsError(
                f"{ARGS} must be a JSON object of arguments, like '{{\"x\": 1}}' (or "
                f"KEY=VALUE pairs), not a JSON {type(value).__name__}"
            )
        return value
    odd = [part for part in parts if not _is_pair(part)]
    if odd:
        hint = _pair_hint(parts)
        raise ArgumentsError(
            f"{ARGS} are KEY=VALUE pairs or one JSON object; {odd[0]!r} is neither{hint}",
            None if hint or len(odd) < len(parts) else " ".join(parts),
        )
    return None


_LOOSE_PAIR = re.compile(r"-{0,2}([A-Za-z_]\w*)\s*[:=]\s*(\S.*)", re.DOTALL)
"""A pair written another way: ``text: hi``, ``--text=hi``, ``text = hi``."""


def _pair_hint(parts: list[str]) -> str:
    """How to write ARGS that are pairs written another way; '' when they are not."""
    first_odd = next(i for i, part in enumerate(parts) if not _is_pair(part))
    if first_odd > 0:
        # text=hello world: the shell split a value that was not quoted.
        key, _, value = parts[first_odd - 1].partition("=")
        words = [value]
        for part in parts[first_odd:]:
            if _is_pair(part):
                break
            words.append(part)
        return f"; quote a value with spaces: {key}={shlex.quote(' '.join(words))}"
    loose = _LOOSE_PAIR.fullmatch(" ".join(parts).strip())
    if loose is None:
        return ""
    key, value = loose.groups()
    try:
        typed = json.loads(value)
    except json.JSONDecodeError:
        typed = value
    as_json = shlex.quote(json.dumps({key: typed}, ensure_ascii=False))
    return f"; write {key}={shlex.quote(value)} or {as_json}"


def suggested_arguments(name: str, text: str, schema: dict[str, Any]) -> str:
    """How to give ``text`` to tool ``name``, from its schema: the end of an error message.

    A tool with exactly one required string parameter gets ``text`` as that
    parameter, in both forms (``text=hello`` and ``'{"text": "hello"}'``); any other
    tool gets its parameters listed.
    """
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return f"; {name!r} takes no arguments"
    required = [key for key in schema.get("required", ()) if key in properties]
    if len(required) == 1 and properties[required[0]].get("type") == "string":
        key = required[0]
        as_json = shlex.quote(json.dumps({key: text}, ensure_ascii=False))
        return f"; try: argentic-tools call {name} {key}={shlex.quote(text)} (or {as_json})"
    return f"; {name!r} takes {parameters(schema)}"


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
    """``call``: call one tool and print its result as JSON (exit 1 when it failed).

    With ``--mcp URL``, ``--mcp-command COMMAND`` or ``--config FILE``: a tool of that
    MCP server instead (see :func:`call_mcp_tool`).
    """
    server = mcp_server_from(args)
    if server is not None:
        return await call_mcp_tool(args, server)
    try:
        arguments = parse_arguments(args.arguments)
    except ArgumentsError as exc:
        raise await _with_suggestion(exc, args) from None
    async with connected_manager(args) as manager:
        with stderr.status(Text(f"Waiting for tool {args.name!r}...")):
            info = await find_tool(manager, args.name, args.wait)
        if arguments is None:
            arguments = typed_pairs(args.arguments, info.input_schema)
        with CallView(
            args.name, json_lines=args.json, debug=args.debug, save_to=args.save_content
        ) as view:
            view.asking = can_ask(args)
            caller = TerminalCaller(
                stderr,
                ask=view.asking,
                log_level=args.tool_log,
                json_lines=args.json,
                roots=[Path(root) for root in args.root],
                pause=view.paused,
                interrupting=stop.interrupting,
            )
            stream = manager.stream_tool(
                args.name,
                arguments,
                timeout=args.timeout,
                on_progress=view.progress,
                idle_timeout=args.idle_timeout,
                max_duration=args.max_duration,
                **caller.handlers(),
            )
            async with stream:
                async for chunk in stream:
                    view.chunk(chunk)
    assert stream.result is not None
    return view.finish(stream.result)


def can_ask(args: argparse.Namespace) -> bool:
    """Whether ``call`` may put a tool's questions to a person: stdin is a terminal, not ARGS.

    ``--no-ask`` never asks; ``-`` as ARGS has read stdin already.
    """
    if args.no_ask or args.arguments == ["-"] or sys.stdin is None:
        return False
    try:
        return sys.stdin.isatty()
    except ValueError:  # stdin closed
        return False


async def call_mcp_tool(args: argparse.Namespace, server: McpServer) -> int:
    """``call`` against an MCP server: the same ARGS, its result printed as ``call`` does.

    Text content is printed as text, structured content as JSON, and content that is
    not all text block by block as ``call`` prints a tool's blocks (``--save-content``
    saves them too); an ``isError`` result is a failure (exit status 1).
    """
    for option, value in (
        ("--idle-timeout", args.idle_timeout),
        ("--max-duration", args.max_duration),
    ):
        if value is not None:
            raise CliError(f"{option} is for tools on the bus; give an MCP call --timeout")
    problem: ArgumentsError | None = None
    try:
        arguments = parse_arguments(args.arguments)
    except ArgumentsError as exc:
        if exc.text is None:
            raise
        problem = exc  # plain words: the tool's schema may suggest a form for them
    module = client_module()
    timeout = args.timeout or DEFAULT_CALL_SECONDS
    async with connected_client(server) as client:
        tools = {tool.name: tool for tool in await module.list_tools(client)}
        tool = tools.get(args.name)
        if tool is None:
            raise CliError(
                f"tool {args.name!r} not found on the MCP server {server}: "
                + what_is_there(args.name, tools),
                EXIT_CALL_FAILED,
            )
        schema = dict(tool.input_schema)
        if problem is not None and problem.text is not None:
            raise CliError(f"{problem}{suggested_arguments(tool.name, problem.text, schema)}")
        if arguments is None:
            arguments = typed_pairs(args.arguments, schema)
        with CallView(
            args.name, json_lines=args.json, debug=args.debug, save_to=args.save_content
        ) as view:
            try:
                with anyio.fail_after(timeout):
                    result = await module.call_tool(
                        client, args.name, arguments, on_progress=view.progress
                    )
            except TimeoutError:
                raise CliError(
                    f"tool {args.name!r} did not answer within {timeout:g} s", EXIT_CALL_FAILED
                ) from None
            except module.McpServerError as exc:
                raise CliError(str(exc), EXIT_CALL_FAILED) from None
    is_text, value = module.result_value(result)
    if result.is_error:
        raise CliError(f"tool {args.name!r} failed: {value}", EXIT_CALL_FAILED)
    content: list[ContentBlock] | None = module.result_content(result)
    if content is not None:
        # Not all text: shown (and saved) as a tool's blocks are, the value after them.
        view.show_content(content, result.structured_content, uuid.uuid4().hex)
    elif args.json:
        print_json_line({"result": value})
    elif is_text:
        print(value)
    else:
        print_json(value)
    return EXIT_OK


async def _with_suggestion(error: ArgumentsError, args: argparse.Namespace) -> CliError:
    """``error``, with the arguments the tool takes when it registers within ``--wait``.

    Best effort: when the broker or the tool does not answer, ``error`` is all there is.
    """
    if error.text is None:
        return error
    with (
        contextlib.suppress(Exception),
        stderr.status(Text(f"Looking up the parameters of {args.name!r}...")),
    ):
        async with connected_manager(args) as manager:
            info = await manager.wait_for_tool(args.name, timeout=args.wait)
        return CliError(f"{error}{suggested_arguments(info.name, error.text, info.input_schema)}")
    return error


async def find_tool(manager: ToolManager, name: str, wait: float) -> ToolInfo:
    """The tool ``name`` (or id) as soon as it is registered, within ``wait`` seconds.

    A name that is not registered once the live tools have all answered the manager's
    announcement (:func:`settle`), but is close to one that is, is a typo: it fails
    then, saying which name was meant, rather than after the whole ``wait``. Any other
    name is waited for up to ``wait`` seconds: its tool may be starting.

    Raises:
        CliError: Not registered (exit status 1), naming the closest registered name.

    """
    found: ToolInfo | None = None
    problem = ""

    async def until_registered(scope: anyio.CancelScope) -> None:
        nonlocal found, problem
        try:
            found = await manager.wait_for_tool(name, timeout=wait)
        except ToolUnavailableError as exc:
            problem = str(exc)
        scope.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(until_registered, group.cancel_scope)
        await settle(manager, wait)
        # A registration wakes the waiter above at once, and settling takes a quiet
        # spell after the last one: a tool registered by now has been found already.
        names = manager.get_tool_names()
        if found is None and closest_name(name, names) is not None:
            problem = (
                f"Tool '{name}' is not registered on {manager.messager.url} (topic "
                f"{manager.topics.register!r}), and the tools there have all registered. "
                + what_is_there(name, names)
            )
            group.cancel_scope.cancel()
    if found is None:
        hint = "" if manager.tools_by_id else f" {ELSEWHERE_HINT}"
        raise CliError(f"tool {name!r} not found: {problem}{hint}", EXIT_CALL_FAILED)
    return found


class CallView:
    """What ``call`` shows while the call runs: a progress bar, or JSON lines."""

    def __init__(
        self, name: str, *, json_lines: bool, debug: bool = False, save_to: str | None = None
    ) -> None:
        self.name = name
        self.json_lines = json_lines
        self.debug = debug
        self.save_to = Path(save_to) if save_to is not None else None
        self.chunks = 0
        self.asking = True
        """Whether the tool's questions were offered to the person (see :func:`can_ask`)."""
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

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Put the progress bar away while the block runs (a question is being asked)."""
        if self._bar is None:
            yield
            return
        self._bar.stop()
        try:
            yield
        finally:
            self._bar.start()

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
        """Print one streamed chunk as it comes (a block as ``call`` prints blocks)."""
        self.chunks += 1
        found = blocks_in(chunk if isinstance(chunk, list) else [chunk])
        if found is None:
            if self.json_lines:
                print_json_line({"chunk": chunk})
            else:
                print(json.dumps(chunk, ensure_ascii=False), flush=True)
            return
        blocks, values = found
        if self.json_lines:
            value = values if isinstance(chunk, list) else values[0]
            print_json_line({"chunk": value, "content": [block.wire() for block in blocks]})
        else:
            for block in blocks:
                print(block_text(block), flush=True)

    def finish(self, result: ToolResult) -> int:
        """Print the result (or raise the error); the exit status."""
        if isinstance(result, TaskErrorMessage):
            if self.debug and result.traceback:
                # The tool's own traceback (tools send one when they run with --debug).
                print(result.traceback.rstrip(), file=sys.stderr)
            raise CliError(
                f"{result.error} [{result.error_code}]{self._unasked_hint(result.error)}",
                EXIT_CALL_FAILED,
            )
        if result.content:
            self.show_content(result.content, result.result, result.task_id)
        elif self.json_lines:
            print_json_line({"result": result.result})
        elif not self.chunks:
            print_json(result.result)
        # A streamed result was printed chunk by chunk already.
        return EXIT_OK

    def _unasked_hint(self, error: str) -> str:
        """Why nobody answered a tool that asked, when ``call`` offered it no person."""
        if self.asking or not any(name in error for name in ("on_elicit", "on_sample")):
            return ""
        return (
            " (call puts a tool's questions to you only when stdin is a terminal and "
            "--no-ask is not given)"
        )

    def show_content(self, content: list[ContentBlock], value: Any, call: str) -> None:
        """Print a result with content blocks, and save them with ``--save-content``.

        ``value`` is the result's value (printed after the blocks unless it only
        renders them); ``call`` names the call in the saved files' names.
        """
        saved: list[Path] = []
        if self.save_to is not None:
            try:
                saved = save_content(content, self.save_to, self.name, call)
            except OSError as exc:
                raise CliError(f"--save-content {self.save_to}: {exc}", EXIT_CALL_FAILED) from None
            if not saved:
                stderr.print("No image, audio or resource in the result to save.")
        if self.json_lines:
            line: dict[str, Any] = {
                "result": value,
                "content": [block.wire() for block in content],
            }
            if self.save_to is not None:
                line["saved"] = [str(path) for path in saved]
            print_json_line(line)
        elif not self.chunks:
            print(content_text(content, value), flush=True)
        for path in saved:
            stderr.print(f"Saved {path}")


def add_parser(commands: Commands) -> None:
    """``call``: its options (and an MCP server's, to call one directly)."""
    call = add_command(
        commands,
        "call",
        "call a tool and print its result as JSON",
        (
            "argentic-tools call calculate expression='2 * (3 + 4)'  # KEY=VALUE",
            'argentic-tools call calculate \'{"expression": "sqrt(16)"}\'  # one JSON object',
            "argentic-tools call convert_units value=10 from_unit=km to_unit=mi",
            "argentic-tools call current_time --json --timeout 5",
            "argentic-tools call current_time --tool-log debug --no-ask  # its logs; no questions",
        ),
    )
    call.add_argument("name", help="tool name (or id)")
    call.add_argument(
        "arguments",
        nargs="*",
        metavar=ARGS,
        help="the tool's arguments: KEY=VALUE pairs typed by the tool's schema "
        "(a=2 b=true tags='[\"x\"]'), or one JSON object ('-' reads it from stdin)",
    )
    _add_time_limits(call)
    call.add_argument(
        "--json",
        action="store_true",
        help="print progress, streamed chunks and the result as JSON lines",
    )
    call.add_argument(
        "--save-content",
        default=None,
        metavar="DIR",
        help="write each image, audio and embedded resource of the result to a file of DIR "
        "(named TOOL-CALL-N.EXT, never overwriting one; created when missing)",
    )
    call.add_argument(
        "--wait",
        type=positive_seconds,
        default=5.0,
        help="at most this many seconds to wait for the tool (a name close to a registered "
        "one fails as soon as registrations stop: a typo)",
    )
    _add_exchange_options(call)
    add_mcp_server_arguments(call)
    call.set_defaults(run=call_command, log_level="WARNING")


def _add_time_limits(call: argparse.ArgumentParser) -> None:
    """``call``'s ``--timeout``, ``--idle-timeout`` and ``--max-duration``."""
    call.add_argument(
        "--timeout",
        type=positive_seconds,
        default=None,
        help="seconds to wait for the result (30 by default; with --idle-timeout, the "
        "absolute limit unless --max-duration is given)",
    )
    call.add_argument(
        "--idle-timeout",
        type=positive_seconds,
        default=None,
        help="for long calls: give up after this many seconds without a progress report",
    )
    call.add_argument(
        "--max-duration",
        type=positive_seconds,
        default=None,
        help="with --idle-timeout: the absolute limit no progress extends",
    )


def _add_exchange_options(call: argparse.ArgumentParser) -> None:
    """``call``'s options for the tool's questions, log records and roots."""
    call.add_argument(
        "--no-ask",
        action="store_true",
        help="never put the tool's questions to you (it learns that its caller cannot answer); "
        "also so when stdin is not a terminal",
    )
    call.add_argument(
        "--tool-log",
        type=shown_level,
        default="info",
        metavar="LEVEL",
        help="print the tool's log records from LEVEL up (debug, info, notice, warning, error, "
        "critical, alert, emergency), or none of them: off",
    )
    call.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory the tool may work in, when it asks for its caller's roots (repeatable)",
    )

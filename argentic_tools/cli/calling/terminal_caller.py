"""``call``'s part in a call: the person at the terminal answers the tool, and sees its logs.

A tool may ask its caller a question, ask for a completion of its model, ask for its
roots, and log to it. ``argentic-tools call`` takes part so:

- a question (``on_elicit``): the terminal shows the tool's message, then asks whether to
  answer, decline or cancel; to answer, it asks field by field from the requested
  schema (:mod:`.answer_form`), again after an answer that does not fit. Ctrl-C or
  Ctrl-D cancels the question (the call goes on: the tool decides);
- a completion (``on_sample``): the person plays the model. The terminal shows the
  conversation (images and audio as their type and size) and takes the reply; an empty
  reply declines, and the tool gets an error saying so;
- roots (``on_roots``): the directories given with ``--root``;
- log records (``on_log``): printed on stderr as they come, with their level, from
  ``--tool-log LEVEL`` up (with ``--json``, as ``{"log": ...}`` lines on stdout).

Questions and completions need a person: they are offered only when stdin is a
terminal and ``--no-ask`` is not given. Otherwise the tool learns that its caller cannot
answer and gets :class:`~argentic_tools.AskNotSupportedError` at once. The terminal is
read in a worker thread (:mod:`.line_reader`), one question at a time; while one is
open, the progress bar is put away and log records wait, so that nothing is printed
over the line being typed.
"""

import contextlib
import json
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from rich.console import Console
from rich.text import Text

from ..._agent.calls.participation.handlers import CallRef
from ..._protocol.participation import (
    MCP_LOG_LEVELS,
    ElicitRequest,
    ElicitResult,
    LogRecord,
    McpLogLevel,
    Root,
    SampleRequest,
    SampleResult,
)
from .answer_form import (
    DONE,
    SKIP,
    Action,
    InvalidAnswerError,
    Question,
    answer_text,
    form_questions,
    parse_action,
)
from .content import block_text
from .line_reader import LineReader, PromptInterruptedError

T = TypeVar("T")

PERSON = "a person at the terminal"
"""The ``model`` of a completion the person typed."""

ACTION_PROMPT = "  Answer (a), decline (d) or cancel (c)? [a]: "
"""What the terminal asks first of each question."""

HELD_RECORDS = 1000
"""Log records kept while a question is open (the oldest go first beyond)."""

LEVEL_STYLES: dict[str, str] = {
    "debug": "dim",
    "info": "cyan",
    "notice": "bold cyan",
    "warning": "yellow",
    "error": "red",
    "critical": "bold red",
    "alert": "bold red",
    "emergency": "bold red reverse",
}


class SampleDeclinedError(Exception):
    """The person at the terminal gave no reply (the tool gets this message as its error)."""


def log_text(record: LogRecord, tool: str) -> Text:
    """A tool's log record as one line: ``warning  pay (payments): card expires soon {...}``."""
    text = Text.assemble((f"{record.level:<9}", LEVEL_STYLES.get(record.level, "")), (tool, "bold"))
    if record.logger:
        text.append(f" ({record.logger})", style="dim")
    text.append(": ")
    text.append(record.message)
    if record.data is not None:
        data = json.dumps(record.data, ensure_ascii=False, default=str)
        text.append(f" {data}" if record.message else data, style="dim")
    return text


def conversation_lines(request: SampleRequest) -> list[str]:
    """A completion request as the person reads it: the system prompt, then each message."""
    lines = []
    if request.system_prompt:
        lines.append(f"system: {request.system_prompt}")
    for message in request.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        for block in blocks:
            lines.append(f"{message.role}: {block_text(block)}")
    return lines


def shown_level(level: str) -> McpLogLevel | None:
    """The MCP level ``level`` names (any case), or None for ``off``.

    Raises:
        ValueError: ``level`` is neither.

    """
    folded = level.strip().lower()
    if folded in ("off", "none"):
        return None
    for known in MCP_LOG_LEVELS:
        if known == folded:
            return known
    raise ValueError(f"{level!r} is not a log level ({', '.join(MCP_LOG_LEVELS)}, or off)")


class TerminalCaller:
    """The handlers ``call`` passes with its call.

    Args:
        console: Where questions and log lines are printed (stderr).
        ask: Offer questions and completions (stdin is a terminal, no ``--no-ask``).
        log_level: The least severe log record printed; None: none (``--tool-log off``).
        json_lines: Print log records as ``{"log": ...}`` JSON lines on stdout.
        roots: The directories a tool may ask for (``--root``); none: not offered.
        pause: Puts the progress bar away while the block runs.
        interrupting: While its block runs, Ctrl-C calls the function given instead of
            stopping the command.
        fd: The terminal to read (stdin's file descriptor).

    """

    def __init__(
        self,
        console: Console,
        *,
        ask: bool,
        log_level: McpLogLevel | None,
        json_lines: bool = False,
        roots: list[Path] | None = None,
        pause: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
        interrupting: Callable[
            [Callable[[], None]], contextlib.AbstractContextManager[Any]
        ] = lambda _: contextlib.nullcontext(),
        fd: int | None = None,
    ) -> None:
        self.console = console
        self.ask = ask
        self.log_level = log_level
        self.json_lines = json_lines
        self.roots = [Root(uri=path.resolve().as_uri(), name=path.name) for path in roots or ()]
        self.pause = pause
        self.interrupting = interrupting
        self.fd = sys.stdin.fileno() if fd is None and ask else fd
        self._lock = anyio.Lock()
        self._asking = False
        self._held: deque[tuple[LogRecord, str]] = deque(maxlen=HELD_RECORDS)

    def handlers(self) -> dict[str, Any]:
        """The keywords for ``stream_tool``: each handler, or None where it is not offered."""
        return {
            "on_elicit": self.on_elicit if self.ask else None,
            "on_sample": self.on_sample if self.ask else None,
            "on_roots": self.on_roots if self.roots else None,
            "on_log": self.on_log if self.log_level is not None else None,
        }

    # -- the handlers ----------------------------------------------------------------

    async def on_elicit(self, request: ElicitRequest, call: CallRef) -> ElicitResult:
        """Ask the person the tool's question; their answer, declining or cancelling."""
        questions = form_questions(request.requested_schema)
        return await self._dialog(lambda reader: self._elicit(reader, request, call, questions))

    async def on_sample(self, request: SampleRequest, call: CallRef) -> SampleResult:
        """Have the person reply as the model.

        Raises:
            SampleDeclinedError: No reply (an empty one, Ctrl-C, Ctrl-D).

        """
        reply = await self._dialog(lambda reader: self._sample(reader, request, call))
        if reply is None:
            raise SampleDeclinedError("the person at the terminal declined to reply")
        return SampleResult(role="assistant", content=reply, model=PERSON, stop_reason="endTurn")

    def on_roots(self, call: CallRef) -> list[Root]:
        """The ``--root`` directories."""
        return list(self.roots)

    def on_log(self, record: LogRecord, call: CallRef) -> None:
        """Print a log record from ``--tool-log``'s level up (held while a question is open)."""
        if self.log_level is None or _severity(record.level) < _severity(self.log_level):
            return
        if self.json_lines:
            shape = record.model_dump(mode="json", exclude_none=True)
            line = json.dumps({"log": {"tool": call.tool_name, **shape}}, ensure_ascii=False)
            print(line, flush=True)
        elif self._asking:
            self._held.append((record, call.tool_name))
        else:
            self.console.print(log_text(record, call.tool_name))

    # -- the terminal ------------------------------------------------------------------

    async def _dialog(self, work: Callable[[LineReader], T]) -> T:
        """Run ``work`` in a worker thread with its own reader, one dialog at a time."""
        assert self.fd is not None
        async with self._lock:
            reader = LineReader(self.fd)
            self._asking = True
            try:
                with self.pause(), self.interrupting(reader.interrupt):
                    try:
                        return await anyio.to_thread.run_sync(
                            _owning, work, reader, abandon_on_cancel=True
                        )
                    except anyio.get_cancelled_exc_class():
                        # The call ended meanwhile: the thread stops at once, by itself.
                        reader.interrupt()
                        raise
            finally:
                self._asking = False
                while self._held:
                    record, tool = self._held.popleft()
                    self.console.print(log_text(record, tool))

    def _elicit(
        self,
        reader: LineReader,
        request: ElicitRequest,
        call: CallRef,
        questions: list[Question],
    ) -> ElicitResult:
        say = self.console.print
        # Text, never a plain string: the tool's words are not read as markup or emoji codes.
        say(
            Text.assemble(
                ("? ", "bold magenta"), (call.tool_name, "bold"), " asks: ", request.message
            )
        )
        try:
            action = self._choose(reader)
            if action != "accept":
                say(Text(f"  {DONE[action]}", style="yellow"))
                return ElicitResult(action=action)
            content: dict[str, Any] = {}
            for question in questions:
                value = self._field(reader, question, request.message)
                if value is not SKIP:
                    content[question.key] = value
        except PromptInterruptedError:
            say(Text("  cancelled", style="yellow"))
            return ElicitResult(action="cancel")
        say(Text(f"  answered {answer_text(content)}", style="green"))
        return ElicitResult(action="accept", content=content)

    def _choose(self, reader: LineReader) -> Action:
        while True:
            action = parse_action(self._read(reader, ACTION_PROMPT))
            if action is not None:
                return action
            self.console.print(Text("  ! type a, d or c", style="red"))

    def _field(self, reader: LineReader, question: Question, message: str) -> Any:
        about = Text.assemble("  ", (question.title, "bold"), (f" ({question.hint()})", "dim"))
        if question.description and question.description != message:
            about.append(f"\n    {question.description}", style="dim")
        self.console.print(about)
        for number, choice in enumerate(question.choices, start=1):
            self.console.print(Text(f"    {number}. {choice.title}"))
        while True:
            try:
                return question.parse(self._read(reader, f"  {question.prompt()}"))
            except InvalidAnswerError as exc:
                self.console.print(Text(f"  ! {exc}", style="red"))

    def _sample(self, reader: LineReader, request: SampleRequest, call: CallRef) -> str | None:
        say = self.console.print
        say(
            Text.assemble(
                ("? ", "bold magenta"),
                (call.tool_name, "bold"),
                f" asks for a completion (reply as the model, up to {request.max_tokens} tokens):",
            )
        )
        for line in conversation_lines(request):
            say(Text(f"  {line}"))
        try:
            reply = self._read(reader, "  Reply (empty: decline): ").strip()
        except PromptInterruptedError:
            reply = ""
        say(Text("  replied" if reply else "  declined", style="green" if reply else "yellow"))
        return reply or None

    def _read(self, reader: LineReader, prompt: str) -> str:
        self.console.print(Text(prompt, style="bold"), end="")
        self.console.file.flush()
        try:
            return reader.read_line()
        except PromptInterruptedError:
            self.console.print()
            raise


def _owning(work: Callable[[LineReader], T], reader: LineReader) -> T:
    """Run ``work`` and close the reader (in the worker thread, which owns it)."""
    try:
        return work(reader)
    finally:
        reader.close()


def _severity(level: str) -> int:
    try:
        return MCP_LOG_LEVELS.index(level)
    except ValueError:
        return len(MCP_LOG_LEVELS)

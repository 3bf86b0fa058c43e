"""A call's exchange with its caller as the command line prints it: questions, answers, logs.

An observation's ``exchanges`` (kept by a call history) list, in order, the tool's
questions with their answers and its log records, in MCP's shapes. Each becomes a few
lines: when (from the call's start), what was asked, what was answered (or why not).
"""

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from rich.text import Text

from ..._protocol.participation import LogRecord
from .answer_form import DONE
from .content import shape_text
from .terminal_caller import log_text

INDENT = "    "


def exchange_summary(exchanges: list[dict[str, Any]] | None) -> str:
    """How much was said, for a table: ``2 questions, 3 log records``; '' when nothing."""
    if not exchanges:
        return ""
    logs = sum(1 for exchange in exchanges if exchange.get("kind") == "log")
    asked = len(exchanges) - logs
    parts = []
    if asked:
        parts.append(f"{asked} question{'s' if asked != 1 else ''}")
    if logs:
        parts.append(f"{logs} log record{'s' if logs != 1 else ''}")
    return ", ".join(parts)


def exchange_lines(exchanges: list[dict[str, Any]], tool: str) -> list[Text]:
    """Every exchange of a call to ``tool``, in order, a few lines each."""
    lines: list[Text] = []
    for exchange in exchanges:
        if not isinstance(exchange, Mapping):
            continue
        at = exchange.get("at_ms")
        when = Text(f"{at / 1000:>8.3f} s  " if isinstance(at, int | float) else " " * 12, "dim")
        kind = exchange.get("kind")
        if kind == "log":
            lines.append(when + _log(exchange.get("record"), tool))
            continue
        request = exchange.get("request")
        request = request if isinstance(request, Mapping) else {}
        asked = _asked(str(kind), request)
        lines.append(when + Text.assemble(("asked ", "bold magenta"), asked[0]))
        lines.extend(Text(f"{' ' * 12}{INDENT}{line}") for line in asked[1:])
        lines.append(Text(" " * 12) + _answer(str(kind), exchange))
    return lines


def _log(record: Any, tool: str) -> Text:
    try:
        return log_text(LogRecord.model_validate(record), tool)
    except ValidationError:
        return Text(json.dumps(record, ensure_ascii=False, default=str))


def _asked(kind: str, request: Mapping[str, Any]) -> list[str]:
    """The question's first line, then the lines that show it whole."""
    if kind == "elicit":
        fields = ", ".join((request.get("requestedSchema") or {}).get("properties") or {})
        return [str(request.get("message", "")), *([f"fields: {fields}"] if fields else [])]
    if kind == "sample":
        # From the shapes, not the model: a history keeps an image without its data.
        lines = [f"system: {request['systemPrompt']}"] if request.get("systemPrompt") else []
        for message in request.get("messages") or []:
            if isinstance(message, Mapping):
                lines += [
                    f"{message.get('role')}: {text}" for text in _blocks(message.get("content"))
                ]
        return ["for a completion:", *lines]
    if kind == "roots":
        return ["for the caller's roots"]
    return [f"{kind}: {json.dumps(request, ensure_ascii=False, default=str)}"]


def _blocks(content: Any) -> list[str]:
    """A message's content (one block or several, in MCP's shapes) as ``call`` prints blocks."""
    return [shape_text(block) for block in (content if isinstance(content, list) else [content])]


def _answer(kind: str, exchange: Mapping[str, Any]) -> Text:
    if "error" in exchange and exchange.get("answer") is None:
        return Text(f"no answer: {exchange.get('error')}", "red")
    answer = exchange.get("answer")
    if not isinstance(answer, Mapping):
        return Text("no answer", "yellow")
    if kind == "elicit":
        action = answer.get("action")
        if action == "accept":
            content = json.dumps(answer.get("content") or {}, ensure_ascii=False, default=str)
            return Text(f"answered {content}", "green")
        return Text(DONE.get(str(action), str(action)), "yellow")
    if kind == "sample":
        text = " ".join(_blocks(answer.get("content")))
        return Text(f"reply from {answer.get('model', 'the model')}: {text}", "green")
    if kind == "roots":
        roots = answer.get("roots") or []
        uris = ", ".join(str(root.get("uri")) for root in roots if isinstance(root, Mapping))
        return Text(f"roots: {uris or 'none'}", "green")
    return Text(json.dumps(answer, ensure_ascii=False, default=str))

"""The checks a call passes before its task exists: policy, arguments, context, deadline.

Pure logic, no I/O: :func:`check` returns the arguments as they will be sent, or a
:class:`Refusal` that says why the call cannot be sent. The pending table
(:class:`~..running.book.CallBook`) turns a refusal into the call's one result.
"""

from typing import Any, NamedTuple

from ...._protocol.messages import CallContext, TaskStatus
from ...._protocol.validation import describe_problems
from ...fleet.info import Entry
from ...policy import ToolPolicy
from ..pending.pending import CallSpec
from .arguments import unsendable, utf8_safe, without_skipped_nulls


class Refusal(NamedTuple):
    """Why a call to a registered tool cannot be sent."""

    text: str
    """The result's ``error``: names the tool and the cause."""
    code: str
    """The result's ``error_code``."""
    arguments: Any
    """The arguments the result echoes (None when they cannot be carried)."""
    details: Any = None
    """The result's ``details``."""
    status: TaskStatus = TaskStatus.FAILED


def check(entry: Entry, spec: CallSpec, policy: ToolPolicy) -> dict[str, Any] | Refusal:
    """The arguments of ``spec`` as they will be sent to ``entry``, or why they cannot be.

    Checked in order: the policy for the call's thread, that the arguments are an
    object JSON can carry, that the context can be sent, the tool's argument schema
    (after dropping the nulls a strict-mode model sends for skipped defaults), and that
    the call has time left.
    """
    info = entry.info
    given, context, timeout = spec.arguments, spec.context, spec.timeout
    thread_id = context.thread_id if context else None
    if not policy.is_enabled(info.name, thread_id):
        text = f"Tool '{info.name}' is not enabled for thread '{thread_id}'."
        return Refusal(text, "not_enabled", given)
    if not isinstance(given, dict):
        kind = "a JSON string" if isinstance(given, str) else type(given).__name__
        return Refusal(
            f"Tool '{info.name}': arguments must be a JSON object mapping parameter names "
            f"to values, but {kind} came; pass the object itself, not a string.",
            "invalid_arguments",
            given,
            [{"path": "$", "message": "expected an object", "got": kind}],
        )
    arguments: dict[str, Any] = given
    problem = unsendable(arguments)
    if problem is not None:
        return Refusal(
            f"Tool '{info.name}': invalid arguments: {problem}",
            "invalid_arguments",
            None,
            [{"path": "$", "message": problem}],
        )
    problem = _unsendable_context(context)
    if problem is not None:
        return Refusal(f"Tool '{info.name}': {problem}", "invalid_arguments", arguments)
    problems = entry.validator.problems(arguments)
    if problems:
        # OpenAI's strict mode makes every optional parameter required and nullable,
        # so a model sends null for a default it skips: null there means "default".
        arguments = without_skipped_nulls(arguments, info.input_schema, problems)
        problems = entry.validator.problems(arguments)
    if problems:
        return Refusal(
            f"Tool '{info.name}': invalid arguments: {describe_problems(problems)}",
            "invalid_arguments",
            arguments,
            problems,
        )
    if timeout is not None and timeout <= 0:
        return Refusal(
            f"Tool '{info.name}' timed out: the timeout was {timeout:g} s, "
            "so the call was not sent.",
            "timeout",
            arguments,
            status=TaskStatus.TIMEOUT,
        )
    return arguments


def _unsendable_context(context: CallContext | None) -> str | None:
    """Why the protocol's fields of ``context`` cannot be sent (UTF-8 cannot carry one)."""
    if context is None:
        return None
    for name in CallContext.model_fields:
        value = getattr(context, name)
        if isinstance(value, str) and not utf8_safe(value):
            return f"the context's {name} is a string that UTF-8 cannot carry (a lone surrogate)"
    return None

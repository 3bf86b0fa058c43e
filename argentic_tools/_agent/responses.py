"""What arrives on a manager's response topics, routed: :class:`Responses`.

Results, progress reports, chunks, a tool's questions and log records go to the call
that made them (:class:`~.calls.running.book.CallBook`); pongs and stats answers to the fleet
(its liveness, and ``fleet_stats``). Every message
is a sign of life of the tool instance whose topic it came on. Malformed messages, and
messages on the wrong tool's topic, are logged (rate-limited) and dropped.
"""

import logging
from collections.abc import Callable

from .._errors import ProtocolError
from .._logging import DropLog, InstanceLogger
from .._protocol.fleet_messages import ToolPongMessage, ToolStatsMessage
from .._protocol.messages import (
    TaskErrorMessage,
    TaskResultMessage,
    ToolPartialMessage,
    ToolProgressMessage,
)
from .._protocol.parsing import parse_message
from .._protocol.participation import ToolAskMessage, ToolLogMessage
from .._protocol.topics import Topics
from .._transport import IncomingMessage
from .calls.running.book import CallBook


class Responses:
    """The handler of one manager's response topics.

    Args:
        topics: The manager's topics (the tool id is read from a response topic).
        max_payload_bytes: Largest payload accepted.
        calls: The manager's pending calls.
        alive: Told that a tool instance answered: ``alive(tool_id, source)``
            (the fleet's liveness).
        stats_answered: Takes the ``fleet_stats`` answers (None: the manager has no inbox).
        drops: Where dropped messages are logged.
        logger: The manager's logger.
        noted: Told of each progress report and question of a pending call (the
            manager's journal keeps the latest).

    """

    def __init__(
        self,
        topics: Topics,
        max_payload_bytes: int,
        calls: CallBook,
        alive: Callable[[str | None, str | None], None],
        stats_answered: Callable[[ToolStatsMessage], None] | None,
        drops: DropLog,
        logger: "logging.Logger | InstanceLogger",
        noted: Callable[[ToolProgressMessage | ToolAskMessage], None] | None = None,
    ) -> None:
        self._topics = topics
        self._max_payload_bytes = max_payload_bytes
        self._calls = calls
        self._alive = alive
        self._stats_answered = stats_answered
        self._drops = drops
        self._logger = logger
        self._noted = noted

    def route(self, message: IncomingMessage) -> None:
        """Route one message that came on a response topic."""
        tool_id = self._topics.tool_id_from_response(message.topic)
        try:
            result = parse_message(message.payload, self._max_payload_bytes)
        except ProtocolError as exc:
            self._drops.drop(message.topic, str(exc))
            return
        self._alive(tool_id, result.source)
        if isinstance(result, ToolPongMessage):
            return
        if isinstance(result, ToolStatsMessage):
            if self._stats_answered is not None:
                self._stats_answered(result)
            return
        if isinstance(result, ToolProgressMessage | ToolPartialMessage):
            problem = self._calls.update(result, tool_id)
            if problem is None and self._noted is not None and type(result) is ToolProgressMessage:
                self._noted(result)
        elif isinstance(result, ToolAskMessage | ToolLogMessage):
            problem = self._calls.talk(result, tool_id)
            if problem is None and self._noted is not None and type(result) is ToolAskMessage:
                self._noted(result)
        elif not isinstance(result, TaskResultMessage | TaskErrorMessage):
            problem = f"expected a result, got a {result.type} message"
        else:
            dropped = self._calls.resolve(result, tool_id)
            if dropped is not None:
                problem, routine = dropped
                level = logging.INFO if routine else logging.WARNING
                self._drops.drop(message.topic, problem, level)
            elif result.task_id not in self._calls.pending:
                self._logger.debug(
                    "result for unknown task %s on %s", result.task_id, message.topic
                )
            return
        if problem is not None:
            self._drops.drop(message.topic, problem)

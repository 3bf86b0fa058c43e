"""The only place topic strings are built, and the rules for names and ids in them."""

import re
from dataclasses import dataclass
from functools import cached_property

DEFAULT_REGISTER_TOPIC = "agent/tools/register"
DEFAULT_CALL_TOPIC_BASE = "agent/tools/call"
DEFAULT_RESPONSE_TOPIC_BASE = "agent/tools/response"
DEFAULT_STATUS_TOPIC = "agent/status/info"

MAX_TOOL_NAME_LENGTH = 128
"""Longest tool name a manager accepts."""

_TOOL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_FORBIDDEN_IN_NAME = re.compile(r"[/+#\x00-\x1f\x7f]")
_FORBIDDEN_IN_LEVEL = re.compile(r"[/+#\x00]")


def tool_name_problem(name: object) -> str | None:
    """Say why ``name`` cannot be a tool name, or return None when it can.

    A tool name is a non-empty string of at most :data:`MAX_TOOL_NAME_LENGTH`
    characters without ``/``, ``+``, ``#``, NUL or other control characters
    (names end up in logs, topics and LLM prompts).
    """
    if not isinstance(name, str) or not name.strip():
        return "tool name must be a non-empty string"
    if len(name) > MAX_TOOL_NAME_LENGTH:
        return f"tool name is {len(name)} characters long; the limit is {MAX_TOOL_NAME_LENGTH}"
    bad = _FORBIDDEN_IN_NAME.search(name)
    if bad:
        return f"tool name {name!r} contains the forbidden character {bad.group()!r}"
    return None


def is_valid_tool_id(tool_id: object) -> bool:
    """True when ``tool_id`` is safe as one topic level (letters, digits, ``._:-``)."""
    return isinstance(tool_id, str) and _TOOL_ID.fullmatch(tool_id) is not None


def topic_problem(topic: str, *, allow_wildcards: bool = False) -> str | None:
    """Say why ``topic`` is not a usable topic (or prefix), or return None."""
    if not topic:
        return "topic must not be empty"
    if len(topic.encode()) > 60000:
        return "topic is too long"
    if "\x00" in topic:
        return "topic contains NUL"
    if topic.startswith("$"):
        return "topics starting with '$' are reserved by the broker"
    if not allow_wildcards and ("+" in topic or "#" in topic):
        return f"topic {topic!r} contains an MQTT wildcard"
    return None


@dataclass(frozen=True)
class Topics:
    """The four topics of the protocol, optionally under a common prefix.

    Args:
        register: Where tools publish registrations and unregistrations.
        call_base: Tools receive tasks on ``{call_base}/{tool_id}``.
        response_base: Tools publish results on ``{response_base}/{tool_id}``.
        status: Where managers confirm registrations and announce themselves.

    """

    register: str = DEFAULT_REGISTER_TOPIC
    call_base: str = DEFAULT_CALL_TOPIC_BASE
    response_base: str = DEFAULT_RESPONSE_TOPIC_BASE
    status: str = DEFAULT_STATUS_TOPIC

    def __post_init__(self) -> None:
        for topic in (self.register, self.call_base, self.response_base, self.status):
            problem = topic_problem(topic)
            if problem:
                raise ValueError(problem)

    @classmethod
    def with_prefix(cls, prefix: str | None) -> "Topics":
        """Default topics under ``prefix`` (``"team1"`` gives ``team1/agent/tools/...``)."""
        if not prefix:
            return cls()
        prefix = prefix.strip("/")
        problem = topic_problem(prefix)
        if problem:
            raise ValueError(f"invalid topic prefix: {problem}")
        return cls(
            register=f"{prefix}/{DEFAULT_REGISTER_TOPIC}",
            call_base=f"{prefix}/{DEFAULT_CALL_TOPIC_BASE}",
            response_base=f"{prefix}/{DEFAULT_RESPONSE_TOPIC_BASE}",
            status=f"{prefix}/{DEFAULT_STATUS_TOPIC}",
        )

    def owned_register(self, owner: str, client_id: str) -> str:
        """The registration topic of one client of one broker user: ``{register}/{owner}/{id}``.

        A broker ACL lets each user write only below its own name (mosquitto:
        ``pattern write agent/tools/register/%u/#``), so a message here proves who sent
        it; the ``source`` in a payload on the shared topic is only a claim.

        Raises:
            ValueError: ``owner`` or ``client_id`` is not a single topic level.

        """
        for part in (owner, client_id):
            if not part or _FORBIDDEN_IN_LEVEL.search(part):
                raise ValueError(f"{part!r} cannot be a topic level")
        return f"{self.register}/{owner}/{client_id}"

    @cached_property
    def owned_register_filter(self) -> str:
        """Subscription filter matching every client's own registration topic."""
        return f"{self.register}/+/+"

    def owner_of(self, topic: str) -> tuple[str, str] | None:
        """``(owner, client_id)`` of an owned registration topic; None for any other topic."""
        prefix = self.register + "/"
        if not topic.startswith(prefix):
            return None
        parts = topic[len(prefix) :].split("/")
        if len(parts) != 2 or not all(parts):
            return None
        return parts[0], parts[1]

    def reply(self, tool_id: str, inbox: str) -> str:
        """Topic on which ``tool_id`` answers the caller whose inbox is ``inbox``.

        ``{response_base}/{tool_id}/{inbox}``: each manager subscribes to its own
        inbox only, so a result reaches the manager that made the call and no other.
        """
        return f"{self.response_base}/{tool_id}/{inbox}"

    def reply_filter(self, inbox: str) -> str:
        """Subscription filter matching every tool's answers to ``inbox``."""
        return f"{self.response_base}/+/{inbox}"

    def is_reply_topic(self, topic: str, tool_id: str) -> bool:
        """True when ``topic`` is a reply topic of ``tool_id`` (``{response_base}/{tool_id}/X``).

        A task's ``reply_to`` is the caller's claim: a tool publishes only below its
        own response topic, never wherever a task points it.
        """
        prefix = f"{self.response_base}/{tool_id}/"
        if not topic.startswith(prefix):
            return False
        inbox = topic[len(prefix) :]
        return bool(inbox) and _FORBIDDEN_IN_LEVEL.search(inbox) is None

    def call(self, tool_id: str) -> str:
        """Topic on which the tool ``tool_id`` receives tasks."""
        return f"{self.call_base}/{tool_id}"

    def call_from(self, tool_id: str, sender: str) -> str:
        """Topic on which broker user ``sender`` sends tasks to ``tool_id``.

        ``{call_base}/{tool_id}/{sender}``: a broker ACL that lets each user write only
        its own level (mosquitto: ``pattern write agent/tools/call/+/%u``) makes the
        topic proof of the sender, and the tool answers that user's inbox,
        :meth:`reply` ``(tool_id, sender)``, whatever the task's ``reply_to`` says.

        Raises:
            ValueError: ``sender`` is not a single topic level.

        """
        if not sender or _FORBIDDEN_IN_LEVEL.search(sender):
            raise ValueError(f"{sender!r} cannot be a topic level")
        return f"{self.call_base}/{tool_id}/{sender}"

    def senders_filter(self, tool_id: str) -> str:
        """Subscription filter matching every :meth:`call_from` topic of ``tool_id``."""
        return f"{self.call_base}/{tool_id}/+"

    def sender_of(self, topic: str, tool_id: str) -> str | None:
        """The sender level of a :meth:`call_from` topic of ``tool_id``; None for any other."""
        prefix = f"{self.call_base}/{tool_id}/"
        if not topic.startswith(prefix):
            return None
        sender = topic[len(prefix) :]
        return sender if sender and _FORBIDDEN_IN_LEVEL.search(sender) is None else None

    def response(self, tool_id: str) -> str:
        """Topic on which the tool ``tool_id`` publishes results."""
        return f"{self.response_base}/{tool_id}"

    @cached_property
    def response_filter(self) -> str:
        """Subscription filter matching every tool's response topic."""
        return f"{self.response_base}/+"

    @cached_property
    def _response_prefix(self) -> str:
        return f"{self.response_base}/"

    def tool_id_from_response(self, topic: str) -> str | None:
        """The tool id in a response or reply topic, or None when ``topic`` is neither."""
        prefix = self._response_prefix
        if topic.startswith(prefix):
            rest = topic[len(prefix) :]
            tool_id, _, inbox = rest.partition("/")
            if tool_id and "/" not in inbox:
                return tool_id
        return None


def inbox_level(client_id: str) -> str | None:
    """``client_id`` when it can be one topic level (so an ACL's ``%c`` can name it)."""
    if client_id and _FORBIDDEN_IN_LEVEL.search(client_id) is None and len(client_id) <= 128:
        return client_id
    return None

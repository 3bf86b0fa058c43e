"""What ``call`` asks the person at the terminal when a tool asks a question, field by field.

A tool's question (MCP's ``elicitation/create``) carries the answer's shape: a flat JSON
Schema object whose properties are strings (with ``format``, ``minLength``,
``maxLength``), numbers and integers (with ``minimum``, ``maximum``), booleans, and enums,
single- or multi-select, each choice with a title or without (SEP-1330), any of them with
a ``default`` (SEP-1034). :func:`form_questions` makes one :class:`Question` per property,
in the schema's order; :meth:`Question.parse` reads what the person typed and returns the
value, or raises :class:`InvalidAnswerError` saying what to type instead. An empty line takes
the default, leaves an optional field out, and is refused for a required one.

Nothing here reads or writes a terminal (see :mod:`.terminal_caller`).
"""

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Final, Literal
from urllib.parse import urlsplit

QuestionKind = Literal["string", "number", "integer", "boolean", "choice", "choices"]
"""What a field takes: text, a number, a whole number, yes/no, one choice, several."""

Action = Literal["accept", "decline", "cancel"]
"""What the person does with a question: answer it, say no, or dismiss it."""

_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_YES = {"y", "yes", "true", "1", "on"}
_NO = {"n", "no", "false", "0", "off"}
_ACTIONS: dict[str, Action] = {
    "": "accept",
    "a": "accept",
    "answer": "accept",
    "accept": "accept",
    "d": "decline",
    "decline": "decline",
    "c": "cancel",
    "cancel": "cancel",
}


DONE: dict[str, str] = {"accept": "answered", "decline": "declined", "cancel": "cancelled"}
"""Each action as what was done: ``declined``, ``cancelled``."""


class InvalidAnswerError(ValueError):
    """What the person typed does not fit the field; the message says what would."""


class UnsupportedSchemaError(ValueError):
    """The requested schema has a field the terminal cannot ask for (not MCP's restricted kind)."""


class Skip:
    """The value of an optional field left out (an empty answer without a default)."""

    def __repr__(self) -> str:
        return "SKIP"


SKIP: Final = Skip()
"""Returned by :meth:`Question.parse` for an optional field left out."""


@dataclass(frozen=True)
class Choice:
    """One choice of an enum field: the value sent, and what the person reads."""

    value: Any
    title: str


@dataclass(frozen=True)
class Question:
    """One field of the answer, as the terminal asks for it."""

    key: str
    """The property's name: the answer's key."""
    kind: QuestionKind
    title: str
    """What the person reads: the property's ``title``, else its name."""
    description: str | None = None
    required: bool = False
    default: Any = SKIP
    """The property's default (:data:`SKIP` when it has none)."""
    choices: tuple[Choice, ...] = ()
    string_format: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_items: int | None = None
    max_items: int | None = None
    _by_text: dict[str, Choice] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for number, choice in enumerate(self.choices, start=1):
            for text in (str(number), str(choice.value), choice.title):
                self._by_text.setdefault(text.strip().casefold(), choice)

    @property
    def has_default(self) -> bool:
        """True when the property has a default (taken on an empty answer)."""
        return self.default is not SKIP

    def hint(self) -> str:
        """What the field takes, in a few words: ``number from 1 to 10``, ``yes or no``."""
        if self.kind == "boolean":
            return "yes or no"
        if self.kind == "choice":
            return f"a number from 1 to {len(self.choices)}, or the choice itself"
        if self.kind == "choices":
            many = _range_text(self.min_items, self.max_items, "choices")
            return f"numbers from 1 to {len(self.choices)}, comma-separated{many}"
        if self.kind in ("number", "integer"):
            noun = "number" if self.kind == "number" else "whole number"
            return noun + _bounds_text(self.minimum, self.maximum)
        noun = {
            "email": "an email address",
            "uri": "a URI (scheme:...)",
            "date": "a date (YYYY-MM-DD)",
            "date-time": "a date and time (YYYY-MM-DDTHH:MM:SS)",
        }.get(self.string_format or "", "text")
        return noun + _range_text(self.min_length, self.max_length, "characters")

    def default_text(self) -> str | None:
        """The default as the person would type it; None without one."""
        if not self.has_default:
            return None
        if self.kind == "boolean":
            return "yes" if self.default else "no"
        if self.kind == "choice":
            return self._title_of(self.default)
        if self.kind == "choices" and isinstance(self.default, list):
            return ", ".join(self._title_of(value) for value in self.default)
        return str(self.default)

    def prompt(self) -> str:
        """The prompt's text: the title, whether it may be left out, the default."""
        text = self.title
        default = self.default_text()
        if default is not None:
            text += f" [{default}]"
        elif not self.required:
            text += " (optional, Enter leaves it out)"
        return f"{text}: "

    def parse(self, text: str) -> Any:
        """The value of the answer ``text``; :data:`SKIP` for an optional field left out.

        Raises:
            InvalidAnswerError: ``text`` does not fit; the message says what would.

        """
        text = text.strip()
        if not text:
            if self.has_default:
                return self.default
            if self.required:
                raise InvalidAnswerError(f"an answer is required: {self.hint()}")
            return SKIP
        if self.kind == "boolean":
            return self._boolean(text)
        if self.kind == "choice":
            return self._choice(text).value
        if self.kind == "choices":
            return self._choices(text)
        if self.kind in ("number", "integer"):
            return self._number(text)
        return self._string(text)

    def _boolean(self, text: str) -> bool:
        folded = text.casefold()
        if folded in _YES:
            return True
        if folded in _NO:
            return False
        raise InvalidAnswerError("answer yes or no")

    def _choice(self, text: str) -> Choice:
        found = self._by_text.get(text.casefold())
        if found is None:
            raise InvalidAnswerError(f"{text!r} is not one of the choices: {self.hint()}")
        return found

    def _choices(self, text: str) -> list[Any]:
        picked: list[Any] = []
        for part in text.split(","):
            if part.strip():
                value = self._choice(part.strip()).value
                if value not in picked:
                    picked.append(value)
        if self.min_items is not None and len(picked) < self.min_items:
            raise InvalidAnswerError(f"pick at least {self.min_items}")
        if self.max_items is not None and len(picked) > self.max_items:
            raise InvalidAnswerError(f"pick at most {self.max_items}")
        return picked

    def _number(self, text: str) -> int | float:
        value = _int_or_float(text)
        if value is None or (self.kind == "integer" and not isinstance(value, int)):
            raise InvalidAnswerError(f"{text!r} is not a {self.hint()}")
        if (self.minimum is not None and value < self.minimum) or (
            self.maximum is not None and value > self.maximum
        ):
            raise InvalidAnswerError(f"{text} is out of range: give a {self.hint()}")
        return value

    def _string(self, text: str) -> str:
        if self.min_length is not None and len(text) < self.min_length:
            raise InvalidAnswerError(f"too short: {self.hint()}")
        if self.max_length is not None and len(text) > self.max_length:
            raise InvalidAnswerError(f"too long: {self.hint()}")
        if not _has_format(text, self.string_format):
            raise InvalidAnswerError(f"{text!r} is not {self.hint()}")
        return text

    def _title_of(self, value: Any) -> str:
        for choice in self.choices:
            if choice.value == value:
                return choice.title
        return str(value)


def form_questions(schema: Mapping[str, Any]) -> list[Question]:
    """One :class:`Question` per property of ``schema``, in its order.

    Raises:
        UnsupportedSchemaError: A property is none of the kinds MCP allows in a question
            (the message names it).

    """
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping):
        raise UnsupportedSchemaError("the requested schema's 'properties' is not an object")
    required = schema.get("required") or []
    questions = []
    for key, spec in properties.items():
        if not isinstance(spec, Mapping):
            raise _unsupported(str(key), spec)
        questions.append(_question(str(key), spec, key in required))
    return questions


def parse_action(text: str) -> Action | None:
    """The person's choice for a question: ``a``/answer (or Enter), ``d``/decline, ``c``/cancel.

    None when ``text`` is none of these.
    """
    return _ACTIONS.get(text.strip().casefold())


def answer_text(content: Mapping[str, Any]) -> str:
    """An accepted answer in one line, for the record: ``{"amount": 5, "confirm": true}``."""
    return json.dumps(dict(content), ensure_ascii=False)


def _question(key: str, spec: Mapping[str, Any], required: bool) -> Question:
    kind = spec.get("type")
    common: dict[str, Any] = {
        "key": key,
        "title": str(spec.get("title") or key),
        "description": spec.get("description"),
        "required": required,
        "default": spec.get("default", SKIP),
    }
    if kind == "array":
        items = spec.get("items")
        choices = _choices_of(items) if isinstance(items, Mapping) else None
        if not choices:
            raise UnsupportedSchemaError(
                f"field {key!r} is a list of something other than choices (enum or anyOf)"
            )
        return Question(
            kind="choices",
            choices=choices,
            min_items=_int(spec.get("minItems")),
            max_items=_int(spec.get("maxItems")),
            **common,
        )
    choices = _choices_of(spec)
    if choices:
        return Question(kind="choice", choices=choices, **common)
    if kind == "string":
        return Question(
            kind="string",
            string_format=spec.get("format"),
            min_length=_int(spec.get("minLength")),
            max_length=_int(spec.get("maxLength")),
            **common,
        )
    if kind in ("number", "integer"):
        return Question(
            kind=kind,
            minimum=_number(spec.get("minimum")),
            maximum=_number(spec.get("maximum")),
            **common,
        )
    if kind == "boolean":
        return Question(kind="boolean", **common)
    raise _unsupported(key, spec)


def _choices_of(spec: Mapping[str, Any]) -> tuple[Choice, ...]:
    """The choices of an enum: ``enum`` (with legacy ``enumNames``), or ``oneOf``/``anyOf``."""
    values = spec.get("enum")
    if isinstance(values, list) and values:
        names = spec.get("enumNames")
        titles = names if isinstance(names, list) and len(names) == len(values) else values
        return tuple(Choice(value, str(title)) for value, title in zip(values, titles, strict=True))
    for key in ("oneOf", "anyOf"):
        options = spec.get(key)
        if isinstance(options, list) and options:
            if not all(isinstance(option, Mapping) and "const" in option for option in options):
                return ()
            return tuple(
                Choice(option["const"], str(option.get("title") or option["const"]))
                for option in options
            )
    return ()


def _unsupported(key: str, spec: Any) -> UnsupportedSchemaError:
    return UnsupportedSchemaError(
        f"field {key!r} ({json.dumps(spec, ensure_ascii=False, default=str)[:200]}) is not a "
        "string, number, integer, boolean or enum, which is all a question may ask"
    )


def _has_format(text: str, string_format: str | None) -> bool:
    if string_format == "email":
        return _EMAIL.fullmatch(text) is not None
    if string_format == "uri":
        parts = urlsplit(text)
        return bool(parts.scheme) and bool(parts.netloc or parts.path)
    try:
        if string_format == "date":
            date.fromisoformat(text)
        elif string_format == "date-time":
            datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _range_text(low: int | None, high: int | None, unit: str) -> str:
    if low is not None and high is not None:
        return f", {low} to {high} {unit}" if low != high else f", exactly {low} {unit}"
    if low is not None:
        return f", at least {low} {unit}"
    if high is not None:
        return f", at most {high} {unit}"
    return ""


def _bounds_text(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" from {low:g} to {high:g}"
    if low is not None:
        return f", at least {low:g}"
    if high is not None:
        return f", at most {high:g}"
    return ""


def _int_or_float(text: str) -> int | float | None:
    """``text`` as a whole number, else as a finite number; None when it is neither."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None

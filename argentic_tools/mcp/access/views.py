"""Which tools a caller of the gateway sees and may call: ``mcp serve --views FILE``.

A views file is TOML. Each ``[[view]]`` rule says whom it is for and which tools it
allows or denies::

    default = "deny"               # tools no rule allows (the default: hidden)

    [[view]]
    subjects = ["analytics-*"]     # glob patterns on the token's subject
    scopes = ["tools:read"]        # scopes the token must all have
    claims = { team = "data" }     # claims the token must have (a list: any of them)
    allow = ["search_*", "tag:read-only"]
    deny = ["drop_table"]

A rule applies to a caller when all of its conditions hold (a rule with none applies
to everyone). A tool is in the caller's view when a rule that applies allows it and
no rule that applies denies it: deny wins. A pattern is a tool name (the fleet's name
or its MCP name), a glob (``search_*``), or ``tag:NAME`` (the tool's discovery tags).

The same view filters ``tools/list``, the list-changed notifications (a handshake-era
connection or a 2026-07-28 ``subscriptions/listen`` stream hears one only when its
caller's view changed) and ``tools/call``: a tool outside the
view is answered as an unknown tool, so a caller learns nothing of what it cannot use.
The file may also hold ``[[limit]]`` rules (see :mod:`argentic_tools.mcp.access.limits`).
"""

import fnmatch
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.auth.provider import AccessToken


@dataclass(frozen=True, slots=True)
class Caller:
    """Who calls: the token's subject, its client, scopes and claims."""

    subject: str
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, access: AccessToken) -> "Caller":
        """The caller a validated token stands for."""
        claims = dict(access.claims or {})
        return cls(
            subject=access.subject or access.client_id,
            client_id=access.client_id,
            scopes=frozenset(access.scopes),
            claims=claims,
        )

    @property
    def key(self) -> tuple[str, frozenset[str], str]:
        """What a view may depend on, hashable (claims as sorted JSON-ish text)."""
        return (self.subject, self.scopes, repr(sorted(self.claims.items(), key=str)))


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise ValueError(f"{where}: expected a string or a list of strings")


@dataclass(frozen=True, slots=True)
class Who:
    """The conditions on a caller shared by view and limit rules."""

    subjects: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, entry: Mapping[str, Any], where: str) -> "Who":
        """The conditions of a rule's table."""
        claims = entry.get("claims", {})
        if not isinstance(claims, Mapping):
            raise ValueError(f"{where}: claims must be a table")
        return cls(
            _strings(entry.get("subjects"), f"{where}.subjects"),
            _strings(entry.get("scopes"), f"{where}.scopes"),
            dict(claims),
        )

    def matches(self, caller: Caller) -> bool:
        """Whether every condition holds for ``caller``."""
        if self.subjects and not any(
            fnmatch.fnmatchcase(caller.subject, pattern) for pattern in self.subjects
        ):
            return False
        if not set(self.scopes) <= caller.scopes:
            return False
        return all(_claim_holds(caller.claims.get(key), want) for key, want in self.claims.items())


def _claim_holds(have: Any, want: Any) -> bool:
    wanted = want if isinstance(want, list) else [want]
    if isinstance(have, list):
        return any(item in have for item in wanted)
    if isinstance(have, str) and isinstance(want, str) and " " in have:
        return want in have.split()
    return have in wanted


def pattern_matches(pattern: str, names: Iterable[str], tags: Iterable[str]) -> bool:
    """Whether a tool pattern (name, glob or ``tag:NAME``) matches a tool."""
    if pattern.startswith("tag:"):
        return pattern[4:] in tags
    return any(fnmatch.fnmatchcase(name, pattern) for name in names)


@dataclass(frozen=True, slots=True)
class ViewRule:
    """One ``[[view]]`` rule."""

    who: Who
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Views:
    """The view rules of a views file."""

    rules: tuple[ViewRule, ...] = ()
    default_allow: bool = False

    def rules_for(self, caller: Caller) -> list[ViewRule]:
        """The rules that apply to ``caller``."""
        return [rule for rule in self.rules if rule.who.matches(caller)]

    def allows(self, caller: Caller, names: Sequence[str], tags: Iterable[str]) -> bool:
        """Whether the tool known by ``names`` (fleet and MCP name) is in the caller's view."""
        verdict, _ = self.explain(caller, names, tags)
        return verdict

    def explain(
        self, caller: Caller, names: Sequence[str], tags: Iterable[str]
    ) -> tuple[bool, str]:
        """Whether the tool is in the view, and which rule decided it."""
        tags = tuple(tags)
        allowed_by: str | None = None
        for number, rule in enumerate(self.rules, 1):
            if not rule.who.matches(caller):
                continue
            label = rule.name or f"view {number}"
            for pattern in rule.deny:
                if pattern_matches(pattern, names, tags):
                    return False, f"denied by {label} ({pattern})"
            if allowed_by is None:
                for pattern in rule.allow:
                    if pattern_matches(pattern, names, tags):
                        allowed_by = f"allowed by {label} ({pattern})"
                        break
        if allowed_by is not None:
            return True, allowed_by
        return (True, "allowed by default") if self.default_allow else (False, "no rule allows it")


def parse_views(data: Mapping[str, Any], where: str = "views") -> Views:
    """The view rules of a parsed views file."""
    default = data.get("default", "deny")
    if default not in ("deny", "allow"):
        raise ValueError(f'{where}: default must be "deny" or "allow"')
    rules = []
    for number, entry in enumerate(data.get("view", []), 1):
        at = f"{where}: view {number}"
        if not isinstance(entry, Mapping):
            raise ValueError(f"{at}: expected a table")
        unknown = set(entry) - {"name", "subjects", "scopes", "claims", "allow", "deny"}
        if unknown:
            raise ValueError(f"{at}: unknown keys {sorted(unknown)}")
        rules.append(
            ViewRule(
                Who.parse(entry, at),
                _strings(entry.get("allow"), f"{at}.allow"),
                _strings(entry.get("deny"), f"{at}.deny"),
                entry.get("name"),
            )
        )
    return Views(tuple(rules), default_allow=default == "allow")


def load_file(path: str | Path) -> dict[str, Any]:
    """A views file's TOML, with errors that name the file."""
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not TOML: {exc}") from None

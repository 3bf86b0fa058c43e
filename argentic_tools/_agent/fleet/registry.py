"""The manager's registry: which tools exist, under which ids, served by whom.

Pure state and decisions, no messaging: :class:`ToolRegistry` admits or refuses a
registration (name, schema, id), assigns ids, keeps several instances of one name,
resolves a name to an instance, and lets callers wait for changes. The
:class:`~argentic_tools.ToolManager` turns its decisions into MQTT messages.
"""

import asyncio
import difflib
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from ..._protocol.fleet_messages import RegisterToolMessage, ToolSpec
from ..._protocol.topics import is_valid_tool_id, tool_name_problem
from ..._protocol.validation import SchemaValidator, ValidatorCache
from .exports import export, prompt_entry, provider_name
from .info import Entry, ToolInfo

_ID_NAMESPACE = uuid.UUID("9b1c6a52-7f0e-4d7e-9a57-5f2b8f7b3c11")
_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}

DEFAULT_MAX_TOOLS = 5_000
"""Tool instances a manager admits in all, by default; more are refused."""
DEFAULT_MAX_TOOLS_PER_CLIENT = 1_000
"""Tool instances one MQTT client may register, by default."""
MAX_SCHEMA_BYTES = 64 * 1024
"""Largest argument or output schema (canonical JSON) a manager compiles."""

LEGACY_SETTLE_SECONDS = 0.3
"""Plain Argentic tools subscribe to their call topic only after our confirmation reaches
them; calls to a freshly registered one wait this long so that the first is not lost."""


class RegistrationRefusedError(ValueError):
    """A registration cannot be admitted; the message says why."""


class HeldIdError(RegistrationRefusedError):
    """The proposed id is held by another process."""

    def __init__(self, message: str, holder: Entry, *, same_tool: bool) -> None:
        super().__init__(message)
        self.holder = holder
        """The instance registered under the id."""
        self.same_tool = same_tool
        """The holder serves the same tool name for the same owner: most often a restart,
        started before the old process's Last Will counted, or while the old process is
        frozen and leaves none. Whether the holder still answers decides (see
        :class:`~.membership.Membership`); otherwise the refusal is final."""


NAMES_SHOWN = 20
"""Registered names a message about a missing tool lists."""


def _id_for(name: str, source: str | None, same_source: list[Entry]) -> str:
    """A registration's id when it proposes none.

    The one its process's instance of the name has, else one derived from its source and
    name, so that several managers agree on it.
    """
    if same_source:
        return same_source[0].info.id
    if source:
        return str(uuid.uuid5(_ID_NAMESPACE, f"{source}\x00{name}"))
    return str(uuid.uuid4())


class ToolRegistry:
    """Tools by id and by name; a name may be served by several instances."""

    def __init__(
        self,
        max_tools: int = DEFAULT_MAX_TOOLS,
        max_tools_per_client: int = DEFAULT_MAX_TOOLS_PER_CLIENT,
        name_owners: Mapping[str, str] | None = None,
    ) -> None:
        self.name_owners: dict[str, str] = dict(name_owners or {})
        """Tool names reserved for a broker user: admitted only from that user's topic."""
        self.max_tools = max_tools
        """Instances admitted in all; registrations of new ones beyond are refused."""
        self.max_tools_per_client = max_tools_per_client
        """Instances one client (``source``) may hold; beyond are refused."""
        self._by_source: dict[str | None, dict[str, Entry]] = {}
        self.tools_by_id: dict[str, dict[str, Any]] = {}
        """Argentic's view: tool id to ``{id, name, description, parameters, ...}``."""
        self.tools_by_name: dict[str, dict[str, Any]] = {}
        """Argentic's view: tool name to the first instance's dictionary."""
        self._entries: dict[str, Entry] = {}
        self._by_name: dict[str, list[Entry]] = {}
        self._round_robin = 0
        self._waiters: set[asyncio.Future[None]] = set()
        self.version = 0
        """Grows at every registration, re-registration and removal."""
        self._prompt_cache: str | None = None
        self._export_cache: dict[tuple[str, bool], list[dict[str, Any]]] = {}
        self._validators = ValidatorCache()

    # -- reading -------------------------------------------------------------

    def names(self) -> list[str]:
        """Registered names, each once."""
        return list(self._by_name)

    def first_per_name(self) -> Iterator[ToolInfo]:
        """One instance per name, the longest-registered one."""
        return (entries[0].info for entries in self._by_name.values())

    def entries(self) -> list[Entry]:
        """Every registered instance."""
        return list(self._entries.values())

    def get(self, tool_id: str) -> Entry | None:
        """The instance with this id."""
        return self._entries.get(tool_id)

    def sources(self) -> list[str | None]:
        """The client id of every process with a registered instance."""
        return list(self._by_source)

    def from_source(self, source: str | None) -> list[Entry]:
        """Every instance served by the process with this client id."""
        return list(self._by_source.get(source, {}).values())

    def find(self, tool_name_or_id: str) -> Entry | None:
        """The instance with this id, else the first one with this name (no rotation).

        A provider-safe name the exports gave (``Email_Sender`` for ``Email Sender``)
        finds its tool too.
        """
        entry = self._entries.get(tool_name_or_id)
        if entry is None:
            entries = self._by_name.get(tool_name_or_id) or self._spelled(tool_name_or_id)
            entry = entries[0] if entries else None
        return entry

    def _spelled(self, safe_name: str) -> list[Entry] | None:
        """The instances of the tool whose provider-safe name is ``safe_name``."""
        return next(
            (e for name, e in self._by_name.items() if provider_name(name) == safe_name), None
        )

    def lookup(self, tool_name_or_id: str) -> Entry | None:
        """The instance to call: by id, by name (rotating), or by provider-safe name.

        LLMs call tools by the provider-safe name the exports gave them.
        """
        entry = self._entries.get(tool_name_or_id)
        if entry is not None:
            return entry
        entries = self._by_name.get(tool_name_or_id) or self._spelled(tool_name_or_id)
        if not entries:
            return None
        if len(entries) == 1:
            return entries[0]
        self._round_robin += 1
        live = [e for e in entries if e.suspect_since is None]
        if live and len(live) < len(entries):
            # A replica that missed a deadline may be gone without a Last Will (its
            # broker node died): skip it until it proves alive (liveness.py).
            entries = live
        return entries[self._round_robin % len(entries)]

    def closest(self, name: str) -> str | None:
        """The registered name most like ``name`` (for "did you mean"), if one is close."""
        return closest_name(name, self.names())

    def what_is_there(self, name: str) -> str:
        """For a message about a missing ``name``: the closest name and what is registered."""
        return what_is_there(name, self.names())

    def prompt_json(self) -> str:
        """Document 004's prompt JSON, rebuilt only when the registry changed."""
        if self._prompt_cache is None:
            self._prompt_cache = json.dumps(
                [prompt_entry(info) for info in self.first_per_name()], ensure_ascii=False
            )
        return self._prompt_cache

    def export(self, fmt: str, strict: bool) -> list[dict[str, Any]]:
        """Every name exported in ``fmt``, rebuilt only when the registry changed."""
        key = (fmt, strict)
        cached = self._export_cache.get(key)
        if cached is None:
            cached = self._export_cache[key] = export(self.first_per_name(), fmt, strict=strict)
        return cached

    # -- changing ------------------------------------------------------------

    def admit(
        self, reg: RegisterToolMessage, epoch: int, *, owner: str | None = None
    ) -> tuple[Entry, bool, list[Entry]]:
        """Admit a registration, or refuse it.

        The proposed ``tool_id`` is kept when valid and not another tool's; without
        one, a tool keeps its id, or gets one derived from its source and name, so
        several managers agree on it.

        Returns:
            The entry, whether it is new (not a re-registration), and the entries it
            replaces (the same process's tool under another id), already removed.

        Raises:
            RegistrationRefusedError: Bad name, schema or id, or a name or id that
                belongs to another owner; the message says which.
            HeldIdError: The id is another process's (a restart, when it serves the
                same tool for the same owner and no longer answers).

        Ownership: ``owner`` is the broker user proven by an owned registration topic.
        A name reserved for a user (``name_owners``) is admitted only from that user; a
        name registered by a user is not admitted from anyone else while an instance
        lives, and an owner's registration replaces instances registered on the shared
        topic, whose source is only a claim.

        """
        name, source, spec = reg.tool_name, reg.source, reg.tool_spec
        problem = tool_name_problem(name)
        if problem:
            raise RegistrationRefusedError(problem)
        schema, key = _input_schema(reg)
        squatters = self._check_owner(name, owner)
        self._check_room(reg)
        validator, output_validator = self._validators_of(key, spec)
        tool_id = reg.tool_id
        if tool_id is not None:
            self._check_id(tool_id, name, source, owner)
        # The owner's registration takes the name from claims made on the shared topic.
        replaced_squatters = [e for e in squatters if self.remove(e)]
        self._check_replicas(name, source, tool_id, schema, spec)
        same_source = [e for e in self._by_name.get(name, ()) if e.info.source == source]
        if tool_id is None:
            tool_id = _id_for(name, source, same_source)
        replaced = [e for e in same_source if e.info.id != tool_id and self.remove(e)]
        info = ToolInfo(
            id=tool_id,
            name=name,
            description=reg.tool_manual or (spec.description if spec else ""),
            input_schema=schema,
            output_schema=spec.output_schema if spec else None,
            tags=tuple(spec.tags) if spec else (),
            examples=tuple(spec.examples) if spec else (),
            source=source,
            registered_at=datetime.now(UTC).isoformat(),
            metadata=dict(spec.metadata) if spec else {},
            owner=owner,
        )
        previous = self._entries.get(tool_id)
        if reg.protocol is None:
            ready_at = (
                previous.ready_at
                if previous is not None
                else (asyncio.get_running_loop().time() + LEGACY_SETTLE_SECONDS)
            )
            entry = Entry(info, validator, ready_at, None, output_validator)
        else:
            entry = Entry(
                info,
                validator,
                0.0,
                epoch,
                output_validator,
                protocol=reg.protocol,
                connection=reg.connection,
            )
        self._store(entry, previous)
        return entry, previous is None, replaced_squatters + replaced

    def _check_owner(self, name: str, owner: str | None) -> list[Entry]:
        """Refuse a name reserved for, or held by, another broker user.

        Returns:
            The instances of the name that a registration by ``owner`` takes it from
            (those registered on the shared topic, whose source is only a claim).

        """
        reserved_for = self.name_owners.get(name)
        if reserved_for is not None and owner != reserved_for:
            raise RegistrationRefusedError(
                f"tool name {name!r} is reserved for broker user {reserved_for!r}"
            )
        others = sorted(
            {e.info.owner for e in self._by_name.get(name, ()) if e.info.owner not in (None, owner)}
            - {None}
        )
        if others:
            raise RegistrationRefusedError(
                f"tool name {name!r} belongs to broker user {others[0]!r}"
            )
        if owner is None:
            return []
        return [e for e in self._by_name.get(name, ()) if e.info.owner is None]

    def _validators_of(
        self, key: str, spec: ToolSpec | None
    ) -> tuple[SchemaValidator, SchemaValidator | None]:
        """The compiled validators of the input schema (``key``) and the output schema."""
        try:
            validator = self._validators.for_key(key)
        except ValueError as exc:
            raise RegistrationRefusedError(str(exc)) from None
        output_schema = spec.output_schema if spec else None
        output_key = None if output_schema is None else ValidatorCache.key(output_schema)
        if output_key is not None and len(output_key) > MAX_SCHEMA_BYTES:
            raise RegistrationRefusedError(
                f"the output schema is larger than {MAX_SCHEMA_BYTES // 1024} KiB"
            )
        try:
            output_validator = None if output_key is None else self._validators.for_key(output_key)
        except ValueError as exc:
            raise RegistrationRefusedError(f"output schema: {exc}") from None
        return validator, output_validator

    def _check_id(self, tool_id: str, name: str, source: str | None, owner: str | None) -> None:
        """Refuse a proposed id that is not a topic level, or that another tool holds."""
        holder = self._entries.get(tool_id)
        if not is_valid_tool_id(tool_id):
            raise RegistrationRefusedError(f"tool id {tool_id!r} is not a valid topic level")
        if holder is not None and (
            holder.info.name,
            holder.info.source,
            holder.info.owner,
        ) != (name, source, owner):
            used = (
                f"tool id {tool_id} is already used by tool {holder.info.name!r} "
                f"from {holder.info.source}"
            )
            same_tool = (holder.info.name, holder.info.owner) == (name, owner)
            raise HeldIdError(used, holder, same_tool=same_tool)

    def _check_replicas(
        self,
        name: str,
        source: str | None,
        tool_id: str | None,
        schema: dict[str, Any],
        spec: ToolSpec | None,
    ) -> None:
        """Refuse a replica whose schemas differ from those of the name's other instances.

        Which schema the model sees must not depend on which replica registered first,
        and a call must not alternate between two contracts.
        """
        replicas = [
            e
            for e in self._by_name.get(name, ())
            if e.info.source != source and e.info.id != tool_id
        ]
        output_schema = spec.output_schema if spec else None
        if replicas and (
            replicas[0].info.input_schema != schema
            or replicas[0].info.output_schema != output_schema
        ):
            raise RegistrationRefusedError(
                f"tool {name!r} is already served by {len(replicas)} instance(s) with a "
                "different schema; replicas of a tool must have the same input and output "
                "schemas (stop the others first, or give this tool another name)"
            )

    def _store(self, entry: Entry, previous: Entry | None) -> None:
        """Put ``entry`` in every index, in ``previous``'s place when it replaces it."""
        info = entry.info
        if previous is not None:
            self._by_name[info.name] = [
                entry if e is previous else e for e in self._by_name[info.name]
            ]
        else:
            self._by_name.setdefault(info.name, []).append(entry)
        self._entries[info.id] = entry
        self._by_source.setdefault(info.source, {})[info.id] = entry
        self.tools_by_id[info.id] = entry.public
        self.tools_by_name[info.name] = self._by_name[info.name][0].public
        self._changed()

    def uncompiled_schemas(self, reg: RegisterToolMessage) -> list[str]:
        """Canonical schemas of ``reg`` that :meth:`admit` would have to compile.

        Empty when all are compiled, or when ``admit`` will refuse ``reg`` before
        compiling (bad name or schema, too large, no room): the caller compiles the
        rest off the event loop and hands them over with :meth:`add_compiled`.
        """
        try:
            if tool_name_problem(reg.tool_name):
                return []
            keys = [_input_schema(reg)[1]]
            self._check_room(reg)
        except RegistrationRefusedError:
            return []
        if reg.tool_spec is not None and isinstance(reg.tool_spec.output_schema, dict):
            keys.append(ValidatorCache.key(reg.tool_spec.output_schema))
        return [k for k in keys if len(k) <= MAX_SCHEMA_BYTES and not self._validators.has(k)]

    def add_compiled(self, compiled: list[tuple[str, SchemaValidator]]) -> None:
        """Keep validators compiled off the event loop (see :meth:`uncompiled_schemas`)."""
        for key, validator in compiled:
            self._validators.put(key, validator)

    def _check_room(self, reg: RegisterToolMessage) -> None:
        """Refuse a registration that would add an instance past the bounds."""
        if reg.tool_id is not None and reg.tool_id in self._entries:
            return  # a re-registration adds nothing
        # By name, not by source: a process may serve thousands of tools, and this runs
        # for every registration.
        if any(e.info.source == reg.source for e in self._by_name.get(reg.tool_name, ())):
            return  # the same process's tool, re-registering or moving to a new id
        mine = self._by_source.get(reg.source, {})
        if len(self._entries) >= self.max_tools:
            raise RegistrationRefusedError(
                f"the registry is full: {self.max_tools} tools (the manager's max_tools)"
            )
        if len(mine) >= self.max_tools_per_client:
            raise RegistrationRefusedError(
                f"{reg.source} already registered {len(mine)} tools, the most one client "
                f"may (the manager's max_tools_per_client)"
            )

    def remove(self, entry: Entry) -> bool:
        """Remove this instance; False when it was no longer registered."""
        info = entry.info
        if self._entries.get(info.id) is not entry:
            return False
        del self._entries[info.id]
        mine = self._by_source.get(info.source)
        if mine is not None:
            mine.pop(info.id, None)
            if not mine:
                del self._by_source[info.source]
        self.tools_by_id.pop(info.id, None)
        remaining = [e for e in self._by_name.get(info.name, ()) if e is not entry]
        if remaining:
            self._by_name[info.name] = remaining
            self.tools_by_name[info.name] = remaining[0].public
        else:
            self._by_name.pop(info.name, None)
            self.tools_by_name.pop(info.name, None)
        self._changed()
        return True

    # -- waiting -------------------------------------------------------------

    async def changed(self) -> None:
        """Return at the next registration or removal."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await waiter
        finally:
            self._waiters.discard(waiter)

    async def wait_for(self, tool_name_or_id: str) -> ToolInfo:
        """Return the tool once one with this name or id is registered."""
        while (entry := self.find(tool_name_or_id)) is None:
            await self.changed()
        return entry.info

    async def wait_removed(self, tool_id: str) -> None:
        """Return once no tool has this id."""
        while tool_id in self._entries:
            await self.changed()

    def _changed(self) -> None:
        self.version += 1
        self._prompt_cache = None
        self._export_cache.clear()
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)


def closest_name(name: str, names: Iterable[str]) -> str | None:
    """The one of ``names`` most like ``name`` (for "did you mean"), if one is close.

    The same name in another case, or spelled as LLM providers need it (``Email_Sender``
    for ``Email Sender``), is closest.
    """
    names = list(names)
    folded = {candidate.casefold(): candidate for candidate in names}
    if name.casefold() in folded:
        return folded[name.casefold()]
    by_spelling = {provider_name(candidate): candidate for candidate in names}
    matches = difflib.get_close_matches(name, [*names, *by_spelling], n=1, cutoff=0.6)
    if not matches:
        return None
    return by_spelling.get(matches[0], matches[0])


def what_is_there(name: str, names: Iterable[str]) -> str:
    """For a message about a missing ``name``: the closest of ``names`` and all of them."""
    names = sorted(names)
    suggestion = closest_name(name, names)
    text = f"Did you mean '{suggestion}'? " if suggestion else ""
    if not names:
        return text + "No tool is registered: are the tool processes running, on this broker?"
    hidden = len(names) - NAMES_SHOWN
    more = f" and {hidden} more" if hidden > 0 else ""
    return text + f"Registered: {', '.join(names[:NAMES_SHOWN])}{more}."


def matching(infos: Iterable[ToolInfo], tags: Iterable[str] | None) -> Iterator[ToolInfo]:
    """The tools carrying every one of ``tags``."""
    wanted = set(tags or ())
    return (info for info in infos if not wanted or wanted.issubset(info.tags))


def _input_schema(reg: RegisterToolMessage) -> tuple[dict[str, Any], str]:
    """The argument schema a registration declares (spec first, then ``tool_api``).

    Returned with its canonical JSON, computed once: it is the compiled validator's key.

    Raises:
        RegistrationRefusedError: It is not a JSON object, or too large.

    """
    spec = reg.tool_spec
    if spec is not None and spec.input_schema:
        schema: Any = spec.input_schema
    else:
        try:
            schema = json.loads(reg.tool_api or "{}")
        except json.JSONDecodeError as exc:
            raise RegistrationRefusedError(f"tool_api is not valid JSON: {exc}") from None
    if not isinstance(schema, dict):
        raise RegistrationRefusedError("the argument schema must be a JSON object")
    checked: dict[str, Any] = schema or _EMPTY_OBJECT
    key = ValidatorCache.key(checked)
    if len(key) > MAX_SCHEMA_BYTES:
        raise RegistrationRefusedError(
            f"the argument schema is larger than {MAX_SCHEMA_BYTES // 1024} KiB"
        )
    return checked, key

"""The registry's decisions: ids, replicas, ownership, bounds and lookup (no broker)."""

import pytest

from argentic_tools._agent.fleet.registry import (
    HeldIdError,
    RegistrationRefusedError,
    ToolRegistry,
)
from argentic_tools._protocol.fleet_messages import RegisterToolMessage
from tests.support.registrations import registration


def test_a_tool_gets_an_id_derived_from_its_process_and_name_and_keeps_it() -> None:
    registry = ToolRegistry()
    entry, is_new, replaced = registry.admit(registration(), epoch=1)
    assert is_new and replaced == []
    again, is_new_again, _ = registry.admit(registration(), epoch=2)
    assert not is_new_again and again.info.id == entry.info.id and again.epoch == 2
    other, _, _ = ToolRegistry().admit(registration(), epoch=1)
    assert other.info.id == entry.info.id  # the same in every manager


def test_replicas_of_a_name_must_share_its_schema() -> None:
    registry = ToolRegistry()
    registry.admit(registration(source="proc-a"), epoch=1)
    replica, _, _ = registry.admit(registration(source="proc-b"), epoch=1)
    assert len(registry.entries()) == 2 and replica.info.source == "proc-b"
    other_schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    with pytest.raises(RegistrationRefusedError, match="different schema"):
        registry.admit(registration(source="proc-c", schema=other_schema), epoch=1)


def test_a_reserved_name_is_admitted_only_from_its_owner_who_replaces_claims() -> None:
    registry = ToolRegistry(name_owners={"pay": "billing"})
    with pytest.raises(RegistrationRefusedError, match="reserved for broker user 'billing'"):
        registry.admit(registration("pay", source="mallory"), epoch=1)
    claim, _, _ = registry.admit(registration("echo", source="mallory"), epoch=1)
    owned, _, replaced = registry.admit(registration("echo", source="svc"), 1, owner="billing")
    assert replaced == [claim] and owned.info.owner == "billing"
    with pytest.raises(RegistrationRefusedError, match="belongs to broker user 'billing'"):
        registry.admit(registration("echo", source="x"), 1, owner="other")


def test_a_pinned_id_held_by_another_process_names_the_holder_and_whether_it_is_a_restart() -> None:
    registry = ToolRegistry()

    def pinned(name: str, source: str) -> RegisterToolMessage:
        return registration(name, source=source).model_copy(update={"tool_id": "pin"})

    holder, _, _ = registry.admit(pinned("echo", "old"), 1, owner="alice")
    with pytest.raises(HeldIdError, match="already used by tool 'echo' from old") as restart:
        registry.admit(pinned("echo", "new"), 1, owner="alice")
    assert restart.value.holder is holder and restart.value.same_tool
    for name, owner in (("other", "mallory"), ("other", "alice")):
        with pytest.raises(HeldIdError) as claim:
            registry.admit(pinned(name, "new"), 1, owner=owner)
        assert claim.value.holder is holder and not claim.value.same_tool
    assert registry.get("pin") is holder


def test_one_client_cannot_register_more_than_its_share() -> None:
    registry = ToolRegistry(max_tools=10, max_tools_per_client=2)
    registry.admit(registration("a"), epoch=1)
    registry.admit(registration("b"), epoch=1)
    with pytest.raises(RegistrationRefusedError):
        registry.admit(registration("c"), epoch=1)
    registry.admit(registration("c", source="proc-b"), epoch=1)  # another client has room


def test_a_bad_name_or_tool_id_is_refused_saying_why() -> None:
    registry = ToolRegistry()
    with pytest.raises(RegistrationRefusedError):
        registry.admit(registration("a/b"), epoch=1)
    bad_id = registration().model_copy(update={"tool_id": "x/#"})
    with pytest.raises(RegistrationRefusedError, match="not a valid topic level"):
        registry.admit(bad_id, epoch=1)


def test_lookup_finds_a_name_an_id_or_a_provider_safe_spelling_and_suggests() -> None:
    registry = ToolRegistry()
    entry, _, _ = registry.admit(registration("Email Sender"), epoch=1)
    assert registry.lookup("Email Sender") is entry
    assert registry.lookup(entry.info.id) is entry
    assert registry.lookup("Email_Sender") is entry
    assert registry.lookup("nothing") is None
    assert registry.closest("Email Sendr") == "Email Sender"


def test_a_removed_tool_is_gone_from_every_view() -> None:
    registry = ToolRegistry()
    entry, _, _ = registry.admit(registration(), epoch=1)
    version = registry.version
    assert registry.remove(entry)
    assert not registry.remove(entry)  # once
    assert registry.names() == [] and registry.tools_by_id == {} and registry.version > version


def test_an_advertised_max_concurrency_is_used_only_when_it_is_a_positive_integer() -> None:
    registry = ToolRegistry()
    cases = [(4, 4), (0, None), (True, None), ("4", None)]
    for index, (value, expected) in enumerate(cases):
        metadata = {"max_concurrency": value}
        entry, _, _ = registry.admit(registration(f"tool{index}", metadata=metadata), epoch=1)
        assert entry.max_concurrency == expected, value


def test_a_clients_room_is_counted_per_instance_but_its_own_names_always_come_back() -> None:
    registry = ToolRegistry(max_tools_per_client=2)
    registry.admit(registration("a", source="proc"), epoch=1)
    registry.admit(registration("b", source="proc"), epoch=1)
    with pytest.raises(RegistrationRefusedError, match="max_tools_per_client"):
        registry.admit(registration("c", source="proc"), epoch=1)
    again, is_new, _ = registry.admit(registration("b", source="proc"), epoch=2)
    assert not is_new and again.info.name == "b"
    assert registry.sources() == ["proc"]

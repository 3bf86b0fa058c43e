"""A call let in by TeamAccess: its caller's view checked once, the HTTP guard's verdict kept."""

from types import SimpleNamespace
from typing import Any, cast

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from mcp.shared.exceptions import MCPError

from argentic_tools.mcp.access.team import ADMITTED, SEEN, Admission, TeamAccess
from argentic_tools.mcp.access.views import Caller, Views


class CountingViews:
    """A view that lets ``allowed`` through and counts how often it is asked."""

    def __init__(self, *allowed: str) -> None:
        self.allowed = set(allowed)
        self.asked = 0

    def allows(self, caller: Caller, names: tuple[str, ...], tags: tuple[str, ...]) -> bool:
        self.asked += 1
        return names[0] in self.allowed


def access_with(views: CountingViews) -> TeamAccess:
    return TeamAccess(views=cast(Views, views), facts=lambda name: ((name, name), ()))


def request(scope: dict[str, Any] | None = None) -> Any:
    """A request's context: over stdio (no HTTP request), or over HTTP with ``scope``."""
    return SimpleNamespace(request=None if scope is None else SimpleNamespace(scope=scope))


def test_a_call_checks_its_callers_view_once_from_admission_to_its_hold() -> None:
    views = CountingViews("echo")
    access = access_with(views)
    admission = access.admit(request(), "echo")
    assert isinstance(admission, Admission)
    assert admission.names == ("echo", "echo")
    with access.hold(admission):
        pass
    assert views.asked == 1


def test_a_call_outside_the_view_is_an_unknown_tool() -> None:
    views = CountingViews("echo")
    with pytest.raises(MCPError, match="Unknown tool: secret"):
        access_with(views).admit(request(), "secret")
    assert views.asked == 1


def test_a_call_the_http_guard_checked_is_not_checked_again() -> None:
    views = CountingViews()  # would refuse everything, were it asked
    access = access_with(views)
    seen = request({ADMITTED: True, SEEN: ("echo", True)})
    assert isinstance(access.admit(seen, "echo"), Admission)
    unseen = request({ADMITTED: True, SEEN: ("secret", False)})
    with pytest.raises(MCPError, match="Unknown tool: secret"):
        access.admit(unseen, "secret")
    assert views.asked == 0
    # A later round (the guard did not look at its tool) is checked here.
    with pytest.raises(MCPError, match="Unknown tool: echo"):
        access.admit(request({ADMITTED: True}), "echo")
    assert views.asked == 1

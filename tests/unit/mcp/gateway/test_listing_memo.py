"""ListingMemo: a ``tools/list`` answer is built once per key and handed out as a copy."""

from types import SimpleNamespace
from typing import Any, cast

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from mcp.server.context import HandlerResult, ServerRequestContext

from argentic_tools.mcp.gateway.listing_memo import MAX_KEPT, ListingMemo

pytestmark = pytest.mark.anyio


class Sdk:
    """What the SDK's inner chain would answer, counting how often it was asked."""

    def __init__(self) -> None:
        self.built = 0

    async def __call__(self, ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        self.built += 1
        return {"tools": [{"name": f"t{self.built}"}], "key": ctx.params}


def request(method: str, key: Any = "fleet-1") -> ServerRequestContext[Any, Any]:
    return cast(ServerRequestContext[Any, Any], SimpleNamespace(method=method, params=key))


def memo_keyed_by_params() -> ListingMemo:
    return ListingMemo(lambda ctx: cast(Any, ctx.params))


async def test_the_same_listing_is_built_once_and_each_caller_gets_its_own_copy() -> None:
    memo, sdk = memo_keyed_by_params(), Sdk()
    first = await memo(request("tools/list"), sdk)
    second = await memo(request("tools/list"), sdk)
    assert sdk.built == 1
    assert first == second and first is not second
    assert isinstance(first, dict)
    first["extra"] = 1  # what one caller does to its answer the next one does not see
    assert "extra" not in cast(dict[str, Any], await memo(request("tools/list"), sdk))


async def test_another_key_is_built_anew_and_a_cleared_memo_builds_again() -> None:
    memo, sdk = memo_keyed_by_params(), Sdk()
    await memo(request("tools/list", "fleet-1"), sdk)
    changed = await memo(request("tools/list", "fleet-2"), sdk)
    assert sdk.built == 2 and changed == {"tools": [{"name": "t2"}], "key": "fleet-2"}
    memo.clear()
    await memo(request("tools/list", "fleet-2"), sdk)
    assert sdk.built == 3


async def test_other_methods_and_requests_without_a_key_always_reach_the_sdk() -> None:
    memo, sdk = memo_keyed_by_params(), Sdk()
    for _ in range(2):
        await memo(request("tools/call"), sdk)
        await memo(request("tools/list", None), sdk)
    assert sdk.built == 4


async def test_at_most_max_kept_answers_are_kept_the_oldest_going_first() -> None:
    memo, sdk = memo_keyed_by_params(), Sdk()
    for key in range(MAX_KEPT + 1):
        await memo(request("tools/list", key), sdk)
    await memo(request("tools/list", MAX_KEPT), sdk)  # the newest: kept
    assert sdk.built == MAX_KEPT + 1
    await memo(request("tools/list", 0), sdk)  # the oldest: gone
    assert sdk.built == MAX_KEPT + 2

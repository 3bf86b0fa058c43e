"""CallOptions: one call's settings, read and checked before anything is sent (no broker)."""

import pytest

from argentic_tools import CallContext, CallerHandlers, ToolCallRequest
from argentic_tools._agent.calls.settings.options import CallOptions, call_field, context_with

pytestmark = pytest.mark.anyio


async def test_a_plain_call_waits_its_timeout_or_the_default() -> None:
    assert CallOptions().spec("echo", {}, 30).timeout == 30
    spec = CallOptions(timeout=2.5, call_id="c", task_id_override="label").spec("echo", {}, 30)
    assert (spec.timeout, spec.call_id, spec.label, spec.watch) == (2.5, "c", "label", None)


async def test_an_idle_timeout_makes_a_long_call_capped_by_max_duration_or_timeout() -> None:
    spec = CallOptions(idle_timeout=5, max_duration=60).spec("crawl", {}, 30)
    assert spec.watch is not None and spec.watch.idle == 5 and spec.timeout == 60
    # The explicit timeout caps it when there is no max_duration; the default does not.
    assert CallOptions(idle_timeout=5, timeout=9).spec("crawl", {}, 30).timeout == 9
    assert CallOptions(idle_timeout=5).spec("crawl", {}, 30).timeout is None


@pytest.mark.parametrize(
    ("options", "field"),
    [(CallOptions(idle_timeout=0), "idle_timeout"), (CallOptions(max_duration=-1), "max_duration")],
)
async def test_a_non_positive_idle_timeout_or_max_duration_is_refused(
    options: CallOptions, field: str
) -> None:
    with pytest.raises(ValueError, match=field):
        options.spec("crawl", {}, 30)


def test_options_after_the_label_and_timeout_are_execute_tools_keywords() -> None:
    options = CallOptions(task_id_override="l", timeout=1, call_id="x", idle_timeout=2)
    assert options.keywords() == {
        "call_id": "x",
        "context": None,
        "on_progress": None,
        "idle_timeout": 2,
        "max_duration": None,
    }


def test_a_batch_call_gets_its_id_and_its_own_progress_callback() -> None:
    seen: list[tuple[str | None, float]] = []
    shared = CallOptions(timeout=3, context=CallContext(thread_id="t"))
    one = shared.for_batch_call("c1", lambda call_id, p, t, m: seen.append((call_id, p)))
    assert (one.call_id, one.timeout, one.context) == ("c1", 3, shared.context)
    assert one.on_progress is not None
    one.on_progress(0.5, 1.0, None)
    assert seen == [("c1", 0.5)]
    assert shared.for_batch_call("c2", None).on_progress is None


def test_a_request_of_a_batch_becomes_options_its_own_settings_winning() -> None:
    shared, _ = CallOptions.read_batch({"timeout": 9, "max_duration": 60, "user_id": "u"})
    request = ToolCallRequest(tool_id="echo", call_id="a", timeout=3, idle_timeout=2)
    options = shared.for_request(request, None)
    assert (options.call_id, options.timeout, options.idle_timeout) == ("a", 3, 2)
    assert options.max_duration == 60 and options.context == CallContext(user_id="u")
    bare = shared.for_request(ToolCallRequest(tool_id="echo"), None)
    assert (bare.timeout, bare.idle_timeout) == (9, None)


def test_call_keywords_are_read_into_options_with_the_ids_in_the_context() -> None:
    def progress(p: float, t: float | None, m: str | None) -> None: ...

    options = CallOptions.read(
        {"call_id": "c", "thread_id": "t", "user_id": "u", "on_progress": progress},
        "label",
        4,
    )
    assert (options.task_id_override, options.timeout, options.call_id) == ("label", 4, "c")
    assert options.context == CallContext(thread_id="t", user_id="u")
    assert options.on_progress is progress and options.handlers is None
    assert CallOptions.read({}, None, None) == CallOptions()


def test_handlers_given_one_by_one_win_over_those_given_whole() -> None:
    def elicit(request: object, call: object) -> dict[str, str]:
        return {"action": "decline"}

    def log(record: object, call: object) -> None: ...

    whole = CallerHandlers(on_elicit=lambda r, c: {"action": "accept"}, on_log=log)
    options = CallOptions.read({"handlers": whole, "on_elicit": elicit})
    assert options.handlers == CallerHandlers(on_elicit=elicit, on_log=log)
    assert CallOptions.read({"handlers": CallerHandlers()}).handlers is None


def test_a_misspelt_or_foreign_keyword_is_refused_like_a_misspelt_parameter() -> None:
    with pytest.raises(TypeError, match="'on_elicitt'"):
        CallOptions.read({"on_elicitt": None})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(TypeError, match="'call_id'"):
        CallOptions.read_batch({"call_id": "c"})  # type: ignore[typeddict-unknown-key]


def test_a_request_refuses_the_callables_it_once_carried() -> None:
    with pytest.raises(ValueError, match="on_progress to get_tool_results"):
        ToolCallRequest(tool_id="echo", on_progress=print)


def test_ids_given_beside_a_context_are_merged_into_it_and_win() -> None:
    assert context_with(None, None, None, None) is None
    base = CallContext(thread_id="t", user_id="u")
    assert context_with(base, None, None, None) is base
    merged = context_with(base, "t2", "tr", None)
    assert merged == CallContext(thread_id="t2", trace_id="tr", user_id="u")
    assert base.thread_id == "t"  # the caller's context is not changed
    assert context_with(None, "t", None, None) == CallContext(thread_id="t")


def test_a_parsed_call_is_read_as_an_object_or_a_mapping_in_either_spelling() -> None:
    assert call_field({"toolName": "echo"}, "tool_name", "toolName") == "echo"
    assert call_field({"tool_name": "echo"}, "tool_name", "toolName") == "echo"
    assert call_field(ToolCallRequest(tool_id="x", call_id="c"), "call_id", "callId") == "c"

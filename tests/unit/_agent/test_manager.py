"""ToolManager's constructor: its settings checked before anything connects (no broker)."""

import pytest

from argentic_tools import CallerHandlers, Messager, ToolManager


def test_a_misspelt_keyword_of_the_constructor_is_refused_like_a_misspelt_parameter() -> None:
    messager = Messager("mqtt://127.0.0.1:1")  # nothing connects in a constructor
    with pytest.raises(TypeError, match="'on_elicitt'"):
        ToolManager(messager, on_elicitt=print)  # type: ignore[call-arg]


def test_handlers_given_one_by_one_win_over_those_given_whole() -> None:
    def elicit(request: object, call: object) -> dict[str, str]:
        return {"action": "decline"}

    def accept(request: object, call: object) -> dict[str, str]:
        return {"action": "accept"}

    def log(record: object, call: object) -> None: ...

    whole = CallerHandlers(on_elicit=accept, on_log=log)
    manager = ToolManager(Messager("mqtt://127.0.0.1:1"), handlers=whole, on_elicit=elicit)
    assert manager.handlers == CallerHandlers(on_elicit=elicit, on_log=log)

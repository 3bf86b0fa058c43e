"""The fleet as LangChain tools in a real LangGraph agent loop (``make test-frameworks``).

A ReAct graph (a model node and LangGraph's ``ToolNode``) driven by a scripted chat
model calls real tool processes over a real broker: a plain call with the run's
thread, an invalid call the model reads as an error, progress and chunks in the graph's
custom stream, a run closed mid-call that stops the tool, an image as a LangChain image
block, a tool's question as a graph interrupt answered with ``Command(resume=...)``.
"""

import base64
import json
import os
import pathlib
from collections.abc import AsyncGenerator, Sequence
from typing import Any, cast

import anyio
import pytest

if os.environ.get("ARGENTIC_TOOLS_FRAMEWORKS") != "1":
    pytest.skip("the framework tests run with `make test-frameworks`", allow_module_level=True)

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command
from pydantic import Field

from argentic_tools import ElicitResult, ThreadToolPolicy, ToolManager, ToolService, Topics
from argentic_tools.integrations.langchain import (
    LOG_EVENT,
    PROGRESS_EVENT,
    FleetToolkit,
    langchain_tools,
)
from tests.support.brokers import Mosquitto
from tests.support.framework_fleet import (
    check_received,
    every_setting,
    joined,
    wait_for_mark,
)
from tests.support.media_tools import TINY_PNG, wav

pytestmark = pytest.mark.anyio

ToolCalls = list[dict[str, Any]]


class ScriptedChatModel(BaseChatModel):
    """A chat model that makes the scripted tool calls, one turn each, then answers
    with what the last tool said; it keeps the tools it was bound to."""

    script: list[ToolCalls]
    bound: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        self.bound = [convert_to_openai_tool(t) for t in tools]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = sum(isinstance(message, AIMessage) for message in messages)
        if turn < len(self.script):
            calls = [
                {"name": c["name"], "args": c["args"], "id": f"call-{turn}-{i}"}
                for i, c in enumerate(self.script[turn])
            ]
            message = AIMessage(content="", tool_calls=calls)
        else:
            last = messages[-1]
            message = AIMessage(content=f"the tool said: {last.text}")
        return ChatResult(generations=[ChatGeneration(message=message)])


def react_graph(
    model: ScriptedChatModel, tools: Sequence[BaseTool], checkpointer: Any = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A ReAct agent: the model node, LangGraph's ToolNode, and back until no tool call."""
    bound = model.bind_tools(tools)

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def tool_messages(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


async def test_a_graph_calls_fleet_tools_with_their_schemas_and_the_runs_thread(
    manager: ToolManager,
) -> None:
    model = ScriptedChatModel(script=[[call("echo", message="hi"), call("whoami")]])
    graph = react_graph(model, langchain_tools(manager))
    config: RunnableConfig = {"configurable": {"thread_id": "thread-7", "user_id": "ada"}}
    with anyio.fail_after(20):
        state = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    echo = next(t["function"] for t in model.bound if t["function"]["name"] == "echo")
    assert echo["description"] == "Return the message unchanged."
    assert echo["parameters"]["properties"]["message"]["description"] == "Text to send back"
    assert "Email_Sender" not in {t["function"]["name"] for t in model.bound}
    said, who = tool_messages(state)
    assert (said.status, said.content, said.tool_call_id) == ("success", "hi", "call-0-0")
    context = json.loads(str(who.content))
    assert context["thread_id"] == "thread-7"
    assert context["user_id"] == "ada"
    assert context["call_id"] == "call-0-1"
    assert context["trace_id"]  # the LangChain run of the tool's parent
    assert state["messages"][-1].content == f"the tool said: {who.content}"


async def test_the_threads_policy_chooses_the_tools_and_checks_the_runs_calls(
    manager: ToolManager,
) -> None:
    policy = ThreadToolPolicy()
    policy.set_enabled_tools("narrow", ["echo"])
    manager.policy = policy
    assert [t.name for t in langchain_tools(manager, thread_id="narrow")] == ["echo"]
    # Tools listed for another thread: the run's thread decides at the call.
    model = ScriptedChatModel(script=[[call("whoami")]])
    graph = react_graph(model, langchain_tools(manager))
    config: RunnableConfig = {"configurable": {"thread_id": "narrow"}}
    with anyio.fail_after(20):
        state = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    (refused,) = tool_messages(state)
    assert refused.status == "error"
    assert "not enabled" in str(refused.content)


async def test_an_invalid_call_reaches_the_model_as_an_error_tool_message(
    manager: ToolManager,
) -> None:
    model = ScriptedChatModel(script=[[call("echo", message=5)], [call("fail", reason="x")]])
    graph = react_graph(model, langchain_tools(manager))
    with anyio.fail_after(20):
        state = await graph.ainvoke({"messages": [HumanMessage("go")]})
    invalid, failing = tool_messages(state)
    assert invalid.status == "error"
    assert "invalid arguments: $.message: 5 is not of type 'string'" in str(invalid.content)
    assert failing.status == "error"
    assert "failing on purpose: x" in str(failing.content)
    assert state["messages"][-1].content == f"the tool said: {failing.content}"


async def test_progress_chunks_and_logs_appear_in_the_graphs_custom_stream(
    manager: ToolManager,
) -> None:
    calls = [
        call("steps", count=3, interval=0.01),
        call("chunks", count=3, interval=0),
        call("frames", count=1),
        call("chatty", count=2),
    ]
    model = ScriptedChatModel(script=[calls])
    graph = react_graph(model, langchain_tools(manager))
    events: list[dict[str, Any]] = []
    with anyio.fail_after(20):
        async for mode, event in graph.astream(
            {"messages": [HumanMessage("go")]}, stream_mode=["custom", "values"]
        ):
            if mode == "custom":
                assert isinstance(event, dict)
                events.append(event)
    progress = [
        (e["progress"], e["total"], e["message"], e["tool_call_id"])
        for e in events
        if e["type"] == "progress"
    ]
    # The tool's reports are coalesced at its rate limit: the last one always comes.
    assert progress[-1] == (3, 3, "step 3 of 3", "call-0-0")
    assert progress == sorted(progress)
    chunks = [(e["chunk"], e["tool"]) for e in events if e["type"] == "chunk"]
    assert [c for c in chunks if c[1] == "chunks"] == [({"i": i}, "chunks") for i in range(3)]
    png = base64.b64encode(TINY_PNG).decode()
    image = {"type": "image", "base64": png, "mime_type": "image/png"}
    assert [c for c in chunks if c[1] == "frames"] == [(image, "frames")]
    logs = [(e["record"]["message"], e["tool_call_id"]) for e in events if e["type"] == "log"]
    assert logs == [("record 0", "call-0-3"), ("record 1", "call-0-3")]


async def test_closing_a_graph_run_mid_call_stops_the_tool(
    manager: ToolManager, tmp_path: pathlib.Path
) -> None:
    arguments = {"count": 1000, "interval": 0.05, "label": "lc", "directory": str(tmp_path)}
    graph = react_graph(
        ScriptedChatModel(script=[[call("steps", **arguments)]]), langchain_tools(manager)
    )
    run = cast(
        AsyncGenerator[dict[str, Any], None],
        graph.astream({"messages": [HumanMessage("go")]}, stream_mode="custom"),
    )
    with anyio.fail_after(20):
        async for event in run:
            if event["type"] == "progress":
                break
        await run.aclose()  # what an application does when its user stops the run
        await wait_for_mark(tmp_path, "lc.stopped")
    assert not (tmp_path / "lc.done").exists()


async def test_a_cancelled_graph_task_stops_the_tool(
    manager: ToolManager, tmp_path: pathlib.Path
) -> None:
    # 1,000 steps of 50 ms, under the manager's 20 s default timeout: within this test's
    # 15 s only the cancellation, never the call's own deadline, can stop the tool.
    arguments = {"count": 1000, "interval": 0.05, "label": "task", "directory": str(tmp_path)}
    graph = react_graph(
        ScriptedChatModel(script=[[call("steps", **arguments)]]), langchain_tools(manager)
    )
    with anyio.fail_after(15):
        async with anyio.create_task_group() as group:
            group.start_soon(graph.ainvoke, {"messages": [HumanMessage("go")]})
            while manager.pending_calls == 0:  # the tool's call is out
                await anyio.sleep(0.01)
            group.cancel_scope.cancel()
        await wait_for_mark(tmp_path, "task.stopped")
    assert not (tmp_path / "task.done").exists()


async def test_an_image_reaches_the_model_as_a_langchain_image_block(
    manager: ToolManager,
) -> None:
    model = ScriptedChatModel(script=[[call("tiny_image"), call("chart")]])
    graph = react_graph(model, langchain_tools(manager))
    with anyio.fail_after(20):
        state = await graph.ainvoke({"messages": [HumanMessage("go")]})
    image, chart = tool_messages(state)
    png = base64.b64encode(TINY_PNG).decode()
    assert image.content == [{"type": "image", "base64": png, "mime_type": "image/png"}]
    assert image.artifact["content"][0]["type"] == "image"
    assert isinstance(chart.content, list)
    value, picture = chart.content
    assert value == {"type": "text", "text": '{"width": 1, "height": 1}'}
    assert picture == {"type": "image", "base64": png, "mime_type": "image/png"}
    assert chart.artifact["structuredContent"] == {"width": 1, "height": 1}


async def test_audio_and_binary_resources_reach_the_model_as_file_blocks(
    manager: ToolManager,
) -> None:
    model = ScriptedChatModel(script=[[call("speaker"), call("blob")]])
    with anyio.fail_after(20):
        state = await react_graph(model, langchain_tools(manager)).ainvoke(
            {"messages": [HumanMessage("go")]}
        )
    speaker, blob = tool_messages(state)
    assert isinstance(speaker.content, list)
    text, audio = speaker.content
    assert text == {"type": "text", "text": "silence:"}
    assert isinstance(audio, dict)
    assert (audio["type"], audio["mime_type"]) == ("file", "audio/wav")
    assert base64.b64decode(audio["base64"]) == wav()
    data = base64.b64encode(bytes(range(16))).decode()
    assert blob.content == [
        {"type": "file", "base64": data, "mime_type": "application/octet-stream"}
    ]


async def test_a_tools_question_is_a_graph_interrupt_answered_with_command_resume(
    manager: ToolManager, tmp_path: pathlib.Path
) -> None:
    arguments = {"label": "hitl", "directory": str(tmp_path)}
    model = ScriptedChatModel(script=[[call("ask_name", **arguments)]])
    graph = react_graph(model, langchain_tools(manager), InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "hitl"}}
    with anyio.fail_after(20):
        paused = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
        # The pause cancelled the waiting call at the tool; resuming runs it again.
        await wait_for_mark(tmp_path, "hitl.stopped")
        (question,) = paused["__interrupt__"]
        assert question.value == {
            "type": "elicit",
            "tool": "ask_name",
            "message": "Who are you? (hitl)",
            "requested_schema": question.value["requested_schema"],
        }
        assert "name" in question.value["requested_schema"]["properties"]
        state = await graph.ainvoke(Command(resume={"name": "Ada", "age": 36}), config)
    (answered,) = tool_messages(state)
    assert json.loads(str(answered.content)) == {
        "action": "accept",
        "data": {"name": "Ada", "age": 36},
        "label": "hitl",
    }


@pytest.mark.parametrize(
    "resume", [{"action": "decline"}, ElicitResult(action="decline")], ids=["mapping", "result"]
)
async def test_a_graph_caller_may_resume_with_a_whole_elicitation_answer(
    manager: ToolManager, resume: Any
) -> None:
    model = ScriptedChatModel(script=[[call("ask_name")]])
    graph = react_graph(model, langchain_tools(manager), InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "decline"}}
    with anyio.fail_after(20):
        await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
        state = await graph.ainvoke(Command(resume=resume), config)
    (answered,) = tool_messages(state)
    assert json.loads(str(answered.content))["action"] == "decline"


async def test_handlers_given_to_the_tools_answer_instead_of_an_interrupt(
    manager: ToolManager,
) -> None:
    logged: list[str] = []
    tools = langchain_tools(
        manager,
        on_elicit=lambda request, call: {"action": "decline"},
        on_log=lambda record, call: logged.append(record.message),
    )
    model = ScriptedChatModel(script=[[call("ask_name"), call("chatty", count=2)]])
    with anyio.fail_after(20):
        state = await react_graph(model, tools).ainvoke({"messages": [HumanMessage("go")]})
    declined, chatty = tool_messages(state)
    assert json.loads(str(declined.content))["action"] == "decline"
    assert chatty.content == "2"
    assert logged == ["record 0", "record 1"]


async def test_a_tool_outside_a_graph_reports_progress_and_logs_as_custom_events(
    manager: ToolManager,
) -> None:
    tools = {t.name: t for t in langchain_tools(manager)}
    steps = tools["steps"]
    tool_call = {
        "name": "steps",
        "args": {"count": 2, "interval": 0.01},
        "id": "c1",
        "type": "tool_call",
    }
    progress: list[Any] = []
    ended: list[Any] = []
    with anyio.fail_after(20):
        async for event in steps.astream_events(tool_call, version="v2"):
            if event["event"] == "on_custom_event" and event["name"] == PROGRESS_EVENT:
                progress.append(event["data"]["progress"])  # type: ignore[typeddict-item]
            if event["event"] == "on_tool_end":
                ended.append(event["data"]["output"])
    assert progress[-1] == 2  # coalesced at the tool's rate limit, the last one always comes
    (message,) = ended
    assert (message.content, message.status) == ("2", "success")
    with pytest.raises(NotImplementedError, match="asynchronously"):
        steps.invoke(tool_call)
    logged = {**tool_call, "name": "chatty", "args": {"count": 2}}
    with anyio.fail_after(20):
        logs = [
            event["data"]["record"]["message"]  # type: ignore[typeddict-item]
            async for event in tools["chatty"].astream_events(logged, version="v2")
            if event["event"] == "on_custom_event" and event["name"] == LOG_EVENT
        ]
    assert logs == ["record 0", "record 1"]


async def test_the_toolkit_follows_tools_joining_and_leaving_the_fleet(
    mosquitto: Mosquitto, fleet_topics: Topics, manager: ToolManager
) -> None:
    toolkit = FleetToolkit(manager=manager)
    assert "joined" not in {t.name for t in toolkit.get_tools()}
    topics = fleet_topics
    with anyio.fail_after(20):
        async with ToolService(mosquitto.url, [joined], topics=topics):
            info = await manager.wait_for_tool("joined", timeout=15)
            model = ScriptedChatModel(script=[[call("joined", text="late")]])
            state = await react_graph(model, toolkit.get_tools()).ainvoke(
                {"messages": [HumanMessage("go")]}
            )
            assert tool_messages(state)[0].content == "late"
        await manager.wait_for_tool_removed(info.id, timeout=15)
    assert "joined" not in {t.name for t in toolkit.get_tools()}


async def test_every_setting_reaches_the_tool(manager: ToolManager) -> None:
    reports = []
    for settings in every_setting():
        model = ScriptedChatModel(script=[[call("received")]])
        graph = react_graph(model, langchain_tools(manager, thread_id="thread-s", **settings))
        with anyio.fail_after(20):
            state = await graph.ainvoke({"messages": [HumanMessage("report")]})
        (message,) = tool_messages(state)
        reports.append(json.loads(str(message.content)))
    check_received(reports, call_ids=["call-0-0", "call-0-0"], thread_id="thread-s")

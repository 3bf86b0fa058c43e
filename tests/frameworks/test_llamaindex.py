"""The fleet as LlamaIndex tools in a real ``FunctionAgent`` (``make test-frameworks``).

LlamaIndex's agent workflow, driven by its own ``MockFunctionCallingLLM`` with a scripted
response generator, calls real tool processes over a real broker: a plain call with the
thread and the run's id, an invalid call the model reads as an error, progress and
chunks as workflow events, a run cancelled mid-call that stops the tool, an image as an
``ImageBlock`` the model receives, a tool's question as an ``InputRequiredEvent`` the
run's caller answers.
"""

import json
import os
import pathlib
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

if os.environ.get("ARGENTIC_TOOLS_FRAMEWORKS") != "1":
    pytest.skip("the framework tests run with `make test-frameworks`", allow_module_level=True)

from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import (
    AudioBlock,
    ChatMessage,
    DocumentBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.tools import AsyncBaseTool, ToolOutput
from llama_index.core.workflow import Event

from argentic_tools import ThreadToolPolicy, ToolManager, ToolService, Topics
from argentic_tools.integrations.llamaindex import (
    CallSettings,
    FleetToolRetriever,
    ToolAnswer,
    ToolChunk,
    ToolLog,
    ToolProgress,
    ToolQuestion,
    llamaindex_tools,
)
from tests.support.brokers import Mosquitto
from tests.support.framework_fleet import (
    check_received,
    every_setting,
    joined,
    wait_for_mark,
)
from tests.support.media_tools import TINY_PNG, wav

pytestmark = [
    pytest.mark.anyio,
    # LlamaIndex's workflow reads deprecated pydantic attributes (__fields__, __fields_set__,
    # model_computed_fields on the instance: every attribute of the agent) building an agent.
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning"),
]


class Script:
    """A response generator for ``MockFunctionCallingLLM``: the scripted tool calls, one
    turn each, then an answer quoting the last tool message; it keeps what it saw."""

    def __init__(self, *turns: list[tuple[str, dict[str, Any]]]) -> None:
        self.turns = turns
        self.tools: list[dict[str, Any]] = []
        self.seen: list[ChatMessage] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        tools: Sequence[AsyncBaseTool] = kwargs.get("tools") or []
        self.tools = [t.metadata.to_openai_tool() for t in tools]
        self.seen = list(messages)
        turn = sum(m.role == MessageRole.ASSISTANT for m in messages)
        if turn < len(self.turns):
            calls = [
                ToolCallBlock(tool_call_id=f"call-{turn}-{i}", tool_name=name, tool_kwargs=args)
                for i, (name, args) in enumerate(self.turns[turn])
            ]
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=list(calls))
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"said: {messages[-1].content}")


def agent_for(script: Script, tools: Any = None, retriever: Any = None) -> FunctionAgent:
    llm = MockFunctionCallingLLM(response_generator=script)
    return FunctionAgent(tools=tools, tool_retriever=retriever, llm=llm)


async def run(agent: FunctionAgent, on_event: Any = None) -> tuple[Any, list[Event]]:
    """Run the agent to its end; the events of its stream, each also to ``on_event``."""
    handler = agent.run(user_msg="go")
    events: list[Event] = []
    with anyio.fail_after(20):
        async for event in handler.stream_events():
            events.append(event)
            if on_event is not None:
                await on_event(handler, event)
        return await handler, events


def outputs(events: list[Event]) -> list[ToolOutput]:
    """The tools' outputs in the order of the model's calls (parallel calls end in any)."""
    results = [e for e in events if isinstance(e, ToolCallResult)]
    return [e.tool_output for e in sorted(results, key=lambda e: e.tool_id)]


async def test_an_agent_calls_fleet_tools_with_their_schemas_thread_and_run(
    manager: ToolManager,
) -> None:
    script = Script([("echo", {"message": "hi"}), ("whoami", {})])
    agent = agent_for(script, llamaindex_tools(manager, thread_id="thread-9"))
    handler = agent.run(user_msg="go")
    with anyio.fail_after(20):
        events = [event async for event in handler.stream_events()]
        result: Any = await handler
    echo = next(t["function"] for t in script.tools if t["function"]["name"] == "echo")
    assert echo["description"] == "Return the message unchanged."
    assert echo["parameters"]["properties"]["message"]["description"] == "Text to send back"
    said, who = outputs(events)
    assert (said.is_error, said.content, said.tool_name) == (False, "hi", "echo")
    context = json.loads(who.content)
    assert context["thread_id"] == "thread-9"
    assert context["trace_id"] == handler.run_id
    assert who.raw_output["structuredContent"] == context
    assert str(result.response.content) == f"said: {who.content}"


async def test_the_threads_policy_chooses_the_tools(manager: ToolManager) -> None:
    policy = ThreadToolPolicy()
    policy.set_enabled_tools("narrow", ["echo"])
    manager.policy = policy
    assert [t.metadata.name for t in llamaindex_tools(manager, thread_id="narrow")] == ["echo"]
    retriever = FleetToolRetriever(manager, settings=CallSettings(thread_id="narrow"))
    _, events = await run(agent_for(Script([("whoami", {})]), retriever=retriever))
    (refused,) = outputs(events)
    assert refused.is_error
    assert refused.content.startswith("Tool whoami not found")  # not offered to the agent


async def test_an_invalid_call_reaches_the_model_as_an_error_output(
    manager: ToolManager,
) -> None:
    script = Script([("echo", {"message": 5})], [("fail", {"reason": "x"})])
    result, events = await run(agent_for(script, llamaindex_tools(manager)))
    invalid, failing = outputs(events)
    assert invalid.is_error
    assert "invalid arguments: $.message: 5 is not of type 'string'" in invalid.content
    assert failing.is_error
    assert "failing on purpose: x" in failing.content
    assert str(result.response.content) == f"said: {failing.content}"


async def test_progress_chunks_and_logs_are_workflow_events(manager: ToolManager) -> None:
    script = Script(
        [
            ("steps", {"count": 3, "interval": 0.01}),
            ("chunks", {"count": 3, "interval": 0}),
            ("frames", {"count": 1}),
            ("chatty", {"count": 2}),
        ]
    )
    _, events = await run(agent_for(script, llamaindex_tools(manager)))
    progress = [(e.progress, e.total, e.message) for e in events if isinstance(e, ToolProgress)]
    # The tool's reports are coalesced at its rate limit: the last one always comes.
    assert progress[-1] == (3, 3, "step 3 of 3")
    assert progress == sorted(progress)
    chunks = [(e.tool, e.chunk) for e in events if isinstance(e, ToolChunk)]
    assert [c for c in chunks if c[0] == "chunks"] == [("chunks", {"i": i}) for i in range(3)]
    ((_, frame),) = [c for c in chunks if c[0] == "frames"]
    assert isinstance(frame, ImageBlock) and frame.resolve_image().read() == TINY_PNG
    logs = [(e.tool, e.message, e.data) for e in events if isinstance(e, ToolLog)]
    assert logs == [("chatty", "record 0", {"i": 0}), ("chatty", "record 1", {"i": 1})]


async def test_a_run_cancelled_mid_call_stops_the_tool(
    manager: ToolManager, tmp_path: pathlib.Path
) -> None:
    arguments = {"count": 1000, "interval": 0.05, "label": "li", "directory": str(tmp_path)}
    handler = agent_for(Script([("steps", arguments)]), llamaindex_tools(manager)).run("go")
    with anyio.fail_after(20):
        async for event in handler.stream_events():
            if isinstance(event, ToolProgress):
                break
        await handler.cancel_run()
        await wait_for_mark(tmp_path, "li.stopped")
    assert not (tmp_path / "li.done").exists()


async def test_an_image_reaches_the_model_as_an_image_block(manager: ToolManager) -> None:
    script = Script([("tiny_image", {}), ("chart", {})])
    _, events = await run(agent_for(script, llamaindex_tools(manager)))
    image, chart = outputs(events)
    (block,) = image.blocks
    assert isinstance(block, ImageBlock)
    assert block.image_mimetype == "image/png"
    assert block.resolve_image().read() == TINY_PNG
    value, picture = chart.blocks
    assert isinstance(value, TextBlock) and json.loads(value.text) == {"width": 1, "height": 1}
    assert isinstance(picture, ImageBlock)
    # The agent put the blocks in the tool message the model read next.
    tool_messages = [m for m in script.seen if m.role == MessageRole.TOOL]
    image_message = next(
        m for m in tool_messages if m.additional_kwargs["tool_call_id"] == "call-0-0"
    )
    assert [type(b) for b in image_message.blocks] == [ImageBlock]


async def test_audio_and_binary_resources_are_audio_and_document_blocks(
    manager: ToolManager,
) -> None:
    _, events = await run(
        agent_for(Script([("speaker", {}), ("blob", {})]), llamaindex_tools(manager))
    )
    speaker, blob = outputs(events)
    text, audio = speaker.blocks
    assert isinstance(text, TextBlock) and text.text == "silence:"
    assert isinstance(audio, AudioBlock) and audio.format == "wav"
    assert audio.resolve_audio().read() == wav()
    (document,) = blob.blocks
    assert isinstance(document, DocumentBlock)
    assert document.document_mimetype == "application/octet-stream"
    assert document.resolve_document().read() == bytes(range(16))


async def test_a_tools_question_is_an_input_required_event_the_caller_answers(
    manager: ToolManager, tmp_path: pathlib.Path
) -> None:
    arguments = {"label": "hitl", "directory": str(tmp_path)}
    questions: list[ToolQuestion] = []

    async def answer(handler: Any, event: Event) -> None:
        if isinstance(event, ToolQuestion):
            questions.append(event)
            # The wait cancelled the call at the tool; the answer runs it again.
            await wait_for_mark(tmp_path, "hitl.stopped")
            content = {"name": "Ada", "age": 36}
            await handler.send_event(ToolAnswer(question_id=event.question_id, content=content))

    _, events = await run(
        agent_for(Script([("ask_name", arguments)]), llamaindex_tools(manager)), answer
    )
    (question,) = questions
    assert (question.tool, question.message) == ("ask_name", "Who are you? (hitl)")
    assert "name" in question.requested_schema["properties"]
    (answered,) = outputs(events)
    assert json.loads(answered.content) == {
        "action": "accept",
        "data": {"name": "Ada", "age": 36},
        "label": "hitl",
    }


async def test_handlers_given_to_the_tools_answer_instead_of_the_runs_caller(
    manager: ToolManager,
) -> None:
    logged: list[str] = []
    tools = llamaindex_tools(
        manager,
        on_elicit=lambda request, call: {"action": "decline"},
        on_log=lambda record, call: logged.append(record.message),
    )
    script = Script([("ask_name", {}), ("chatty", {"count": 2})])
    _, events = await run(agent_for(script, tools))
    declined, chatty = outputs(events)
    assert json.loads(declined.content)["action"] == "decline"
    assert chatty.content == "2"
    assert logged == ["record 0", "record 1"]
    assert not [e for e in events if isinstance(e, ToolLog)]


async def test_a_tool_called_outside_a_workflow_returns_its_output(
    manager: ToolManager,
) -> None:
    (echo,) = [t for t in llamaindex_tools(manager) if t.metadata.name == "echo"]
    with anyio.fail_after(20):
        output = await echo.acall(message="plain")
    assert (output.content, output.is_error) == ("plain", False)
    with pytest.raises(NotImplementedError, match="asynchronously"):
        echo.call(message="sync")


async def test_the_retriever_follows_tools_joining_and_leaving_the_fleet(
    mosquitto: Mosquitto, fleet_topics: Topics, manager: ToolManager
) -> None:
    retriever = FleetToolRetriever(manager)
    assert "joined" not in {t.metadata.name for t in await retriever.aretrieve("")}
    topics = fleet_topics
    with anyio.fail_after(20):
        async with ToolService(mosquitto.url, [joined], topics=topics):
            info = await manager.wait_for_tool("joined", timeout=15)
            _, events = await run(
                agent_for(Script([("joined", {"text": "late"})]), retriever=retriever)
            )
            assert outputs(events)[0].content == "late"
        await manager.wait_for_tool_removed(info.id, timeout=15)
    assert "joined" not in {t.metadata.name for t in retriever.retrieve("")}


async def test_every_setting_reaches_the_tool(manager: ToolManager) -> None:
    reports = []
    for settings in every_setting():
        tools = llamaindex_tools(manager, thread_id="thread-s", **settings)
        _, events = await run(agent_for(Script([("received", {})]), tools))
        (output,) = outputs(events)
        reports.append(json.loads(output.content))
    # A LlamaIndex agent hands its tools no tool-call id: the call has none.
    check_received(reports, call_ids=[None, None], thread_id="thread-s")

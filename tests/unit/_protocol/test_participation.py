"""The caller-takes-part wire shapes: MCP's own, both ways."""

from argentic_tools import LogRecord, SampleResult, parse_message
from argentic_tools._protocol.messages import encode
from argentic_tools._protocol.participation import ToolAskMessage, ToolLogMessage


def test_log_records_map_to_mcps_data_and_back_without_loss() -> None:
    assert LogRecord(level="info", message="hi").mcp_data() == "hi"
    assert LogRecord(level="info", data={"a": 1}).mcp_data() == {"a": 1}
    both = LogRecord(level="error", message="failed", data={"code": 2})
    assert both.mcp_data() == {"message": "failed", "data": {"code": 2}}
    for data in ("text", {"a": [1, 2]}, [1, 2], 3):
        record = LogRecord.from_mcp("warning", data, "srv")
        assert record.mcp_data() == data and record.logger == "srv"


def test_questions_and_log_records_round_trip_on_the_wire() -> None:
    ask = ToolAskMessage(task_id="t", tool_id="x", ask_id="1", kind="sample", request={"a": 1})
    assert parse_message(encode(ask)) == ask
    log = ToolLogMessage(task_id="t", tool_id="x", seq=1, record=LogRecord(level="debug"))
    parsed = parse_message(encode(log))
    assert isinstance(parsed, ToolLogMessage) and parsed.record.level == "debug"


def test_a_completion_takes_text_or_blocks() -> None:
    text = SampleResult(content="hi", model="m")
    assert text.text == "hi"
    blocks = SampleResult.model_validate(
        {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "model": "m"}
    )
    assert blocks.text == "ab"
    assert blocks.model_dump(by_alias=True, exclude_none=True)["role"] == "assistant"

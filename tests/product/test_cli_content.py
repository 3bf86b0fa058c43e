"""``argentic-tools call`` on tools that return content blocks, as a subprocess.

A real tool process (``tests.support.media_tools``) on a real mosquitto returns each
block type, a mixed list, blocks beside a value and a stream of images; the MCP side
is the official SDK's server (``tests/support/mcp_server.py --blocks``) called with
``--mcp-command``. Text prints as text, binary data as ``[image/png, 67 B]``,
``--save-content`` writes files named by the command, and ``--json`` carries the blocks.
"""

import base64
import json
import shlex
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.brokers import Mosquitto
from tests.support.cli import connection, lines, run_cli
from tests.support.media_tools import TINY_PNG, png, wav
from tests.support.processes import ROOT, ToolProcess

pytestmark = pytest.mark.anyio

PNG = f"[image/png, {len(TINY_PNG)} B]"
WAV = f"[audio/wav, {len(wav())} B]"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """One event loop for the module, so one tool process serves every test."""
    return "asyncio"


@pytest.fixture(scope="module")
async def media(mosquitto: Mosquitto) -> AsyncIterator[list[str]]:
    """The media tools served; yields the CLI's connection options for them."""
    prefix = f"media{uuid.uuid4().hex[:10]}"
    async with ToolProcess("tests.support.media_tools", mosquitto.url, prefix):
        where = connection(mosquitto.url, prefix)
        ready = await run_cli("list", "--json", "--expect", "mixed", "--wait", "20", *where)
        assert ready.returncode == 0, ready.stderr
        yield where


def saved_files(directory: Path) -> dict[str, bytes]:
    """Each file of ``directory`` by name, with its bytes."""
    return {path.name: path.read_bytes() for path in directory.iterdir()}


async def call(where: list[str], *args: str) -> str:
    completed = await run_cli("call", *args, *where)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.decode()


async def test_each_block_type_prints_as_text_or_as_its_type_and_size(media: list[str]) -> None:
    assert await call(media, "tiny_image") == f"{PNG}\n"
    assert await call(media, "beep") == f"{WAV}\n"
    assert await call(media, "notes") == (
        "[resource file:///notes.txt, text/plain, 17 B]\nremember the milk\n"
    )
    assert await call(media, "blob") == "[resource file:///data.bin, binary, 16 B]\n"
    assert await call(media, "link") == (
        "[link report.pdf: file:///report.pdf, application/pdf, 1.2 KB] The report\n"
    )


async def test_a_mixed_list_prints_block_by_block_and_a_value_beside_blocks_follows(
    media: list[str],
) -> None:
    assert lines((await call(media, "mixed")).encode()) == [
        "a chart and its source",
        PNG,
        "[link chart.csv: file:///chart.csv]",
        '{"rows": 3}',
    ]
    chart = await call(media, "chart")
    first, rest = chart.split("\n", 1)
    assert first == PNG
    assert json.loads(rest) == {"width": 1, "height": 1}


async def test_a_stream_of_images_prints_each_as_it_comes(media: list[str]) -> None:
    assert lines((await call(media, "frames", "count=2")).encode()) == [
        f"[image/png, {len(png(1))} B]",
        f"[image/png, {len(png(2))} B]",
    ]


async def test_json_carries_the_blocks_in_their_wire_shape(media: list[str]) -> None:
    line = json.loads(await call(media, "tiny_image", "--json"))
    assert line["result"] == f"[image: image/png, {len(TINY_PNG)} bytes]"
    [block] = line["content"]
    assert base64.b64decode(block["data"]) == TINY_PNG
    assert block["mimeType"] == "image/png"
    assert block["annotations"] == {"audience": ["user"], "priority": 0.9}
    streamed = [
        json.loads(text)
        for text in lines((await call(media, "frames", "count=1", "--json")).encode())
    ]
    assert streamed[0]["content"][0]["type"] == "image"
    assert streamed[-1]["content"][0]["mimeType"] == "image/png"


async def test_save_content_writes_each_binary_and_resource_block_to_a_file_it_names(
    media: list[str], tmp_path: Path
) -> None:
    target = tmp_path / "out"
    completed = await run_cli("call", "speaker", "--save-content", str(target), *media)
    assert completed.returncode == 0, completed.stderr
    assert lines(completed.stdout) == ["silence:", WAV]
    [(name, data)] = saved_files(target).items()
    assert data == wav()
    assert name.startswith("speaker-") and name.endswith("-2.wav")  # the second block
    assert f"Saved {target / name}" in completed.stderr.decode()
    # A resource's URI never names the file: the tool chooses nothing of where it goes.
    resources = await run_cli("call", "notes", "--save-content", str(target), "--json", *media)
    assert resources.returncode == 0, resources.stderr
    [path] = json.loads(resources.stdout)["saved"]
    assert Path(path).parent == target
    assert Path(path).name.startswith("notes-") and Path(path).suffix == ".txt"
    assert saved_files(target)[Path(path).name] == b"remember the milk"
    nothing = await run_cli("call", "link", "--save-content", str(target), *media)
    assert nothing.returncode == 0, nothing.stderr
    assert "No image, audio or resource in the result to save." in nothing.stderr.decode()


MCP_SERVER = shlex.join(
    [sys.executable, str(ROOT / "tests" / "support" / "mcp_server.py"), "--blocks"]
)


async def test_call_mcp_prints_and_saves_an_mcp_servers_blocks_the_same_way(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")
    picture = await run_cli(
        "call", "picture", "--mcp-command", MCP_SERVER, "--save-content", str(tmp_path)
    )
    assert picture.returncode == 0, picture.stderr
    shown = lines(picture.stdout)
    assert shown[0].startswith("[image/png, ") and shown[0].endswith(" B]")
    [(name, data)] = saved_files(tmp_path).items()
    assert name.endswith(".png") and data.startswith(b"\x89PNG")
    resources = await run_cli("call", "resources", "--mcp-command", MCP_SERVER)
    assert resources.returncode == 0, resources.stderr
    assert lines(resources.stdout) == [
        "[resource test://notes/1, text/plain, 10 B]",
        "first note",
        "[resource test://blobs/1, application/octet-stream, 3 B]",
        "[link report-1: test://reports/1, application/pdf] The first report",
    ]
    measured = await run_cli("call", "measured", "--mcp-command", MCP_SERVER, "--json")
    line = json.loads(measured.stdout)
    assert line["result"] == {"width": 1, "height": 1}
    assert line["content"][0]["type"] == "image"

"""Lines read in a worker thread, one at a time, and a wait for one that can be ended."""

import contextlib
import os
import threading
from collections.abc import Iterator

import pytest

from argentic_tools.cli.calling.line_reader import LineReader, PromptInterruptedError


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        with contextlib.suppress(OSError):  # closed by the test (the end of input)
            os.close(fd)


def test_lines_are_read_one_at_a_time_and_never_past_their_newline(
    pipe: tuple[int, int],
) -> None:
    read_end, write_end = pipe
    os.write(write_end, "first\r\nsecond é\nthird\n".encode())
    first = LineReader(read_end)
    assert first.read_line() == "first"
    first.close()
    second = LineReader(read_end)  # the next question's reader gets the next line
    assert second.read_line() == "second é"
    assert second.read_line() == "third"
    second.close()


def test_interrupting_wakes_the_thread_waiting_for_a_line(pipe: tuple[int, int]) -> None:
    read_end, _ = pipe
    reader = LineReader(read_end)
    failures: list[BaseException] = []

    def wait() -> None:
        try:
            reader.read_line()
        except PromptInterruptedError as exc:
            failures.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    reader.interrupt()
    thread.join(10)
    assert not thread.is_alive()
    assert [str(failure) for failure in failures] == ["interrupted"]
    with pytest.raises(PromptInterruptedError):  # and it stays interrupted
        reader.read_line()
    reader.close()


def test_the_end_of_input_ends_the_wait(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.write(write_end, b"partial")
    os.close(write_end)
    reader = LineReader(read_end)
    with pytest.raises(PromptInterruptedError, match="ended"):
        reader.read_line()
    reader.close()

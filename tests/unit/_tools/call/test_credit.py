"""The tool's side of a stream paced by its reader: which chunks may go, and the pauses."""

from argentic_tools._tools.call.credit import StreamCredit


def test_chunks_past_the_window_wait_in_order_until_credit_lets_them_go() -> None:
    credit = StreamCredit(window=3)
    assert [credit.offer(bytes([i])) for i in range(5)] == [True, True, True, False, False]
    assert credit.paused and credit.held == 2 and credit.sent == 3
    assert credit.grant(1) == [b"\x03"]  # read 1: chunks up to seq 3 may go
    assert credit.paused
    assert credit.grant(1) == []  # a repeated or late grant changes nothing
    assert credit.grant(0) == []
    assert credit.grant(10) == [b"\x04"]
    assert not credit.paused and credit.sent == 5
    assert credit.offer(b"\x05")  # within the credit: goes at once


def test_a_pause_lasts_from_the_first_chunk_held_until_nothing_is_held() -> None:
    credit = StreamCredit(window=1)
    assert credit.end_pause() is None  # no pause yet
    assert credit.offer(b"a")
    assert not credit.offer(b"b")
    assert not credit.offer(b"c")
    assert credit.grant(1) == [b"b"]
    assert credit.end_pause() is None  # "c" still waits
    assert credit.grant(2) == [b"c"]
    seconds = credit.end_pause()
    assert seconds is not None and seconds >= 0
    assert credit.end_pause() is None  # counted once


def test_dropping_the_held_chunks_ends_the_pause() -> None:
    credit = StreamCredit(window=1)
    credit.offer(b"a")
    credit.offer(b"b")
    assert credit.drop() == 1
    assert not credit.paused
    assert credit.end_pause() is not None

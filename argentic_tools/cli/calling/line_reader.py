"""Lines typed at the terminal, read in a worker thread, and a way to stop waiting for one.

``call`` asks the person at the terminal while the call goes on: the reading blocks, so
it runs in a worker thread, never on the event loop. A question may end before it is
answered (Ctrl-C, the call ending): :meth:`LineReader.interrupt` wakes the thread,
whose :meth:`~LineReader.read_line` raises :class:`PromptInterruptedError`. Each reader has
its own wake-up pipe, so interrupting one question never touches the next.

The terminal's own line discipline does the editing (backspace, Ctrl-U). A line is
read from the file descriptor a byte at a time, never through ``sys.stdin``'s buffer
and never past its newline, so a pasted block of lines is taken one line per question,
whichever reader asks next.
"""

import contextlib
import os
import select


class PromptInterruptedError(Exception):
    """The question ended before a line came: interrupted, or the input ended (Ctrl-D)."""


class LineReader:
    """Reads lines from file descriptor ``fd`` (the terminal), one call at a time.

    Args:
        fd: What to read from (``sys.stdin.fileno()``).

    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._wake_read, self._wake_write = os.pipe()
        self.interrupted = False

    def read_line(self) -> str:
        """The next line, without its newline (blocks: call it from a worker thread).

        Raises:
            PromptInterruptedError: :meth:`interrupt` was called, or the input ended.

        """
        line = bytearray()
        while True:
            if self.interrupted:
                raise PromptInterruptedError("interrupted")
            ready, _, _ = select.select([self.fd, self._wake_read], [], [])
            if self._wake_read in ready:
                raise PromptInterruptedError("interrupted")
            byte = os.read(self.fd, 1)
            if not byte:
                raise PromptInterruptedError("the input ended")
            if byte == b"\n":
                return line.decode(errors="replace").rstrip("\r")
            line += byte

    def interrupt(self) -> None:
        """Wake the thread waiting in :meth:`read_line` (from any thread); later reads fail too."""
        self.interrupted = True
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b"!")

    def close(self) -> None:
        """Release the wake-up pipe (the terminal stays open)."""
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)

"""What every benchmark's command line shares: its parser, and how a run ends.

A benchmark's ``main`` parses with :func:`parser` and :func:`parse`, then hands its body
to :func:`exit_status`, which gives every benchmark the same exit statuses: what the body
returns (0, or 1 when a check failed), 2 for bad input (:class:`UsageError`), 1 when the
run could not complete, 130 after Ctrl-C or SIGTERM. The body stops what it started in
``with`` blocks or ``finally`` clauses, so that holds after an error or an interruption
too; :func:`run_async` runs its event loop with SIGTERM cancelling it.
"""

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from benchmarks.harness.broker import BrokerError, find_mosquitto
from benchmarks.harness.peers import PeerError

T = TypeVar("T")


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2."""


class InterruptedRunError(Exception):
    """SIGTERM arrived while the event loop ran; the run was cancelled and cleaned up."""


def log(message: str) -> None:
    """Progress, on stderr (stdout is the report's)."""
    print(message, file=sys.stderr, flush=True)


PROG_VARIABLE = "ARGENTIC_TOOLS_PROG"
"""Environment variable with the command that started the benchmark, when it is not
``python -m ...``: ``argentic-tools bench`` sets it, so that help and errors name the
command the user typed."""


def parser(
    prog: str, description: str, doc: str | None = None, examples: tuple[str, ...] = ()
) -> argparse.ArgumentParser:
    """A benchmark's parser; its module docstring, past the first paragraph, as the epilog.

    ``prog`` is how the benchmark is run (``python -m benchmarks.run``), unless
    :data:`PROG_VARIABLE` says otherwise; it is read once and removed from the
    environment, so the processes the benchmark starts keep their own names.
    ``examples`` are arguments for ``prog``, shown after the epilog.
    """
    prog = os.environ.pop(PROG_VARIABLE, "") or prog
    epilog = doc.split("\n\n", 1)[1] if doc and "\n\n" in doc else None
    if examples:
        lines = "\n".join(f"  {prog} {example}".rstrip() for example in examples)
        epilog = f"{epilog or ''}\nExamples:\n{lines}\n".lstrip("\n")
    return argparse.ArgumentParser(
        prog=prog,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=epilog,
    )


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args``, past a leading ``--`` (``argentic-tools bench -- --quick``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    return parser.parse_args(args)


def _number(kind: Callable[[str], float], lowest: float, inclusive: bool, text: str) -> Any:
    value = kind(text)
    if value < lowest or (value == lowest and not inclusive):
        raise argparse.ArgumentTypeError(
            f"must be {'at least' if inclusive else 'more than'} {lowest:g}, not {text}"
        )
    return value


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    return int(_number(int, 1, True, text))


def non_negative_int(text: str) -> int:
    """An argparse type: an integer of at least 0."""
    return int(_number(int, 0, True, text))


def positive_float(text: str) -> float:
    """An argparse type: a number above 0."""
    return float(_number(float, 0, False, text))


def non_negative_float(text: str) -> float:
    """An argparse type: a number of at least 0."""
    return float(_number(float, 0, True, text))


def add_mosquitto_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mosquitto", help="path of the mosquitto binary (default: on PATH)")


def require_mosquitto(explicit: str | None) -> str:
    """The mosquitto binary to run (``explicit`` if given); UsageError when there is none."""
    binary = find_mosquitto(explicit)
    if binary is None:
        where = explicit or "mosquitto on PATH, /usr/sbin/mosquitto, /usr/local/sbin/mosquitto"
        raise UsageError(
            f"mosquitto not found (looked for {where}); install it (`apt-get install "
            "mosquitto`, `brew install mosquitto`) or pass --mosquitto PATH"
        )
    return binary


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # outside the event loop: unwinds like Ctrl-C


def exit_status(body: Callable[[], int], what: str = "the benchmark") -> int:
    """Run ``body`` with SIGTERM as an interruption; its exit status (see the module).

    An error is reported on stderr: ``what`` could not complete and why (or, when the
    broker or a peer process failed, their own message), then the notes added to it
    (``add_note``: the logs that explain it).
    """
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return body()
    except (KeyboardInterrupt, InterruptedRunError):
        log("interrupted: every process the run started is stopped")
        return 130
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        expected = isinstance(exc, BrokerError | PeerError)
        what_failed = "" if expected else f"{what} could not complete: {type(exc).__name__}: "
        notes = "".join(f"\n{note}" for note in getattr(exc, "__notes__", ()))
        print(f"error: {what_failed}{exc}{notes}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, with SIGTERM cancelling it as Ctrl-C does.

    asyncio turns Ctrl-C into a cancellation of ``main`` and then KeyboardInterrupt;
    SIGTERM does the same here and ends in InterruptedRunError. Either way ``main``'s
    ``finally`` clauses run on the event loop, where its peers can still be stopped.
    """

    async def cancellable() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        received: list[int] = []

        def on_sigterm() -> None:
            received.append(signal.SIGTERM)
            task.cancel()

        previous = signal.getsignal(signal.SIGTERM)
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
        try:
            return await main
        except asyncio.CancelledError:
            if received:
                raise InterruptedRunError from None
            raise
        finally:
            loop.remove_signal_handler(signal.SIGTERM)  # which sets SIG_DFL
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    return asyncio.run(cancellable())

"""``bench`` and ``soak``: the benchmarks of a source checkout, run as they are."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

from .common import CliError
from .options import Commands


def benchmark_command(args: argparse.Namespace) -> int:
    """Run ``benchmarks.run`` (bench) or ``benchmarks.soak`` (soak) with the arguments as given."""
    module = {"bench": "run", "soak": "soak"}[args.command]
    root = Path(__file__).resolve().parents[2]
    if not (root / "benchmarks" / f"{module}.py").is_file():
        raise CliError(
            f"the benchmarks are not installed with the package; run `argentic-tools "
            f"{args.command}` from a source checkout of argentic-tools"
        )
    command = [sys.executable, "-m", f"benchmarks.{module}", *args.bench_args]
    # benchmarks.harness.cli.PROG_VARIABLE: its help and errors name `argentic-tools bench`.
    environment = {**os.environ, "ARGENTIC_TOOLS_PROG": f"argentic-tools {args.command}"}
    return subprocess.run(command, cwd=root, env=environment).returncode  # noqa: S603


def add_parsers(commands: Commands) -> None:
    """``bench`` and ``soak``: no options of their own.

    ``prefix_chars`` matches none: every argument, ``--help`` included, goes to
    benchmarks.run or benchmarks.soak as it is (whose help and errors name the command,
    ``argentic-tools bench``, and have their own examples).
    """
    for name, help_text in (
        ("bench", "run the benchmarks (from a source checkout)"),
        ("soak", "make calls under a fault schedule and check none is lost (source checkout)"),
    ):
        runner = commands.add_parser(name, help=help_text, prefix_chars="+", add_help=False)
        runner.add_argument("bench_args", nargs=argparse.REMAINDER)
        runner.set_defaults(sync=benchmark_command, debug=False)

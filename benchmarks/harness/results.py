"""Where a benchmark writes its report, and how: Markdown, and JSON beside it.

A run writes to a new scratch place (its path is printed) unless told where, and
rewrites the committed results in ``benchmarks/results/`` only with ``--update-results``.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .machine import git_revision

_HERE = Path(__file__).resolve().parents[1]
# In a source checkout the results go next to the benchmarks; from an installed package
# (no pyproject.toml above us) into ./benchmark-results rather than into site-packages.
RESULTS_DIR = (
    _HERE / "results" if (_HERE.parent / "pyproject.toml").is_file() else Path("benchmark-results")
)


def add_results_arguments(
    parser: argparse.ArgumentParser,
    option: str = "--results-dir",
    *,
    committed: Path = RESULTS_DIR,
    exclusive: bool = False,
    help_text: str = "output folder (default: a new scratch one)",
) -> None:
    """``option`` (where to write) and ``--update-results`` (the ``committed`` place instead).

    ``committed`` is a folder, or a file for a benchmark that writes one report file;
    ``exclusive`` refuses both options together.
    """
    group: Any = parser.add_mutually_exclusive_group() if exclusive else parser
    group.add_argument(
        option,
        dest="results_place",
        metavar=option.lstrip("-").replace("-", "_").upper(),
        type=Path,
        default=None,
        help=help_text,
    )
    group.add_argument(
        "--update-results", action="store_true", help=f"write the committed {committed} instead"
    )
    parser.set_defaults(committed_results=committed)


def _place(args: argparse.Namespace) -> Path | None:
    if args.results_place is not None:
        return Path(args.results_place)
    if args.update_results:
        return Path(args.committed_results)
    return None


def results_dir(args: argparse.Namespace) -> Path:
    """The folder a run writes to: the committed results only when asked to update them."""
    return _place(args) or Path(tempfile.mkdtemp(prefix="argentic-tools-results-"))


def results_file(args: argparse.Namespace) -> Path:
    """The file a run writes its report to: the committed one only when asked to update it."""
    place = _place(args)
    if place is not None:
        return place
    committed = Path(args.committed_results)
    handle, name = tempfile.mkstemp(prefix=f"{committed.stem}-", suffix=committed.suffix)
    os.close(handle)
    return Path(name)


_NUMBER = r"-?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|NaN|Infinity)"
# A list of numbers as indented json.dumps lays it out; a string never holds a raw newline.
_NUMBER_LIST = re.compile(rf"\[\n\s*({_NUMBER}(?:,\n\s*{_NUMBER})*)\n\s*\]")


def to_json(data: dict[str, Any]) -> str:
    """Indented JSON with each list of numbers on one line (the raw latencies run to 1000s)."""
    text = json.dumps(data, indent=2, default=str)
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(re.split(r",\s*", m[1])) + "]", text)


STAMP = "Measured at commit"
"""How a report's stamp begins (see :func:`stamped`)."""


def stamped(markdown: str) -> str:
    """``markdown`` with a line under its title naming the commit, load and command.

    Every report says what it measured: ``HEAD`` (and a hash of the library's
    uncommitted changes, if any), the 1-minute load average when it was written, and the
    command line that wrote it. A report stamped already is left as it is.
    """
    if STAMP in markdown:
        return markdown
    try:
        revision = git_revision()
    except (OSError, subprocess.CalledProcessError):
        revision = "unknown (no git checkout)"
    main = sys.modules["__main__"]
    spec = getattr(main, "__spec__", None)
    command = (
        ["python", "-m", spec.name, *sys.argv[1:]] if spec is not None else ["python", *sys.argv]
    )
    stamp = (
        f"{STAMP} `{revision}`; load {os.getloadavg()[0]:.2f} when written; "
        f"`{shlex.join(command)}`."
    )
    title, _, rest = markdown.partition("\n")
    return f"{title}\n\n{stamp}\n{rest}" if title.startswith("#") else f"{stamp}\n\n{markdown}"


def write_report(path: Path, markdown: str, data: dict[str, Any] | None = None) -> None:
    """The Markdown report at ``path``, :func:`stamped`, and, given ``data``, its JSON
    beside it (``.json``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(stamped(markdown))
    if data is not None:
        path.with_suffix(".json").write_text(to_json(data) + "\n")

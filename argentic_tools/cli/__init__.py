"""The ``argentic-tools`` command line and the demo (``pip install 'argentic-tools[cli]'``).

The command line draws its tables and logs with ``rich``, which only the ``cli``
extra installs; without it, :func:`main` says so in one line instead of failing
with an import error.
"""

import sys
from collections.abc import Sequence

MISSING_EXTRA = (
    "argentic-tools: the command line needs the 'cli' extra: pip install 'argentic-tools[cli]'"
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        from .main import main as run
    except ModuleNotFoundError as exc:
        if exc.name != "rich" and not (exc.name or "").startswith("rich."):
            raise
        print(MISSING_EXTRA, file=sys.stderr)
        return 2
    return run(argv)


__all__ = ["main"]

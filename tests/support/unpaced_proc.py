"""A stream tool as releases before stream credit served it: ``python -m
tests.support.unpaced_proc --broker URL --topic-prefix P``.

It registers as protocol 2, so callers send it no ``stream_window``: it sends its chunks
as fast as the broker takes them, as every tool did before protocol 3 (and as a tool
still does for a caller that sends no window).
"""

import sys

from argentic_tools import serve_main
from argentic_tools._tools.serving import endpoint
from tests.support.long_proc import many

setattr(endpoint, "PROTOCOL_VERSION", 2)  # noqa: B010 - the name the endpoint registers with


def main(argv: list[str]) -> None:
    """Serve ``many`` as a protocol 2 tool."""
    serve_main([many], argv, prog="tests.support.unpaced_proc")


if __name__ == "__main__":
    main(sys.argv[1:])

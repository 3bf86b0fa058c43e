"""A tool process for the cluster test.

Run as ``python -m tests.behaviour.cluster.cluster_tool LOG --broker ...``.

``work(token)`` appends the token to LOG (one line per execution, flushed at once), so
the test can count how many times each call ran across every replica and restart.
"""

import os
import sys

from argentic_tools import serve_main, tool

LOG = sys.argv.pop(1)


@tool
def work(token: str) -> dict[str, object]:
    """Record one execution of the call ``token`` and say which process ran it."""
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(token + "\n")
    return {"token": token, "pid": os.getpid()}


if __name__ == "__main__":
    serve_main([work], prog="cluster_tool")

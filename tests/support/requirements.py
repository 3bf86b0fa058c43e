"""What a test needs from the machine: skipped without it on a laptop, a failure in CI.

``make test`` installs what it can (mosquitto, Chromium, tmux, Node and the npm
servers). A test that needs something still missing is skipped, with a notice, so a
partial setup still runs the rest; in CI nothing may be lost to a skip. The one switch
is ``ARGENTIC_TOOLS_REQUIRE_MOSQUITTO=1``, which ``.ci/run`` exports: with it set, what
is missing fails the test that needs it.
"""

import os
import shutil

import pytest

from tests.support.brokers import find_mosquitto

REQUIRED = os.environ.get("ARGENTIC_TOOLS_REQUIRE_MOSQUITTO") == "1"
"""CI's switch: a missing requirement fails the test instead of skipping it."""


def require(what: str, present: bool, how: str = "run `make test`, which installs it") -> None:
    """Go on when ``present``; else skip the test, or fail it in CI (:data:`REQUIRED`)."""
    if present:
        return
    message = f"{what} is not installed ({how})"
    if REQUIRED:
        pytest.fail(f"{message}, and CI requires it", pytrace=False)
    pytest.skip(message)


def require_mosquitto() -> str:
    """The mosquitto binary, for a test that runs a broker of its own (or kills one)."""
    binary = find_mosquitto()
    require("mosquitto", binary is not None)
    assert binary is not None
    return binary


def require_tmux() -> None:
    """The test drives the command line on a tmux terminal."""
    require("tmux", shutil.which("tmux") is not None)

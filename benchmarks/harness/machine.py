"""What a report says about where it ran: cores, load, versions, the library's revision."""

import hashlib
import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from benchmarks.harness.broker import mosquitto_version
from benchmarks.harness.procs import PACKAGE_PARENT


def package_version(package: str) -> str:
    """The installed version of ``package``, or ``not installed``."""
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def machine_info(binary: str, argentic: str | None = None) -> dict[str, Any]:
    """Cores, load average now (``load_after`` is for the caller to fill), platform, versions.

    ``argentic`` is the version to report for argentic, for a benchmark that compares
    with it; None leaves argentic out.
    """
    versions = {
        "python": platform.python_version(),
        "mosquitto": mosquitto_version(binary),
        "aiomqtt": package_version("aiomqtt"),
        "paho-mqtt": package_version("paho-mqtt"),
        "pydantic": package_version("pydantic"),
        "argentic": argentic,
        "argentic-tools": package_version("argentic-tools"),
    }
    return {
        "cpu_count": os.cpu_count(),
        "load_before": list(os.getloadavg()),
        "load_after": [],
        "platform": platform.platform(),
        "versions": {name: v for name, v in versions.items() if v is not None},
    }


def git(*args: str) -> bytes:
    """``git ARGS`` in the checkout holding ``benchmarks``; CalledProcessError if it fails."""
    return subprocess.run(
        ["git", "-C", str(PACKAGE_PARENT), *args], capture_output=True, timeout=60, check=True
    ).stdout


def git_revision(clean: str = "") -> str:
    """``HEAD``'s short hash, and a hash of the library's uncommitted changes if any.

    ``clean`` follows the hash when ``argentic_tools/`` has no uncommitted change.
    Raises CalledProcessError (or OSError without git) outside a git checkout.
    """
    head = git("rev-parse", "--short", "HEAD").decode().strip()
    changed = git("status", "--porcelain", "--", "argentic_tools").decode().strip()
    if not changed:
        return head + clean
    diff = git("diff", "HEAD", "--", "argentic_tools")
    digest = hashlib.sha1(diff, usedforsecurity=False).hexdigest()[:10]
    files = len(changed.splitlines())
    return f"{head} + uncommitted changes in {files} files of argentic_tools/ (diff {digest})"

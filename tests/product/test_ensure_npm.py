"""``scripts/ensure-npm.sh``, run as CI and the conformance runner run it, without network.

Installing needs the npm registry (``make test-conformance`` does it); what is checked
here is what must hold without it: a package already installed is found again without
npm, one prefix per exact version, and a malformed request says what it wants.
"""

import os
import subprocess
from pathlib import Path

from tests.support.processes import ROOT

SCRIPT = ROOT / "scripts" / "ensure-npm.sh"


def _run(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # An npm first on the PATH that notes each call and fails, as a missing registry would.
    fake = cache / "bin"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "npm").write_text(f'#!/bin/sh\necho "$@" >> {cache / "npm-calls"}\nexit 1\n')
    (fake / "npm").chmod(0o755)
    env = {**os.environ, "NPM_CACHE_DIR": str(cache), "PATH": f"{fake}:/usr/bin:/bin"}
    command = ["/bin/bash", str(SCRIPT), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=30)


def test_an_installed_package_is_found_again_without_npm(tmp_path: Path) -> None:
    for version in ("1.0.0", "2.0.0"):
        prefix = tmp_path / "packages" / f"@scope+tool@{version}"
        prefix.mkdir(parents=True)
        (prefix / ".installed").touch()
    first = _run(tmp_path, "package", "@scope/tool@1.0.0")
    second = _run(tmp_path, "package", "@scope/tool@2.0.0")
    assert (first.returncode, first.stdout.strip()) == (
        0,
        str(tmp_path / "packages" / "@scope+tool@1.0.0"),
    ), first.stderr
    assert second.stdout.strip() == str(tmp_path / "packages" / "@scope+tool@2.0.0")
    assert first.stderr == second.stderr == ""
    assert not (tmp_path / "npm-calls").exists()


def test_a_package_without_a_version_or_an_unknown_command_is_refused(tmp_path: Path) -> None:
    missing_version = _run(tmp_path, "package", "@scope/tool")
    assert missing_version.returncode == 1
    assert "want NAME@VERSION" in missing_version.stderr
    unknown = _run(tmp_path, "install")
    assert unknown.returncode == 1
    assert "usage:" in unknown.stderr
    assert not (tmp_path / "packages").exists()
    assert not (tmp_path / "npm-calls").exists()


def test_a_failed_install_says_so_and_leaves_no_stamp(tmp_path: Path) -> None:
    failed = _run(tmp_path, "package", "@scope/tool@3.0.0")
    assert failed.returncode == 1
    assert "npm install @scope/tool@3.0.0 failed" in failed.stderr
    assert (tmp_path / "npm-calls").read_text().startswith("install --prefix")
    assert not (tmp_path / "packages" / "@scope+tool@3.0.0" / ".installed").exists()

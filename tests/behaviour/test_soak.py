"""The reduced soak: 1,200 calls through one of each fault, run as a user runs it.

``python -m benchmarks.soak`` starts its own mosquitto, tool processes and relays, kills,
freezes and disconnects them for real, and checks its invariants from records kept on
both sides. This test holds it to them: no call lost, late or answered twice, no task
executed twice, every fault recovered.
"""

import json
import subprocess
import sys
from pathlib import Path

from tests.support.brokers import uncovered_env
from tests.support.requirements import require_mosquitto

ROOT = Path(__file__).resolve().parents[2]
FAULTS = ["kill", "freeze", "broker", "drop-manager", "drop-tool"]
CALLS = 1200
"""Six seconds of calls at 200/s: a fault (and its recovery) every second of them; more
when a recovery runs late."""
TIMEOUT = 1.0
FREEZE = 1.5
"""Longer than a call's timeout, so calls sent to the frozen tool time out."""


def test_reduced_soak_survives_every_fault_without_losing_doubling_or_delaying_a_call(
    tmp_path: Path,
) -> None:
    require_mosquitto()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.soak",
            "--calls",
            str(CALLS),
            "--rate",
            "200",
            "--timeout",
            str(TIMEOUT),
            "--freeze",
            str(FREEZE),
            "--faults",
            ",".join(FAULTS),
            "--results-dir",
            str(tmp_path),
        ],
        cwd=ROOT,
        env=uncovered_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    data = json.loads((tmp_path / "soak.json").read_text())
    result = data["result"]
    failed = {name: check for name, check in result["checks"].items() if not check["ok"]}
    assert not failed, failed
    # Calls go on past CALLS only while a fault is still recovering.
    assert result["calls"] >= CALLS
    assert sum(result["outcomes"].values()) == result["calls"]
    assert result["checks"]["late"]["value"] == 0
    assert result["checks"]["multiple_results"]["value"] == 0
    assert result["checks"]["duplicate_executions"]["value"] == 0
    assert [fault["kind"] for fault in result["faults"]] == FAULTS
    assert all(fault["recovery_s"] is not None for fault in result["faults"])
    # The freeze outlasts the call timeout, so calls sent to the frozen tool early in it
    # time out; every 50th call asks the tool to fail (unless a fault got it first).
    assert FREEZE > TIMEOUT
    assert result["outcomes"]["success"] > result["calls"] // 2
    assert result["outcomes"].get("timeout", 0) > 0
    assert 0 < result["outcomes"]["tool_error (asked for)"] <= -(-result["calls"] // 50)
    assert (tmp_path / "soak.md").read_text().strip() == done.stdout.strip()

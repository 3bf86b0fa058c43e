"""Smoke tests of the benchmark (``python -m benchmarks.run``) as a user runs it: a subprocess."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from .brokers import find_mosquitto, uncovered_env

ROOT = Path(__file__).resolve().parent.parent
REQUIRE_MOSQUITTO = os.environ.get("ARGENTIC_TOOLS_REQUIRE_MOSQUITTO") == "1"


def run_bench(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.run", *args],
        cwd=ROOT,
        env=uncovered_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_quick_run_of_latency_and_throughput_reports_floor_and_ours_without_losses(
    tmp_path: Path,
) -> None:
    if find_mosquitto() is None:
        message = "mosquitto is not installed (run `make test`, which installs it)"
        if REQUIRE_MOSQUITTO:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    done = run_bench(
        "--quick",
        "--reps",
        "1",
        "--scenarios",
        "a,b",
        # A smoke test: a few calls of each kind say as much as the quick run's thousand.
        "--sequential",
        "30",
        "--calls",
        "200",
        "--results-dir",
        str(tmp_path),
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "## Targets" in done.stdout
    data = json.loads((tmp_path / "latest.json").read_text())
    assert (tmp_path / "latest.md").read_text().strip() == done.stdout.strip()
    assert data["config"]["scenarios"] == ["a", "b"]
    for impl in ("floor", "ours"):
        entries = [r for r in data["results"] if r["impl"] == impl]
        assert sorted(r["scenario"] for r in entries) == ["a", "b"], (impl, entries)
        for entry in entries:
            assert entry["error"] is None, entry
            assert entry["failed"] == 0, entry
            assert entry["ok"] == entry["calls"] > 0, entry
    latency = next(r for r in data["results"] if r["impl"] == "ours" and r["scenario"] == "a")
    assert 0 < latency["metrics"]["p50_ms"] <= latency["metrics"]["p99_ms"]
    assert data["machine"]["cpu_count"] >= 1
    assert data["machine"]["versions"]["mosquitto"] != "unknown"


def test_refuses_to_run_without_mosquitto(tmp_path: Path) -> None:
    done = run_bench("--mosquitto", str(tmp_path / "no-such-mosquitto"), timeout=60)
    assert done.returncode == 2
    assert "mosquitto not found" in done.stderr
    assert "--mosquitto" in done.stderr
    assert not (tmp_path / "latest.json").exists()


def test_refuses_a_port_that_is_in_use() -> None:
    if find_mosquitto() is None:
        message = "mosquitto is not installed: the port check comes after the binary check"
        if REQUIRE_MOSQUITTO:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_bench("--port", str(port), "--scenarios", "a", timeout=60)
    assert done.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr


def test_rejects_unknown_scenarios() -> None:
    done = run_bench("--scenarios", "a,z", timeout=60)
    assert done.returncode == 2
    assert "--scenarios" in done.stderr


def test_benchmarks_write_to_a_scratch_folder_unless_asked_to_update_the_results(
    tmp_path: Path,
) -> None:
    import argparse

    from benchmarks.run import RESULTS_DIR, add_results_arguments, results_dir

    parser = argparse.ArgumentParser()
    add_results_arguments(parser)
    scratch = results_dir(parser.parse_args([]))
    assert scratch.is_dir() and scratch.resolve() != RESULTS_DIR.resolve()
    scratch.rmdir()
    assert results_dir(parser.parse_args(["--update-results"])) == RESULTS_DIR
    assert results_dir(parser.parse_args(["--results-dir", str(tmp_path)])) == tmp_path

"""Smoke tests of the benchmark (``python -m benchmarks.run``) as a user runs it: a subprocess."""

import json
import math
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.brokers import uncovered_env
from tests.support.requirements import require_mosquitto

ROOT = Path(__file__).resolve().parents[2]
SEQUENTIAL = 30
SVG = "{http://www.w3.org/2000/svg}"


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


@dataclass(frozen=True)
class QuickRun:
    done: subprocess.CompletedProcess[str]
    results: Path


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> QuickRun:
    """One small run of scenarios (a) and (b), shared by the tests that read its outputs."""
    require_mosquitto()
    results = tmp_path_factory.mktemp("bench-results")
    done = run_bench(
        "--quick",
        "--reps",
        "1",
        "--scenarios",
        "a,b",
        # A smoke test: a few calls of each kind say as much as the quick run's thousand.
        "--sequential",
        str(SEQUENTIAL),
        "--calls",
        "200",
        "--results-dir",
        str(results),
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return QuickRun(done, results)


def test_quick_run_of_latency_and_throughput_reports_floor_and_ours_without_losses(
    quick_run: QuickRun,
) -> None:
    done, tmp_path = quick_run.done, quick_run.results
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


def test_quick_run_keeps_every_sequential_latency_and_draws_their_cdf_linked_from_the_report(
    quick_run: QuickRun,
) -> None:
    data = json.loads((quick_run.results / "latest.json").read_text())
    sequential = [r for r in data["results"] if r["scenario"] == "a"]
    impls = [r["impl"] for r in sequential]
    assert {"floor", "ours", "ours-basetool"} <= set(impls)
    assert len(impls) == len(set(impls))  # one repetition: one record per implementation
    for entry in sequential:
        latencies = entry["latencies_ms"]
        assert len(latencies) == SEQUENTIAL == entry["calls"], entry["impl"]
        assert all(isinstance(v, float) and v > 0 for v in latencies), entry["impl"]
        assert all(round(v, 3) == v for v in latencies), entry["impl"]
        assert min(latencies) <= entry["metrics"]["p50_ms"] <= max(latencies)
    assert all("latencies_ms" not in r for r in data["results"] if r["scenario"] == "b")

    svg = parse_svg((quick_run.results / "latency_cdf.svg").read_text())
    assert sorted(line.get("id", "") for line in svg.iter(f"{SVG}polyline")) == sorted(
        f"cdf-{impl}" for impl in impls
    )
    text = " ".join(t.text or "" for t in svg.iter(f"{SVG}text"))
    assert f"{SEQUENTIAL} echo calls" in text
    for impl in impls:
        assert f"{impl}: p50 " in text
    report = (quick_run.results / "latest.md").read_text()
    section = report.split("## (a)", 1)[1].split("\n## ", 1)[0]
    assert "](latency_cdf.svg)" in section


def parse_svg(text: str) -> ET.Element:
    """The SVG's root after the checks that make it show on GitHub: no script, white ground."""
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg"
    assert not any(
        el.tag in (f"{SVG}script", f"{SVG}style", f"{SVG}foreignObject") for el in root.iter()
    )
    assert not any(key.startswith("on") for el in root.iter() for key in el.attrib)
    background = root.find(f"{SVG}rect")
    assert background is not None
    assert background.get("fill") == "#ffffff"
    assert (background.get("width"), background.get("height")) == (
        root.get("width"),
        root.get("height"),
    )
    return root


def test_latency_cdf_draws_one_line_per_implementation_inside_the_plot() -> None:
    from benchmarks._chart import cdf_svg

    series = {
        "floor": [0.21, 0.2, 0.25, 0.3, 4.0],
        "ours": [0.5] * 7,  # every value the same: a vertical step
        "none": [],  # left out
        "other & <odd> name": [0.0, 12.5],  # a 0.000 ms reading still has a place
    }
    root = parse_svg(cdf_svg(series, "a <title> & more", "sub"))
    width, height = float(root.get("width", "0")), float(root.get("height", "0"))
    lines = {line.get("id"): line for line in root.iter(f"{SVG}polyline")}
    assert list(lines) == ["cdf-floor", "cdf-ours", "cdf-other & <odd> name"]
    for line in lines.values():
        points = [tuple(map(float, p.split(","))) for p in line.get("points", "").split()]
        assert len(points) >= 2
        assert all(0 < x < width and 0 < y < height for x, y in points)
        ys = [y for _, y in points]
        assert ys == sorted(ys, reverse=True)  # a CDF only climbs (y grows downwards)
        assert line.get("stroke", "").startswith("#")
        assert line.get("fill") == "none"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "a <title> & more" in texts
    assert any(t and t.startswith("ours: p50 0.500 ms") for t in texts)
    with pytest.raises(ValueError, match="no latencies"):
        cdf_svg({"none": []}, "empty")


def test_results_json_keeps_number_lists_on_one_line_and_loads_back_unchanged() -> None:
    from benchmarks.harness.results import to_json

    data = {
        "latencies_ms": [0.25, 1.5, 3, -2e-05],
        "nested": [{"xs": [1, 2]}, "a [1,\n 2] string"],
        "empty": [],
        "nan": [float("nan")],
    }
    text = to_json(data)
    assert '"latencies_ms": [0.25, 1.5, 3, -2e-05]' in text
    assert '"xs": [1, 2]' in text
    loaded = json.loads(text)
    assert loaded["nested"] == data["nested"]
    assert loaded["latencies_ms"] == data["latencies_ms"]
    assert loaded["empty"] == []
    assert math.isnan(loaded["nan"][0])


def test_refuses_to_run_without_mosquitto(tmp_path: Path) -> None:
    done = run_bench("--mosquitto", str(tmp_path / "no-such-mosquitto"), timeout=60)
    assert done.returncode == 2
    assert "mosquitto not found" in done.stderr
    assert "--mosquitto" in done.stderr
    assert not (tmp_path / "latest.json").exists()


def test_refuses_a_port_that_is_in_use() -> None:
    require_mosquitto()  # the port check comes after the binary check
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

    from benchmarks.harness.results import RESULTS_DIR, add_results_arguments, results_dir

    parser = argparse.ArgumentParser()
    add_results_arguments(parser)
    scratch = results_dir(parser.parse_args([]))
    assert scratch.is_dir() and scratch.resolve() != RESULTS_DIR.resolve()
    scratch.rmdir()
    assert results_dir(parser.parse_args(["--update-results"])) == RESULTS_DIR
    assert results_dir(parser.parse_args(["--results-dir", str(tmp_path)])) == tmp_path


def test_the_journal_benchmark_runs_end_to_end_in_small(tmp_path: Path) -> None:
    require_mosquitto()
    report = tmp_path / "journal.md"
    sizes = ["--reps", "1", "--sequential", "5", "--calls", "50", "--inflight", "10"]
    sizes += ["--pending", "20", "--results", str(report)]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.journal", *sizes],
        cwd=ROOT,
        env=uncovered_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = report.read_text()
    assert "| echo p50, ms (5 sequential) |" in text
    assert "Reattach: 20 calls left running in the journal" in text
    assert json.loads(report.with_suffix(".json").read_text())["reattach"]["pending"] == 20

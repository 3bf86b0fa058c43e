"""The conformance runner's baselines and verdicts (``scripts/conformance.py``).

The suite itself runs under ``make test-conformance``; these check, without Node, that
every baseline entry says why, that no tools scenario is excused unless a tool cannot do
what it needs yet, and how the runner reads the suite's results.
"""

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "conformance.py"

NEEDS_A_CALLER = {"tools-call-with-logging", "tools-call-sampling", "tools-call-elicitation"}
"""Tools scenarios a tool cannot pass before it can speak to its caller (a later issue)."""


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_runner", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _check(check_id: str, status: str, message: str = "") -> dict[str, Any]:
    return {"id": check_id, "status": status, "errorMessage": message or None}


def test_every_baseline_entry_has_a_reason_and_no_tools_scenario_is_excused() -> None:
    runner = _load()
    files = sorted((ROOT / "scripts" / "conformance").glob("*.yaml"))
    assert [path.stem for path in files] == sorted(r.key for r in runner.REVISIONS)
    for path in files:
        baseline = runner.read_baseline(path)
        assert baseline, path
        for entry, reason in baseline.items():
            scenario = entry.split(":")[0]
            assert len(reason) > 10, entry
            assert not scenario.startswith("tools-") or scenario in NEEDS_A_CALLER, entry
            assert scenario != "json-schema-2020-12", entry


def test_a_baseline_entry_without_a_reason_is_refused(tmp_path: Path) -> None:
    runner = _load()
    path = tmp_path / "baseline.yaml"
    path.write_text("server:\n  - prompts-list  # no prompts\n  - resources-list\n")
    with pytest.raises(ValueError, match="resources-list has no reason"):
        runner.read_baseline(path)


def test_results_are_read_from_the_suite_output_directory(tmp_path: Path) -> None:
    runner = _load()
    run = tmp_path / "server-tools-call-image-2026-11-25T17-15-40-584Z"
    run.mkdir()
    (run / "checks.json").write_text(json.dumps([_check("tools-call-image", "SUCCESS")]))
    (tmp_path / "stray-file").write_text("")
    assert runner.read_results(tmp_path) == {
        "tools-call-image": [_check("tools-call-image", "SUCCESS")]
    }


def test_each_scenario_gets_a_verdict_from_its_checks_and_the_baseline() -> None:
    runner = _load()
    results = {
        "tools-list": [_check("tools-list", "SUCCESS")],
        "prompts-list": [_check("prompts-list", "FAILURE", "Method not found")],
        "caching": [
            _check("tools-hints", "SUCCESS"),
            _check("prompts-hints", "FAILURE", "no prompts"),
        ],
        "server-stateless": [
            _check("ack", "SUCCESS"),
            _check("logging", "FAILURE", "no logging tool"),
            _check("list-changed", "WARNING", "no notification"),
        ],
        "resources-list": [_check("resources-list", "SUCCESS")],
        "tasks-lifecycle": [_check("greet", "FAILURE", "Unknown tool: greet")],
    }
    baseline = {
        "prompts-list": "prompts: none",
        "caching:prompts-hints": "prompts: none",
        "server-stateless:logging": "not built yet",
        "resources-list": "resources: none",
    }
    outcomes = runner.classify(results, baseline, {"tasks-lifecycle": "extension"})
    verdicts = {o.scenario: (o.verdict, o.passed, o.failed) for o in outcomes}
    assert verdicts == {
        "tools-list": ("pass", 1, 0),
        "prompts-list": ("baselined", 0, 1),
        "caching": ("baselined", 1, 1),
        "server-stateless": ("FAIL", 1, 2),  # a warning fails the baseline as the suite does
        "resources-list": ("STALE", 1, 0),
        "tasks-lifecycle": ("not scored, fails", 0, 1),
    }
    notes = {o.scenario: o.note for o in outcomes}
    assert notes["server-stateless"] == "no notification"  # the failure not excused
    assert notes["prompts-list"] == "prompts: none"
    assert notes["caching"] == "prompts-hints: prompts: none"  # which check, and why
    assert runner.unused_entries({**baseline, "ping": "x"}, outcomes) == ["ping"]


def test_a_baselined_check_that_passes_is_stale_unless_it_also_failed() -> None:
    runner = _load()
    passing = [_check("tools-hints", "SUCCESS"), _check("prompts-hints", "FAILURE")]
    repeated = [_check("prompts-hints", "SUCCESS"), _check("prompts-hints", "FAILURE")]
    entry = {"caching:tools-hints": "x"}
    assert [o.verdict for o in runner.classify({"caching": passing}, entry, {})] == ["STALE"]
    entry = {"caching:prompts-hints": "x"}
    assert [o.verdict for o in runner.classify({"caching": repeated}, entry, {})] == ["baselined"]

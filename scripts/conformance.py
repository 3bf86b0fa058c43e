"""The official MCP conformance suite against ``argentic-tools mcp serve --http``.

    PYTHONPATH=$PWD python scripts/conformance.py                   # both revisions
    PYTHONPATH=$PWD python scripts/conformance.py --only 2026-07-28
    PYTHONPATH=$PWD python scripts/conformance.py --update-results  # rewrite the checked-in report

What ``make test-conformance`` (and so CI) runs. It starts a private mosquitto on a
free loopback port, the suite's test tools as an ordinary tool process
(``tests.support.conformance_tools``) and the HTTP gateway on a free port, waits until
the gateway lists every fixture tool, then runs the suite (npm
``@modelcontextprotocol/conformance``, installed with Node 22 by ``scripts/ensure-npm.sh``)
twice:

- ``handshake``: the ``latest`` release, ``--suite all`` (the handshake era, 2025-11-25
  and before);
- ``2026-07-28``: the 0.2.0-alpha line, ``--requirements 2026-07-28`` (the frozen set that
  revision requires; the suite also runs, without scoring, the extension and pending
  scenarios of that revision).

Each run takes its baseline (``--expected-failures``) from ``scripts/conformance/``: the
scenarios a tool gateway cannot serve (yet), one a line, each with its reason after a
``#``. The suite fails a run on a failure outside the baseline and on a baselined
scenario that passes. The per-scenario results of both runs are written to
``.cache/conformance/report.md`` (``--update-results``: to
``benchmarks/results/conformance.md``), the suite's own files under
``.cache/conformance/<revision>/``. Exits 1 when a run fails.
"""

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from argentic_tools.mcp.bridge.client import connect, list_tools  # noqa: E402
from benchmarks.harness.procs import Child, Children  # noqa: E402
from benchmarks.harness.results import write_report  # noqa: E402
from tests.support.brokers import running_mosquitto  # noqa: E402
from tests.support.conformance_tools import TOOL_NAMES  # noqa: E402

BASELINES = ROOT / "scripts" / "conformance"
WORK = ROOT / ".cache" / "conformance"
RESULTS = ROOT / "benchmarks" / "results" / "conformance.md"
READY_SECONDS = 60.0
"""How long the fixture and the gateway may take to serve every fixture tool."""
GATEWAY = ["--http", "127.0.0.1:0", "--wait", "5"]
"""The gateway's options: HTTP on a free port, tools given 5 s to register."""
SUITE_SECONDS = 300.0
"""Bound on one run of the suite."""


@dataclass
class Revision:
    """One run of the suite: which package, which flags, which baseline."""

    key: str
    package: str
    flags: list[str]
    title: str
    prefix: Path = field(default=Path())

    @property
    def baseline(self) -> Path:
        """The run's ``--expected-failures`` file."""
        return BASELINES / f"{self.key}.yaml"

    @property
    def package_dir(self) -> Path:
        """Where npm put the suite."""
        return self.prefix / "node_modules" / "@modelcontextprotocol" / "conformance"

    @property
    def version(self) -> str:
        """The suite's exact version."""
        return str(json.loads((self.package_dir / "package.json").read_text())["version"])


REVISIONS = [
    Revision("handshake", "latest", ["--suite", "all"], "handshake era (`latest`, `--suite all`)"),
    Revision(
        "2026-07-28",
        "alpha",
        ["--requirements", "2026-07-28"],
        "2026-07-28 (0.2.0-alpha line, `--requirements 2026-07-28`)",
    ),
]

_ENTRY = re.compile(r"^\s*-\s*(?P<entry>[^\s#]+)\s*(?:#\s*(?P<reason>.*\S))?\s*$")


def read_baseline(path: Path) -> dict[str, str]:
    """The entries of a baseline file and their reasons (``- entry  # reason``).

    Raises:
        ValueError: An entry has no reason, or the file is not the suite's format.

    """
    text = path.read_text(encoding="utf-8")
    parsed = yaml.safe_load(text) or {}
    if set(parsed) - {"server"} or not isinstance(parsed.get("server", []), list):
        raise ValueError(f"{path}: expected a 'server:' list of scenarios")
    entries: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = _ENTRY.match(line)
        if match is None:
            continue
        if not match["reason"]:
            raise ValueError(f"{path}:{number}: {match['entry']} has no reason (`# why`)")
        entries[match["entry"]] = match["reason"]
    if sorted(entries) != sorted(map(str, parsed.get("server") or [])):
        raise ValueError(f"{path}: write one entry a line, as `- scenario  # reason`")
    return entries


_RUN_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT[\d-]+Z$")
_FAILED = ("FAILURE", "WARNING")  # the suite's baseline counts a warning as a failure


def read_results(directory: Path) -> dict[str, list[dict[str, Any]]]:
    """Each scenario's checks, from the suite's ``-o`` directory."""
    results: dict[str, list[dict[str, Any]]] = {}
    for run in sorted(directory.iterdir()):
        match = _RUN_DIR.match(run.name)
        checks = run / "checks.json"
        if match and checks.exists():
            results[match["scenario"]] = json.loads(checks.read_text())
    return results


def not_scored(revision: Revision) -> dict[str, str]:
    """Scenarios the requirement set runs without scoring, with the suite's reason."""
    if "--requirements" not in revision.flags:
        return {}
    name = revision.flags[revision.flags.index("--requirements") + 1]
    requirements = yaml.safe_load(
        (revision.package_dir / "requirements" / f"{name}.yaml").read_text()
    )
    return {
        entry["scenario"]: entry["reason"]
        for entry in requirements.get("not_scored", [])
        if entry.get("leg") == "server"
    }


@dataclass
class Outcome:
    """One scenario of one run, as the report shows it."""

    scenario: str
    verdict: str
    passed: int
    failed: int
    note: str


def classify(
    results: dict[str, list[dict[str, Any]]],
    baseline: dict[str, str],
    unscored: dict[str, str],
) -> list[Outcome]:
    """Each scenario's verdict: pass, baselined, FAIL, STALE (baselined, passes), not scored."""
    outcomes = []
    for scenario, checks in results.items():
        failing = [check for check in checks if check.get("status") in _FAILED]
        passed = sum(check.get("status") == "SUCCESS" for check in checks)
        entries = {
            entry: reason
            for entry, reason in baseline.items()
            if entry == scenario or entry.startswith(f"{scenario}:")
        }
        excused = [
            check
            for check in failing
            if scenario in entries or f"{scenario}:{check.get('id')}" in entries
        ]
        first = (failing[0].get("errorMessage") or failing[0].get("id", "")) if failing else ""
        if scenario in unscored:
            verdict = "not scored, " + ("fails" if failing else "passes")
            note = f"{unscored[scenario]}" + (f": {first}" if failing else "")
        elif entries and _stale(checks, scenario, entries):
            verdict, note = "STALE", "baselined but passes: remove it from the baseline"
        elif len(excused) < len(failing):
            unexcused = next(check for check in failing if check not in excused)
            verdict, note = "FAIL", unexcused.get("errorMessage") or unexcused.get("id", "")
        elif failing and scenario in entries:
            verdict, note = "baselined", entries[scenario]
        elif failing:
            verdict = "baselined"
            note = "; ".join(f"{e.split(':', 1)[1]}: {reason}" for e, reason in entries.items())
        else:
            verdict, note = "pass", ""
        outcomes.append(Outcome(scenario, verdict, passed, len(failing), note))
    return outcomes


def unused_entries(baseline: dict[str, str], outcomes: list[Outcome]) -> list[str]:
    """Baseline entries whose scenario did not run (the suite ignores them silently)."""
    ran = {outcome.scenario for outcome in outcomes}
    return [entry for entry in baseline if entry.split(":")[0] not in ran]


def _stale(checks: list[dict[str, Any]], scenario: str, entries: dict[str, str]) -> bool:
    """Whether a baseline entry passed (the suite fails the run then)."""
    failing = {check.get("id") for check in checks if check.get("status") in _FAILED}
    if scenario in entries:
        return not failing
    passing = {check.get("id") for check in checks if check.get("status") == "SUCCESS"}
    return any(f"{scenario}:{check_id}" in entries for check_id in passing - failing)


def report(runs: list[tuple[Revision, list[Outcome], int]], node: str, seconds: float) -> str:
    """The markdown report of both runs."""
    lines = [
        "# MCP conformance suite against `argentic-tools mcp serve --http`",
        "",
        "Written by `make test-conformance UPDATE=1` (`scripts/conformance.py`): the official",
        "suite (npm `@modelcontextprotocol/conformance`) against the gateway, the suite's test",
        "tools served as ordinary tools (`tests/support/conformance_tools.py`) on a private",
        "mosquitto. Baselines, with reasons: `scripts/conformance/*.yaml`.",
        "",
        f"Node {node}; whole run {seconds:.0f} s (broker, tools, gateway, both runs).",
        "",
    ]
    for revision, outcomes, status in runs:
        counts: dict[str, int] = {}
        for outcome in outcomes:
            key = outcome.verdict.split(",")[0]
            counts[key] = counts.get(key, 0) + 1
        summary = ", ".join(f"{count} {verdict}" for verdict, count in counts.items())
        lines += [
            f"## {revision.title}: conformance {revision.version}",
            "",
            f"Exit status {status}; {len(outcomes)} scenarios: {summary}.",
            "",
        ]
        if "not scored" in counts:
            lines += [
                "The requirement set also runs, without scoring and outside any baseline, the",
                "scenarios it does not require: the tasks extension (served by the gateway, see",
                "`docs/mcp.md`, Tasks) and pending ones.",
                "",
            ]
        lines += [
            "| scenario | result | checks passed / failed | note |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {o.scenario} | {o.verdict} | {o.passed} / {o.failed} | {_cell(o.note)} |"
            for o in outcomes
        ]
        lines.append("")
    return "\n".join(lines)


def _cell(text: str) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 400 else text[:399] + "…"


def _output(*command: str) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()  # noqa: S603


def ensure_suites() -> str:
    """Install Node 22 and both suites when missing; return the node executable."""
    script = str(ROOT / "scripts" / "ensure-npm.sh")
    bash = shutil.which("bash") or "/bin/bash"
    node = _output(bash, script, "node")
    lines = _output(bash, script, "conformance").splitlines()
    prefixes = dict(line.split(" ", 1) for line in lines if line)
    for revision in REVISIONS:
        revision.prefix = Path(prefixes[revision.package])
    return node


@contextlib.contextmanager
def served_fleet() -> Iterator[str]:
    """Broker, fixture tools and HTTP gateway, torn down on exit; yields the MCP URL."""
    with running_mosquitto() as broker, Children() as children:
        where = ["--broker", broker.url, "--topic-prefix", f"conformance-{uuid.uuid4().hex[:8]}"]
        tools = children.python("tools", "tests.support.conformance_tools", *where)
        gateway = children.python("gateway", "argentic_tools", "mcp", "serve", *where, *GATEWAY)
        try:
            yield anyio.run(_ready, gateway)
        except BaseException:
            print(f"tools:\n{tools.log_tail()}\ngateway:\n{gateway.log_tail()}", file=sys.stderr)
            raise


async def _ready(gateway: Child) -> str:
    """The gateway's URL, once it lists every fixture tool."""
    await gateway.wait_for_output("listening on", READY_SECONDS)
    found = re.search(r"listening on (http://\S+)", gateway.log_path.read_text())
    assert found is not None
    url = found.group(1)
    missing: set[str] = set(TOOL_NAMES)
    with anyio.move_on_after(READY_SECONDS):
        while missing:
            async with connect(url=url) as client:
                missing -= {tool.name for tool in await list_tools(client)}
            if missing:
                await anyio.sleep(0.2)
        return url
    raise RuntimeError(f"the gateway does not list {sorted(missing)}")


def run_suite(node: str, revision: Revision, url: str) -> int:
    """One run of the suite, its files in ``.cache/conformance/<key>``; its exit status."""
    output = WORK / revision.key
    shutil.rmtree(output, ignore_errors=True)
    output.mkdir(parents=True)
    command = [
        node,
        str(revision.package_dir / "dist" / "index.js"),
        "server",
        "--url",
        url,
        *revision.flags,
    ]
    command += ["--expected-failures", str(revision.baseline), "-o", str(output)]
    print(f"conformance {revision.version}: {' '.join(command[2:])}", flush=True)
    with (WORK / f"{revision.key}.log").open("wb") as log:
        done = subprocess.run(  # noqa: S603
            command, stdout=log, stderr=subprocess.STDOUT, timeout=SUITE_SECONDS, check=False
        )
    text = (WORK / f"{revision.key}.log").read_text(errors="replace")
    print(text[text.find("=== SUMMARY ===") :] if "=== SUMMARY" in text else text[-3000:])
    return done.returncode


def main() -> int:
    """Run the suite at the chosen revisions; write the report; 1 when a run failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=[r.key for r in REVISIONS], help="run one revision")
    parser.add_argument(
        "--update-results", action="store_true", help=f"write the report to {RESULTS}"
    )
    options = parser.parse_args()
    started = time.monotonic()
    node = ensure_suites()
    node_version = _output(node, "--version")
    revisions = [r for r in REVISIONS if options.only in (None, r.key)]
    baselines = {r.key: read_baseline(r.baseline) for r in revisions}
    runs = []
    with served_fleet() as url:
        for revision in revisions:
            status = run_suite(node, revision, url)
            outcomes = classify(
                read_results(WORK / revision.key), baselines[revision.key], not_scored(revision)
            )
            runs.append((revision, outcomes, status))
    problems = []
    for revision, outcomes, status in runs:
        if status:
            problems.append(f"{revision.key}: the suite exited with status {status}")
        problems += [
            f"{revision.key}: baseline entry {entry} names no scenario of the run"
            for entry in unused_entries(baselines[revision.key], outcomes)
        ]
        problems += [
            f"{revision.key}: {o.scenario}: {o.verdict}: {o.note}"
            for o in outcomes
            if o.verdict in ("FAIL", "STALE")
        ]
    text = report(runs, node_version, time.monotonic() - started)
    target = RESULTS if options.update_results else WORK / "report.md"
    write_report(target, text + "\n")
    print(f"report: {target.relative_to(ROOT)}; {time.monotonic() - started:.1f} s in all")
    for problem in problems:
        print(f"conformance: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    os.chdir(ROOT)
    raise SystemExit(main())

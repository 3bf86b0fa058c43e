"""Views and limits of a team gateway's views file, and ``mcp views --explain``."""

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from argentic_tools.mcp.access.limits import LimitExceededError, parse_limits
from argentic_tools.mcp.access.views import Caller, parse_views
from tests.support.brokers import child_env
from tests.support.processes import ROOT

FILE = """
[[view]]
name = "analysts"
scopes = ["tools:read"]
claims = { team = ["data", "bi"] }
allow = ["search_*", "tag:read-only"]
deny = ["search_secrets"]

[[view]]
name = "admins"
subjects = ["admin-*"]
allow = ["*"]

[[limit]]
rate = 2
concurrency = 1

[[limit]]
tools = ["report_*"]
rate = 1
shared = true
"""


def cli(*args: str) -> "subprocess.CompletedProcess[str]":
    """``argentic-tools ARGS``, run to its end."""
    command = [sys.executable, "-m", "argentic_tools", *args]
    return subprocess.run(
        command, cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=60, check=False
    )


ANALYST = Caller("ana", scopes=frozenset({"tools:read"}), claims={"team": "data"})


def test_a_tool_is_in_a_view_when_a_rule_allows_it_and_none_denies_it() -> None:
    views = parse_views(tomllib.loads(FILE))
    assert views.explain(ANALYST, ["search_docs"], ()) == (True, "allowed by analysts (search_*)")
    assert views.explain(ANALYST, ["peek"], ("read-only",)) == (
        True,
        "allowed by analysts (tag:read-only)",
    )
    assert views.explain(ANALYST, ["search_secrets"], ()) == (
        False,
        "denied by analysts (search_secrets)",
    )
    assert views.explain(ANALYST, ["drop_table"], ()) == (False, "no rule allows it")
    # A rule applies only when all its conditions hold.
    outsider = Caller("ana", scopes=frozenset({"tools:read"}), claims={"team": "sales"})
    assert not views.allows(outsider, ["search_docs"], ())
    no_scope = Caller("ana", claims={"team": "data"})
    assert not views.allows(no_scope, ["search_docs"], ())
    assert views.allows(Caller("admin-root"), ["drop_table"], ())
    assert parse_views({"default": "allow"}).allows(Caller("anyone"), ["x"], ())


def test_a_views_file_with_a_mistake_is_refused_with_its_place() -> None:
    with pytest.raises(ValueError, match="view 1: unknown keys"):
        parse_views({"view": [{"allows": ["x"]}]})
    with pytest.raises(ValueError, match="limit 1: give rate, concurrency or both"):
        parse_limits({"limit": [{"tools": ["x"]}]})
    with pytest.raises(ValueError, match="rate must be a positive number"):
        parse_limits({"limit": [{"rate": 0}]})


def test_rate_limits_count_per_client_and_refuse_with_a_retry_hint() -> None:
    now = [0.0]
    limits = parse_limits(tomllib.loads(FILE))
    limits.clock = lambda: now[0]
    ana, bob = Caller("ana"), Caller("bob")
    limits.admit(ana, "echo", ["echo"], ())
    limits.admit(ana, "echo", ["echo"], ())
    with pytest.raises(LimitExceededError, match="2 calls a second for calls, each client") as over:
        limits.admit(ana, "echo", ["echo"], ())
    assert over.value.retry_after == pytest.approx(0.5)
    limits.admit(bob, "echo", ["echo"], ())  # another client's bucket
    now[0] = 0.5
    limits.admit(ana, "echo", ["echo"], ())  # refilled
    # A shared per-tool limit: one report a second for everyone together.
    now[0] = 10.0
    limits.admit(ana, "report_x", ["report_x"], ())
    with pytest.raises(LimitExceededError, match="tool report_x, all clients together"):
        limits.admit(bob, "report_x", ["report_x"], ())


def test_concurrency_limits_hold_a_place_for_the_call() -> None:
    limits = parse_limits(tomllib.loads(FILE))
    ana = Caller("ana")
    with limits.slot(ana, "echo", ["echo"], ()):
        with (
            pytest.raises(LimitExceededError, match="1 call at once"),
            limits.slot(ana, "echo", ["echo"], ()),
        ):
            pass
        with limits.slot(Caller("bob"), "echo", ["echo"], ()):
            pass
    with limits.slot(ana, "echo", ["echo"], ()):
        pass


def test_mcp_views_explain_prints_each_tool_in_or_out_and_why(tmp_path: Path) -> None:
    views = tmp_path / "views.toml"
    views.write_text(FILE, encoding="utf-8")
    explain = ["--explain", "ana", "--scope", "tools:read", "--claim", "team=bi"]
    tools = ["search_docs", "search_secrets", "peek:read-only", "drop_table"]
    done = cli("mcp", "views", "--views", str(views), *explain, *[f"--tool={t}" for t in tools])
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "- drop_table  (no rule allows it)",
        "+ peek  (allowed by analysts (tag:read-only))",
        "+ search_docs  (allowed by analysts (search_*))",
        "- search_secrets  (denied by analysts (search_secrets))",
    ]


def readme_views() -> dict[str, Any]:
    """The views file of the README's section "Serve a team behind OAuth"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Serve a team behind OAuth", 1)[1].split("\n## ", 1)[0]
    fence = "`" * 3
    block = section.split(fence + "toml\n", 1)[1].split(fence, 1)[0]
    return tomllib.loads(block)


def test_the_readme_views_file_means_what_the_readme_says() -> None:
    data = readme_views()
    views, limits = parse_views(data), parse_limits(data)
    ana = Caller("ana", scopes=frozenset({"tools:read"}))
    assert views.allows(ana, ["search_docs"], ())
    assert views.allows(ana, ["weather"], ("read-only",))
    assert not views.allows(ana, ["search_payroll"], ())
    assert not views.allows(Caller("ana"), ["search_docs"], ())  # without the scope
    platform = Caller("root", claims={"groups": ["platform", "ops"]})
    assert views.allows(platform, ["search_payroll"], ())
    limits.clock = lambda: 0.0
    for _ in range(5):
        limits.admit(ana, "search_docs", ["search_docs"], ())
    with pytest.raises(LimitExceededError):
        limits.admit(ana, "search_docs", ["search_docs"], ())
    with (
        limits.slot(ana, "a", ["a"], ()),
        limits.slot(ana, "b", ["b"], ()),
        pytest.raises(LimitExceededError, match="2 calls at once"),
        limits.slot(ana, "c", ["c"], ()),
    ):
        pass


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--auth", "oauth"], "--auth protects the HTTP gateway: add --http HOST:PORT"),
        (["--http", "127.0.0.1:8000", "--auth", "oauth"], "--auth oauth needs --issuer URL"),
        (["--http", "127.0.0.1:0", "--auth", "oauth", "--issuer", "http://127.0.0.1:9"],
         "--auth with port 0: give the gateway's URL with --resource URL"),
        (["--http", "127.0.0.1:8000", "--auth", "keys"], "--auth keys FILE: one key file"),
        (["--http", "127.0.0.1:8000", "--auth", "tokens"], "--auth tokens: expected oauth or keys"),
        (["--views", "/nonexistent/views.toml"], "--views /nonexistent/views.toml: No such file"),
    ],
)  # fmt: skip
def test_mcp_serve_says_what_is_wrong_with_its_team_options(options: list[str], says: str) -> None:
    done = cli("mcp", "serve", "--broker", "mqtt://127.0.0.1:1", *options)
    assert done.returncode != 0
    assert says in done.stderr, done.stderr

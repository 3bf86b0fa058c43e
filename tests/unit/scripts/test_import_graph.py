"""The library's import graph holds its rules, type-only imports included.

The rules and the graph are those of ``scripts/import_graph.py``.
"""

import importlib.util
import itertools
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "import_graph.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_library_has_no_import_cycle_and_short_chains_in_the_caller_side() -> None:
    graph = _load()
    assert graph.problems(graph.graph()) == []


def test_a_cycle_and_a_long_chain_are_reported() -> None:
    graph = _load()
    agent = "argentic_tools._agent"
    chain = [f"{agent}.m{i}" for i in range(8)]
    edges: dict[str, set[str]] = {module: set() for module in chain}
    for upper, lower in itertools.pairwise(chain):
        edges[upper].add(lower)
    edges[f"{agent}.fleet.x"] = {f"{agent}.calls.y"}
    edges[f"{agent}.calls.y"] = set()
    found = graph.problems(edges)
    assert any("a chain of 8 imports" in problem for problem in found)
    assert any("fleet/ never imports calls/" in problem for problem in found)
    edges[chain[-1]].add(chain[0])
    assert any(problem.startswith("import cycle") for problem in graph.problems(edges))


def test_type_only_imports_count() -> None:
    graph = _load()
    root = Path(graph.ROOT)
    definition = root / "argentic_tools" / "_tools" / "hosting" / "watchdog.py"
    modules = set(graph.graph())
    # watchdog names BaseTool only for type checking: the edge is there all the same.
    assert "argentic_tools._tools.definition.definition" in graph.imports_of(definition, modules)

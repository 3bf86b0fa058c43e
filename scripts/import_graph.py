"""The library's import graph, type-only imports included: modules, cycles, longest chains.

    python scripts/import_graph.py            # figures for the library and each side
    python scripts/import_graph.py --check    # exit 1 when a rule below is broken

Rules (``--check``, and ``tests/unit/test_import_graph.py``): no import cycle anywhere
in the library, counting imports under ``if TYPE_CHECKING:`` too (import-linter's
contracts leave those out); inside ``_agent``, no chain of imports longer than
:data:`MAX_AGENT_CHAIN` modules; the caller's call path never passes through
``_agent/fleet`` (nothing in ``fleet/`` imports ``calls/``).
"""

import argparse
import ast
import functools
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "argentic_tools"
MAX_AGENT_CHAIN = 6
"""Modules in the longest import chain allowed inside ``argentic_tools._agent``."""


def module_name(path: Path) -> str:
    """``argentic_tools/_agent/manager.py`` -> ``argentic_tools._agent.manager``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The library's modules ``path`` imports, at run time or for type checking alone."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from . import x`` names a module; ``from .m import x`` names m (or m.x).
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            if target in modules:
                found.add(target)
                break
    found.discard(name)
    return found


def graph(package: str = PACKAGE) -> dict[str, set[str]]:
    """Every module of ``package`` and the modules of it that it imports."""
    paths = sorted((ROOT / package.replace(".", "/")).rglob("*.py"))
    modules = {module_name(path) for path in paths}
    edges = {module_name(path): imports_of(path, modules) for path in paths}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def longest_chain(edges: dict[str, set[str]], within: str) -> list[str]:
    """The longest chain of imports among the modules below ``within`` (packages' faces out)."""
    inside = {
        module
        for module in edges
        if module.startswith(within + ".") and not _is_face(module, edges)
    }

    @functools.cache
    def chain(module: str) -> tuple[str, ...]:
        best: tuple[str, ...] = ()
        for target in edges[module]:
            if target in inside:
                candidate = chain(target)
                if len(candidate) > len(best):
                    best = candidate
        return (module, *best)

    if cycles({m: edges[m] & inside for m in inside}):
        return []  # no longest chain in a cycle: --check reports the cycle
    return list(max((chain(module) for module in sorted(inside)), key=len, default=()))


def _is_face(module: str, edges: dict[str, set[str]]) -> bool:
    """A package's ``__init__`` (it only names the package)."""
    return any(other.startswith(module + ".") for other in edges)


def report(edges: dict[str, set[str]], sides: Iterable[str]) -> list[str]:
    """Lines of figures: modules, cycles and the longest chain, for the library and each side."""
    faces = sum(_is_face(module, edges) for module in edges)
    lines = [
        f"{PACKAGE}: {len(edges) - faces} modules (and {faces} packages), "
        f"{len(cycles(edges))} cycle(s)"
    ]
    for group in cycles(edges):
        lines.append("  cycle: " + " <-> ".join(group))
    whole = longest_chain(edges, PACKAGE)
    lines.append(
        f"  longest chain {len(whole)}: "
        + " -> ".join(m.removeprefix(PACKAGE + ".") for m in whole)
        if whole
        else "  longest chain: none (a cycle has no longest chain)"
    )
    for side in sides:
        members = [m for m in edges if m.startswith(side + ".") and not _is_face(m, edges)]
        longest = longest_chain(edges, side)
        lines.append(
            f"{side}: {len(members)} modules, longest chain {len(longest)}: "
            + " -> ".join(m.removeprefix(side + ".") for m in longest)
        )
    return lines


def problems(edges: dict[str, set[str]]) -> list[str]:
    """What breaks the rules in this module's docstring."""
    found = [f"import cycle: {' <-> '.join(group)}" for group in cycles(edges)]
    agent = f"{PACKAGE}._agent"
    longest = longest_chain(edges, agent)
    if len(longest) > MAX_AGENT_CHAIN:
        found.append(
            f"a chain of {len(longest)} imports inside _agent (at most {MAX_AGENT_CHAIN}): "
            + " -> ".join(longest)
        )
    for module, targets in sorted(edges.items()):
        if module.startswith(f"{agent}.fleet"):
            for target in sorted(targets):
                if target.startswith(f"{agent}.calls"):
                    found.append(f"{module} imports {target}: fleet/ never imports calls/")
    return found


def main() -> int:
    """Print the figures; with --check, the broken rules too (exit 1 if any)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a rule is broken")
    args = parser.parse_args()
    edges = graph()
    sides = [f"{PACKAGE}.{side}" for side in ("_agent", "_tools", "_transport", "_protocol")]
    print("\n".join(report(edges, sides)))
    if args.check:
        broken = problems(edges)
        print("\n".join(broken) if broken else "rules hold")
        return 1 if broken else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

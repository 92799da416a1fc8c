"""The house rules of the source tree, checked from the code's own imports.

``python -m tests.architecture`` prints every breach and exits 1 if there is one;
``tests/test_architecture.py`` runs the same checks in the suite. The rules:

* no import circle between the package's modules (every ``import`` counts, those
  inside functions and under ``TYPE_CHECKING`` too: a circle is a circle);
* the services import the shared code and never each other;
* the engine (everything of ``cerfleet`` but the fleet, the services and the CLI)
  imports neither Kafka nor Spark nor the fleet;
* the compiler reads only the pattern form: no module below the front-ends imports one;
* no front-end imports another;
* modules stay under ``MAX_LINES`` lines, and so do the benchmarks' (``ALSO_SIZED``).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Source folder → the package it is installed as (pyproject.toml's package-dir).
ROOTS = {"shared": "cerfleet", "coordinator": "cerfleet.coordinator", "workers": "cerfleet.workers"}
MAX_LINES = 400
# Over the limit, each with the reason and what will split it; the check fails when one
# of them grows or when one comes back under the limit (then it leaves this table).
OVERSIZE: dict[str, int] = {}
# Outside the package, held to the same size: the benchmarks users run.
ALSO_SIZED = ("benchmarks",)

SERVICES = ("cerfleet.coordinator", "cerfleet.workers")
# Not the engine: they may use Kafka, Spark and the services.
NOT_ENGINE = ("cerfleet.fleet", "cerfleet.cli", *SERVICES)
FRONTENDS = ("cerfleet.ceql", "cerfleet.match_recognize", "cerfleet.spaseq", "cerfleet.rsepql")
# The compiler and evaluator: they may import the pattern form, never a front-end.
COMPILER = ("cerfleet.pattern", "cerfleet.plan", "cerfleet.cea", "cerfleet.evaluation")
HEAVY = ("confluent_kafka", "pyspark", "pyarrow")


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    lines: int
    imports: frozenset[tuple[str, tuple[str, ...]]]  # (module, names taken from it)

    def imported(self, known: dict[str, Module]) -> set[str]:
        """What it imports: ``from a import b`` is ``a.b`` where that is a module of
        the package (a submodule import), else ``a``."""
        out: set[str] = set()
        for base, names in self.imports:
            subs = {f"{base}.{n}" for n in names if f"{base}.{n}" in known}
            out |= subs
            if len(subs) < len(names) or not names:
                out.add(base)
        return out


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO)
    package = ROOTS[rel.parts[0]]
    parts = list(rel.with_suffix("").parts[1:])
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def modules() -> dict[str, Module]:
    found: dict[str, Module] = {}
    for folder in ROOTS:
        for path in sorted((REPO / folder).rglob("*.py")):
            name = _module_name(path)
            text = path.read_text(encoding="utf-8")
            imports = frozenset(_imports(ast.parse(text), name, path.name == "__init__.py"))
            found[name] = Module(name, path, text.count("\n"), imports)
    return found


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[str, tuple[str, ...]]]:
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base, tuple(alias.name for alias in node.names)


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def internal_edges(mods: dict[str, Module]) -> dict[str, set[str]]:
    """Module → the package modules it imports."""
    edges: dict[str, set[str]] = {}
    for mod in mods.values():
        targets = {m for m in mod.imported(mods) if m in mods and m != mod.name}
        # Importing cerfleet.a.b also runs cerfleet/__init__ and cerfleet/a/__init__,
        # but those are not the dependency the author wrote: left out on purpose.
        edges[mod.name] = targets
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def breaches() -> list[str]:
    mods = modules()
    edges = internal_edges(mods)
    out = [f"import circle: {' -> '.join(c)}" for c in circles(edges)]
    for mod in mods.values():
        here = mod.path.relative_to(REPO)
        for imported in sorted(mod.imported(mods)):
            for service in SERVICES:
                other = [s for s in SERVICES if s != service]
                if _within(mod.name, (service,)) and _within(imported, tuple(other)):
                    out.append(f"{here}: the service {service} imports {imported}")
            if not _within(mod.name, NOT_ENGINE) and (
                _within(imported, HEAVY) or _within(imported, NOT_ENGINE)
            ):
                out.append(f"{here}: the engine imports {imported}")
            if _within(mod.name, COMPILER) and _within(imported, FRONTENDS):
                out.append(f"{here}: the compiler imports the front-end {imported}")
            for frontend in FRONTENDS:
                others = tuple(f for f in FRONTENDS if f != frontend)
                if _within(mod.name, (frontend,)) and _within(imported, others):
                    out.append(f"{here}: the front-end {frontend} imports {imported}")
        out += _size_breach(mod.path, mod.lines)
    for folder in ALSO_SIZED:
        for path in sorted((REPO / folder).rglob("*.py")):
            out += _size_breach(path, path.read_text(encoding="utf-8").count("\n"))
    return out


def _size_breach(path: Path, lines: int) -> list[str]:
    here = path.relative_to(REPO)
    allowed = OVERSIZE.get(str(here), MAX_LINES)
    if lines > allowed:
        return [f"{here}: {lines} lines (more than {allowed})"]
    if allowed > MAX_LINES and lines <= MAX_LINES:
        return [f"{here}: {lines} lines now; take it out of OVERSIZE"]
    return []


def main() -> int:
    found = breaches()
    for line in found:
        print(line)
    print(f"{len(modules())} modules, {len(found)} breaches", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())

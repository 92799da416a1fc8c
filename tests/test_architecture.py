"""The source tree keeps its house rules (``tests/architecture.py``)."""

from __future__ import annotations

from tests import architecture


def test_the_tree_keeps_its_house_rules() -> None:
    assert architecture.breaches() == []


def test_a_circle_is_found() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert architecture.circles(edges) == [["a", "b", "c"]]


def test_every_source_package_is_installed() -> None:
    import tomllib

    config = tomllib.loads((architecture.REPO / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {name for name, mod in architecture.modules().items() if mod.path.name == "__init__.py"}
    assert found == listed


def test_a_benchmark_over_the_limit_is_a_breach() -> None:
    path = architecture.REPO / "benchmarks" / "fleet.py"
    assert architecture._size_breach(path, architecture.MAX_LINES) == []
    assert architecture._size_breach(path, architecture.MAX_LINES + 1) == [
        f"benchmarks/fleet.py: {architecture.MAX_LINES + 1} lines (more than 400)"
    ]

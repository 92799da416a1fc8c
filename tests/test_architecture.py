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

"""``cerfleet dev --example`` finds its example files in the installed package (a wheel,
say in a container image), not next to it in a source checkout."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

from cerfleet.fleet.dev import EXAMPLE_FILES, EXAMPLE_PACKAGE, example_files

REPO = Path(__file__).resolve().parents[3]


def test_the_bundled_examples_are_the_repository_examples() -> None:
    with example_files() as paths:
        assert sorted(paths) == sorted(EXAMPLE_FILES)
        for name, path in paths.items():
            # examples/ is what the README runs; the package holds copies for wheels.
            assert path.read_bytes() == (REPO / "examples" / name).read_bytes(), (
                f"{EXAMPLE_PACKAGE}/examples/{name} differs from examples/{name}: copy it over"
            )


def test_the_bundled_examples_are_package_data() -> None:
    # A file no glob matches is there in a source checkout but missing from a wheel.
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"].get(EXAMPLE_PACKAGE, [])
    for name in EXAMPLE_FILES:
        assert any(fnmatch(f"examples/{name}", glob) for glob in globs), name

"""What a newcomer reads first: the README's opening screen runs the example and the
tests, and says what the tests need and how long they take; pytest says where the time
goes."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIRST_SCREEN_LINES = 40


def first_screen() -> str:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    return "\n".join(lines[:FIRST_SCREEN_LINES])


def pytest_addopts() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return shlex.split(config["tool"]["pytest"]["ini_options"]["addopts"])


def test_the_first_screen_has_the_two_commands() -> None:
    screen = first_screen()
    assert "pip install -e . && cerfleet run examples/stock.ceql examples/stock.jsonl" in screen
    assert "pip install -e '.[test]' && python -m pytest" in screen


def test_the_first_screen_says_what_the_tests_need_and_how_long_they_take() -> None:
    screen = " ".join(first_screen().split())
    assert "Java 17 or 21" in screen
    assert "--ignore=tests/workers/backfill" in screen
    assert re.search(r"The whole suite takes about \d+ minutes on 2 cores", screen)


def test_pytest_reports_the_slowest_tests() -> None:
    addopts = pytest_addopts()
    assert any(opt.startswith("--durations=") for opt in addopts)


def test_pytest_runs_on_every_core_with_the_services_tests_in_one_group() -> None:
    """The suite fits CI's hour only in parallel; the tests with brokers, fleets and
    Spark must stay in one pytest worker (``tests/conftest.py``)."""
    addopts = pytest_addopts()
    assert addopts[addopts.index("-n") + 1] == "logical"
    assert addopts[addopts.index("--dist") + 1] == "loadgroup"

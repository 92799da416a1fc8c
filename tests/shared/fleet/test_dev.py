"""``cerfleet dev``: ``--example`` finds its example files in the installed package (a
wheel, say in a container image), not next to it in a source checkout; the fleet it
starts goes down with it, whichever signal ends it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

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


def children_of(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(c) for c in (task / "children").read_text().split())
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait is missing


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_dev_takes_its_fleet_down_on_sigterm_and_sighup(stop: signal.Signals) -> None:
    # A session of its own: signals sent to the dev process reach it alone (not a
    # process group, as Ctrl-C would), and the cleanup below can end every process left.
    dev = subprocess.Popen(
        [sys.executable, "-m", "cerfleet.cli", "dev", "--workers", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    fleet: set[int] = set()
    try:
        assert dev.stdout is not None
        for line in dev.stdout:
            if "stops everything" in line:
                break
        fleet = children_of(dev.pid)
        assert len(fleet) == 2, "a coordinator and a worker"
        dev.send_signal(stop)
        assert dev.wait(30) == 0
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in fleet) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in fleet if alive(pid)], "orphaned fleet processes"
    finally:
        for pid in fleet | {dev.pid}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        dev.wait()

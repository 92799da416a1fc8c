"""The cores of a fleet run's parts: the arithmetic over a window, and the machine's idle
time as ``/proc/stat`` counts it."""

from __future__ import annotations

import os
import time

import pytest

from benchmarks import fleet_cores
from benchmarks.fleet_cores import ROLES, CoresTrace, cores_between

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="Linux /proc only")


def test_cores_are_cpu_seconds_a_second_and_unknown_where_a_reading_is_missing() -> None:
    before = {"coordinator": 1.0, "workers": 10.0, "broker": None, "benchmark": 2.0, "idle": 5.0}
    after = {"coordinator": 1.5, "workers": 13.6, "broker": 4.0, "benchmark": 2.1, "idle": 5.4}
    cores = cores_between(before, after, 2.0)
    assert cores == pytest.approx(
        {"coordinator": 0.25, "workers": 1.8, "benchmark": 0.05, "idle": 0.2} | {"broker": None},
        nan_ok=False,
    )
    assert cores_between(before, after, 0.0) == dict.fromkeys(ROLES)


def test_a_window_widens_to_the_readings_around_it() -> None:
    trace = CoresTrace(None)  # type: ignore[arg-type]  # readings set by hand
    trace.samples = [
        (0.0, {"workers": 0.0}),
        (1.0, {"workers": 1.0}),
        (2.0, {"workers": 3.0}),
        (3.0, {"workers": 5.0}),
    ]
    assert trace.between(1.5, 2.5)["workers"] == pytest.approx(2.0)  # 1.0 → 3.0 s: 4 over 2
    assert trace.between(1.0, 2.0)["workers"] == pytest.approx(2.0)
    assert trace.between(-1.0, 2.0) == {}  # no reading before the window
    assert trace.between(1.0, 4.0) == {}


def test_the_machine_idle_time_grows_by_at_most_its_cores_a_second() -> None:
    a, t0 = fleet_cores.idle_seconds(), time.monotonic()
    time.sleep(0.5)
    b, t1 = fleet_cores.idle_seconds(), time.monotonic()
    assert a is not None and b is not None
    # One tick of slack a core on each side: the counters move by clock ticks.
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert 0 <= b - a <= (os.cpu_count() or 1) * (t1 - t0 + 2 * tick)

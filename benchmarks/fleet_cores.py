"""The cores each part of a fleet run uses, read from ``/proc`` (Linux): the coordinator,
the workers, the broker, this process, and what the machine left idle.

Two workers go faster than one only by the cores one worker leaves idle, less what the
broker and the rest take of them: a throughput run reports each part's cores over the
workers' window, so a run says how much of the machine two workers got, apart from how
fast the machine ran each event (which moves from run to run on a shared host)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from benchmarks.fleet_sampling import around
from benchmarks.process_cpu import cpu_seconds, threads_cpu
from cerfleet.fleet.local_broker import LocalBroker

if TYPE_CHECKING:
    from benchmarks.fleet_processes import FleetRun

# librdkafka's name for the thread that serves its mock cluster.
MOCK_THREAD = "rdk:mock"
ROLES = ("coordinator", "workers", "broker", "benchmark", "idle")


def idle_seconds() -> float | None:
    """The machine's idle CPU seconds since boot, every core's (``/proc/stat``: idle and
    iowait); None without ``/proc``."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    return (int(fields[4]) + int(fields[5])) / os.sysconf("SC_CLK_TCK")


def cpu_now(f: FleetRun) -> dict[str, float | None]:
    """CPU seconds so far of the run's processes: the coordinator, every worker together,
    the broker, this one, and the machine's idle time. The mock's broker is this
    process's ``rdk:mock`` thread, counted as the broker's and not this process's; tansu
    is a process of its own; an external broker is not known."""
    broker = getattr(f.broker, "process", None)
    own = os.times()
    mine = own.user + own.system
    if broker is not None:
        broker_cpu = cpu_seconds(broker.pid)
    elif isinstance(f.broker, LocalBroker):
        broker_cpu = threads_cpu(os.getpid(), MOCK_THREAD)
        mine -= broker_cpu or 0.0
    else:
        broker_cpu = None
    each = [cpu_seconds(w.popen.pid) for w in f.workers]
    return {
        "coordinator": None if f.coordinator is None else cpu_seconds(f.coordinator.popen.pid),
        "workers": None if not each or None in each else sum(x for x in each if x is not None),
        "broker": broker_cpu,
        "benchmark": mine,
        "idle": idle_seconds(),
    }


def cores_between(
    before: dict[str, float | None], after: dict[str, float | None], seconds: float
) -> dict[str, float | None]:
    """Each role's cores from two ``cpu_now`` readings ``seconds`` apart."""
    out: dict[str, float | None] = {}
    for role in ROLES:
        a, b = before.get(role), after.get(role)
        out[role] = None if a is None or b is None or seconds <= 0 else (b - a) / seconds
    return out


class CoresTrace:
    """``cpu_now`` readings over time, and each role's cores over a window."""

    def __init__(self, f: FleetRun) -> None:
        self.f = f
        self.samples: list[tuple[float, dict[str, float | None]]] = []

    def record(self) -> None:
        self.samples.append((time.monotonic(), cpu_now(self.f)))

    def between(self, start: float, end: float) -> dict[str, float | None]:
        """From the last reading at or before ``start`` to the first at or after ``end``
        (the window widened to the readings around it); empty without them."""
        found = around(self.samples, start, end)
        if found is None:
            return {}
        (t0, a), (t1, b) = found
        return cores_between(a, b, t1 - t0)

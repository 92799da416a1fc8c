"""The CPU of processes, read from ``/proc`` (Linux): one process's own, or a process
tree's (a Spark job's JVM and Python workers, summed under the process that launched
them)."""

from __future__ import annotations

import os
import threading
import time

import numpy as np


def _stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command's name; None when the process
    is gone (or there is no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cpu_seconds(pid: int | str) -> float | None:
    """CPU seconds of process ``pid``'s own threads (user and system), or of one thread
    given as ``"PID/task/TID"``; None when it is gone or there is no ``/proc``."""
    fields = _stat(pid)
    if fields is None:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads_cpu(pid: int, name: str) -> float | None:
    """CPU seconds of the threads of process ``pid`` named ``name`` (their ``comm``:
    librdkafka names its threads, ``rdk:mock`` the mock cluster's); None when none is
    found or there is no ``/proc``."""
    total, found = 0.0, False
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() != name:
                    continue
        except OSError:  # the thread ended meanwhile
            continue
        seconds = cpu_seconds(f"{pid}/task/{tid}")
        if seconds is not None:
            total += seconds
            found = True
    return total if found else None


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and every live process under it (the JVM, Spark's Python
    workers): each one's own time and its reaped children's."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        fields = _stat(entry) if entry.isdigit() else None
        if fields is None:  # not a process, or gone meanwhile
            continue
        pid = int(entry)
        parents[pid] = int(fields[1])
        cpu[pid] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    total = 0.0
    for pid, c in cpu.items():
        p = pid
        while p > 1 and p != root:
            p = parents.get(p, 0)
        if p == root:
            total += c
    return total


class CpuSampler:
    """The CPU of a process tree over time, read from ``/proc`` every 0.1 s (Linux)."""

    def __init__(self, root: int) -> None:
        self.samples: list[tuple[float, float]] = []
        self._root = root
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last = 0.0
        while not self._stop.is_set() and os.path.exists(f"/proc/{self._root}"):
            # Never down: a child that has exited but is not yet reaped may be missed once.
            last = max(last, tree_cpu(self._root))
            self.samples.append((time.time(), last))
            self._stop.wait(0.1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def between(self, a: float, b: float) -> float | None:
        """CPU seconds used from wall-clock time ``a`` to ``b`` (interpolated)."""
        if len(self.samples) < 2 or not os.path.isdir("/proc"):
            return None
        times = [t for t, _ in self.samples]
        values = [c for _, c in self.samples]
        return float(np.interp(b, times, values) - np.interp(a, times, values))

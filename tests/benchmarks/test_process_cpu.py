"""The CPU of a process's named threads, read from ``/proc``."""

from __future__ import annotations

import os
import threading
import time

from benchmarks.fleet_cores import MOCK_THREAD
from benchmarks.process_cpu import threads_cpu
from cerfleet.fleet.local_broker import LocalBroker


def _spin(name: str, seconds: float, ready: threading.Event, done: threading.Event) -> None:
    # A thread may rename itself through its own comm file.
    with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as f:
        f.write(name)
    ready.set()
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
    done.wait()


def test_threads_cpu_counts_the_named_threads_only() -> None:
    ready, done = threading.Event(), threading.Event()
    spinner = threading.Thread(target=_spin, args=("cf-spin", 0.3, ready, done))
    spinner.start()
    try:
        ready.wait(5)
        time.sleep(0.05)
        before = threads_cpu(os.getpid(), "cf-spin")
        assert before is not None and before < 0.3
        deadline = time.monotonic() + 10
        while (now := threads_cpu(os.getpid(), "cf-spin") or 0.0) < 0.25:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # This (main) thread's CPU is not in it: it sleeps, and its name differs.
        assert now < 0.3 + 0.05
        assert threads_cpu(os.getpid(), "cf-none") is None
    finally:
        done.set()
        spinner.join()


def test_the_mock_cluster_runs_in_a_thread_of_that_name() -> None:
    # The fleet benchmark counts this thread's CPU as the mock broker's.
    with LocalBroker():
        # The thread names itself once it runs, which may be just after the cluster exists.
        deadline = time.monotonic() + 10
        while threads_cpu(os.getpid(), MOCK_THREAD) is None:
            assert time.monotonic() < deadline, "no thread named " + MOCK_THREAD
            time.sleep(0.05)

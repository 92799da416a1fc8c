"""Runs the fleet's failure tests again and again on one broker and prints a summary.

    python -m tests.fleet_proof --runs 10 --broker tansu

Each run is one pytest session over the tests below (workers joining and leaving in
rounds, SIGKILL x3, a transactional crash, a stalled worker, poison messages). A test
that fails once is a bug or a broker gap to name: the fleet's answers must be exact
every time, not most times.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

TESTS = [
    "test_rebalance_add_two_remove_one",
    "test_workers_join_and_leave_in_rounds",
    "test_sigkill_three_times_loses_and_repeats_nothing",
    "test_transactional_workers_survive_a_crash",
    "test_a_stalled_worker_loses_nothing_and_repeats_only_what_it_was_publishing",
    "test_poison_messages_go_to_the_dead_letter_topic",
]
FILE = "tests/workers/test_fleet.py"


def run_once(broker: str, report: Path) -> dict[str, tuple[str, float, str]]:
    """One pytest session; test name -> (outcome, seconds, first line of the failure)."""
    env = {**os.environ, "CERFLEET_TEST_BROKER": broker}
    selection = " or ".join(TESTS)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            FILE,
            "-k",
            selection,
            f"--junitxml={report}",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    out: dict[str, tuple[str, float, str]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("name", "?")
        seconds = float(case.get("time", 0))
        outcome, why = "passed", ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                why = (
                    (found.get("message") or "").splitlines()[0][:160]
                    if found.get("message")
                    else ""
                )
        out[name] = (outcome, seconds, why)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--broker", choices=["mock", "tansu"], default="tansu")
    args = parser.parse_args()
    totals: dict[str, Counter[str]] = {t: Counter() for t in TESTS}
    times: dict[str, list[float]] = {t: [] for t in TESTS}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            results = run_once(args.broker, Path(tmp) / f"run{i}.xml")
            for name in TESTS:
                outcome, seconds, why = results.get(name, ("missing", 0.0, "not run"))
                totals[name][outcome] += 1
                times[name].append(seconds)
                if outcome != "passed":
                    print(f"run {i + 1}: {name}: {outcome}: {why}", flush=True)
            line = ", ".join(f"{n}={results.get(n, ('missing',))[0]}" for n in TESTS)
            print(
                f"run {i + 1}/{args.runs} ({time.monotonic() - started:.0f} s): {line}", flush=True
            )
    print(f"\nsummary on {args.broker}, {args.runs} runs:")
    bad = 0
    for name in TESTS:
        counts = totals[name]
        bad += args.runs - counts["passed"]
        spread = f"{min(times[name]):.0f}-{max(times[name]):.0f} s"
        print(f"  {name}: {dict(counts)} ({spread} each)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Every ``cerfleet`` command turns a user mistake into one line on stderr and exit code 2.

A missing or unreadable file, a bad flag value, an unreachable broker: each case runs
the real command in a process of its own (librdkafka writes to the process's stderr,
and a traceback is only visible there). The unreachable broker is a closed loopback
port with ``CERFLEET_TIMEOUT=1``, so those cases take about a second.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cerfleet.cli.main import build_parser

REPO = Path(__file__).resolve().parents[3]
QUERY = str(REPO / "examples" / "stock.ceql")
EVENTS = str(REPO / "examples" / "stock.jsonl")
MISSING = "no-such-file.jsonl"
A_DIRECTORY = "."


def closed_port() -> str:
    """A loopback address nothing listens on: connections are refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"127.0.0.1:{port}"


def cases(broker: str, bad_toml: str) -> dict[str, list[str]]:
    no = ["-b", broker]
    return {
        # run
        "run: missing query file": ["run", MISSING, EVENTS],
        "run: query is a directory": ["run", A_DIRECTORY, EVENTS],
        "run: missing event file": ["run", QUERY, MISSING],
        "run: bad --format": ["run", QUERY, EVENTS, "--format", "xml"],
        # explain
        "explain: missing query file": ["explain", MISSING],
        "explain: query is a directory": ["explain", A_DIRECTORY],
        # worker
        "worker: --batch-size not a number": ["worker", "--batch-size", "many", *no],
        "worker: --batch-size below 1": ["worker", "--batch-size", "-1", *no],
        "worker: missing --config": ["worker", "--config", MISSING, *no],
        "worker: -X without a value": ["worker", "-X", "acks", *no],
        # coordinator
        "coordinator: --keyed-partitions 0": ["coordinator", "--keyed-partitions", "0", *no],
        "coordinator: --config not TOML": ["coordinator", "--config", bad_toml, *no],
        # submit
        "submit: missing query file": ["submit", "q", MISSING, "-i", "a", "-o", "b", *no],
        "submit: query is a directory": ["submit", "q", A_DIRECTORY, "-i", "a", "-o", "b", *no],
        "submit: --output-partitions 0": [
            *["submit", "q", QUERY, "-i", "a", "-o", "b", "--output-partitions", "0", *no]
        ],
        "submit: unreachable broker": ["submit", "q", QUERY, "-i", "a", "-o", "b", *no],
        # remove
        "remove: unreachable broker": ["remove", "q", *no],
        "remove: unknown librdkafka property": ["remove", "q", "-X", "no.such.property=1", *no],
        # queries
        "queries: unreachable broker": ["queries", *no],
        "queries: --timeout not a number": ["queries", "--timeout", "soon", *no],
        # produce
        "produce: missing file": ["produce", MISSING, "--topic", "stock", *no],
        "produce: file is a directory": ["produce", A_DIRECTORY, "--topic", "stock", *no],
        "produce: no --topic": ["produce", EVENTS, *no],
        "produce: unreachable broker": ["produce", EVENTS, "--topic", "stock", *no],
        # consume
        "consume: unreachable broker": ["consume", "stock-matches", *no],
        "consume: --idle-timeout below 0": ["consume", "t", "--idle-timeout", "-1", *no],
        "consume: --max not a number": ["consume", "t", "--max", "all", *no],
        # dev
        "dev: --workers 0": ["dev", "--workers", "0"],
        "dev: --metrics-port not a number": ["dev", "--metrics-port", "http"],
        # compact
        "compact: nothing to read": ["compact", "--archive", "out", "--dry-run"],
        "compact: bad --since": [
            *["compact", "--archive", "out", "--topic", "t", "--since", "yesterday", "--dry-run"]
        ],
        # backfill
        "backfill: missing --ceql file": [
            *["backfill", "--ceql", MISSING, "--archive", "a", "--output", "o", "--dry-run"]
        ],
        "backfill: no source": ["backfill", "--ceql", QUERY, "--output", "o", "--dry-run"],
        # no command at all
        "unknown command": ["frobnicate"],
    }


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CERFLEET_", "SPARK", "PYSPARK"))
    }
    env["CERFLEET_TIMEOUT"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "cerfleet.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_walk_covers_every_command() -> None:
    subparsers = next(a for a in build_parser()._actions if a.dest == "command")
    commands = set(getattr(subparsers, "choices", {}))
    walked = {name.split(":")[0] for name in cases("x", "x")}
    assert commands == walked - {"unknown command"}


def test_every_command_reports_a_user_mistake_on_one_line(tmp_path: Path) -> None:
    bad_toml = tmp_path / "settings.toml"
    bad_toml.write_text("bootstrap_servers = [unterminated\n", encoding="utf-8")
    walk = cases(closed_port(), str(bad_toml))
    # Each case is a process of its own, mostly waiting (for the interpreter, or for a
    # refused connection's timeout): four at a time keep the walk near 10 s.
    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = pool.map(lambda a: run_cli(a, tmp_path), walk.values())
        results = dict(zip(walk, outcomes, strict=True))
    failures = []
    for name, result in results.items():
        lines = result.stderr.strip().splitlines()
        if result.returncode != 2 or "Traceback" in result.stderr or len(lines) != 1:
            failures.append(f"{name}: exit {result.returncode}, stderr:\n{result.stderr[-1500:]}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["produce", MISSING, "--topic", "stock"], f"cerfleet: cannot read {MISSING}: "),
        (["run", QUERY, EVENTS, "--format", "xml"], "cerfleet run: argument --format: "),
        (["worker", "--batch-size", "-1"], "cerfleet: invalid settings: batch_size: "),
    ],
)
def test_the_line_says_what_is_wrong(args: list[str], expected: str, tmp_path: Path) -> None:
    result = run_cli([*args, *(["-b", closed_port()] if args[0] != "run" else [])], tmp_path)
    assert result.stderr.startswith(expected), result.stderr

"""Start-up cost: ``cerfleet --help`` builds every subcommand's parser, so registration
must not import the heavy dependencies; ``cerfleet run`` needs the engine, not the fleet.

Asserted on what a fresh interpreter has imported, not on wall-clock time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
HEAVY = ("numpy", "pydantic", "pydantic_settings", "confluent_kafka", "prometheus_client", "lark")
FLEET = ("pydantic", "pydantic_settings", "confluent_kafka", "prometheus_client")

PROBE = """
import contextlib, io, sys
from cerfleet.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
print(code)
print(" ".join(sorted({name.partition(".")[0] for name in sys.modules})))
"""


def imported_by(*argv: str) -> tuple[int, set[str]]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=REPO,
    )
    code, modules = result.stdout.splitlines()
    return int(code), set(modules.split())


def test_help_imports_no_heavy_dependency() -> None:
    code, modules = imported_by("--help")
    assert code == 0
    assert modules.isdisjoint(HEAVY), sorted(modules & set(HEAVY))
    assert "cerfleet" in modules  # the probe did import the command line


def test_every_subcommand_help_is_light_too() -> None:
    for command in ("submit", "consume", "worker", "coordinator", "backfill", "dev"):
        code, modules = imported_by(command, "--help")
        assert code == 0
        assert modules.isdisjoint(HEAVY), (command, sorted(modules & set(HEAVY)))


def test_run_loads_the_engine_but_not_the_fleet() -> None:
    code, modules = imported_by("run", "examples/stock.ceql", "examples/stock.jsonl")
    assert code == 0
    assert "lark" in modules
    assert modules.isdisjoint(FLEET), sorted(modules & set(FLEET))

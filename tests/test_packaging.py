"""What ``pip install .`` puts into site-packages: one top-level package, ``cerfleet``."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.architecture import REPO


def test_the_wheel_installs_only_cerfleet(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(REPO)],
        check=True,
        cwd=tmp_path,
    )
    (wheel,) = tmp_path.glob("cerfleet-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"cerfleet"}
    # The services and the Spark jobs live under it, with the package data.
    for member in (
        "cerfleet/coordinator/router.py",
        "cerfleet/workers/worker.py",
        "cerfleet/workers/backfill/backfill_job.py",
        "cerfleet/fleet/registry.py",
        "cerfleet/pattern/__init__.py",
        "cerfleet/match_recognize/grammar.lark",
        "cerfleet/ceql/grammar.lark",
        "cerfleet/fleet/examples/stock.jsonl",
    ):
        assert member in names

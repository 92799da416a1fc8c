"""``cerfleet run --max-outputs-per-event``: cut, and said so on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from cerfleet.cli.main import main
from tests.shared.cli.test_run import jsonl, output_lines, write


def test_cut_per_event_reported_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = write(tmp_path, "q.ceql", "SELECT * FROM S WHERE A+\n")
    events = write(tmp_path, "e.jsonl", jsonl(*[{"type": "A"}] * 4))
    assert main(["run", "--max-outputs-per-event", "2", query, events]) == 0
    captured = capsys.readouterr()
    assert [line["end"] for line in output_lines(captured.out)] == [0, 1, 1, 2, 2, 3, 3]
    err = captured.err.splitlines()
    assert err[:2] == [
        f"{events}:3: more than 2 complex events end at this event; the rest are not printed",
        f"{events}:4: more than 2 complex events end at this event; the rest are not printed",
    ]
    assert err[-1] == "4 events, 7 complex events, 0 malformed lines skipped, 2 events truncated"
    # Unlimited by default: all 1 + 2 + 4 + 8.
    assert main(["run", query, events]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 15


def test_the_bound_must_be_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = write(tmp_path, "q.ceql", "SELECT * FROM S WHERE A+\n")
    assert main(["run", "--max-outputs-per-event", "0", query, "-"]) == 2
    assert "must be at least 1" in capsys.readouterr().err

"""``cerfleet run`` with a MATCH_RECOGNIZE query: language detection, ``--language``,
its own output rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cerfleet.cli.main import main

QUERY = """SELECT * FROM Ticker MATCH_RECOGNIZE (
  PARTITION BY sym
  MEASURES FIRST(A.price) AS high, LAST(B.price) AS low, MATCH_NUMBER() AS k
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B)
  DEFINE A AS A.price > 10, B AS price < 10
)
"""
# X: 12 5 | 20 1 1 (the second 1 is no A);  Y: 11 3
PRICES = [("X", 12), ("X", 5), ("Y", 11), ("X", 20), ("Y", 3), ("X", 1), ("X", 1)]


def _files(tmp_path: Path) -> tuple[str, str]:
    query = tmp_path / "q.sql"
    query.write_text(QUERY, encoding="utf-8")
    events = tmp_path / "e.jsonl"
    events.write_text(
        "".join(json.dumps({"type": "tick", "sym": s, "price": p}) + "\n" for s, p in PRICES),
        encoding="utf-8",
    )
    return str(query), str(events)


@pytest.mark.parametrize("flags", [[], ["--language", "match_recognize"]])
def test_run_match_recognize(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    query, events = _files(tmp_path)
    assert main(["run", *flags, query, events]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line) for line in captured.out.splitlines()] == [
        {"sym": "X", "high": 12, "low": 5, "k": 1},
        {"sym": "Y", "high": 11, "low": 3, "k": 1},
        {"sym": "X", "high": 20, "low": 1, "k": 2},
    ]
    assert captured.err.splitlines() == ["7 events, 3 complex events, 0 malformed lines skipped"]


def test_run_reports_errors_with_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query, events = _files(tmp_path)
    text = QUERY.replace("(A B)", "(A B+)").replace("B AS price < 10", "D AS price < 10")
    Path(query).write_text(text, encoding="utf-8")
    assert main(["run", query, events]) == 2
    err = capsys.readouterr().err
    assert "line 6, column 29: DEFINE D: D is not a variable of the PATTERN" in err


def test_run_skips_over_variable_length_patterns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The greedy B+ takes every falling price; X's match is final only when its
    # run below 10 stops (the 15), Y's at the end of the input.
    query, events = _files(tmp_path)
    Path(query).write_text(QUERY.replace("(A B)", "(A B+)"), encoding="utf-8")
    rows = [("X", 12), ("X", 5), ("Y", 11), ("X", 4), ("X", 3), ("X", 15), ("Y", 3)]
    lines = [json.dumps({"type": "tick", "sym": s, "price": p}) for s, p in rows]
    lines.insert(3, "{not json")
    Path(events).write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["run", query, events]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line) for line in captured.out.splitlines()] == [
        {"sym": "X", "high": 12, "low": 3, "k": 1},
        {"sym": "Y", "high": 11, "low": 3, "k": 1},
    ]
    err = captured.err.splitlines()
    assert err[-1] == "7 events, 2 complex events, 1 malformed lines skipped"
    assert ":4:" in err[0]  # the malformed line, reported


def test_unknown_language(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query, events = _files(tmp_path)
    assert main(["run", "--language", "cypher", query, events]) == 2
    assert "unknown query language 'cypher'" in capsys.readouterr().err

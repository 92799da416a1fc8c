"""Hand-worked AFTER MATCH SKIP cases over variable-length patterns (the standard's
preferred match from each start row), through ``stream.RowPatternEvaluator`` and the
output stage."""

from __future__ import annotations

from typing import Any

import pytest

from cerfleet.errors import MatchRecognizeError
from cerfleet.match_recognize import selection
from cerfleet.match_recognize.selection import TooManyThreads
from cerfleet.match_recognize.stream import RowPatternEvaluator
from cerfleet.match_recognize.translate import writer


def run(text: str, rows: list[dict[str, Any]]) -> list[tuple[int, tuple[int, ...], Any]]:
    """(row at which the match became final, its positions, its output objects);
    the row after the last is ``len(rows)`` (the end of the input)."""
    ev = RowPatternEvaluator(text)
    write = writer(text, skipping=True)
    out = []
    for i, row in enumerate(rows):
        out += [(i, ce.positions, write.rows(ce)) for ce in ev.process(row)]
    out += [(len(rows), ce.positions, write.rows(ce)) for ce in ev.finish()]
    return out


def ticks(values: list[float], name: str = "X") -> list[dict[str, Any]]:
    return [{"type": "tick", "id": name, "v": v} for v in values]


BULL = """SELECT * FROM Crypto MATCH_RECOGNIZE (
  PARTITION BY id
  MEASURES FIRST(A.v) AS low, LAST(B.v) AS peak, C.v AS dropped, COUNT(B.*) AS rises
  ONE ROW PER MATCH
  AFTER MATCH SKIP {skip}
  PATTERN (A B+ C)
  DEFINE B AS B.v > PREV(B.v), C AS C.v < 0.80 * PREV(C.v)
)"""


def test_bull_runs_past_last_row() -> None:
    # Seed 000's Q1 as a bull run: a rise of any length, then a sudden drop.
    rows = ticks([10, 11, 13, 16, 12, 20, 25, 15])
    got = run(BULL.format(skip="PAST LAST ROW"), rows)
    assert got == [
        (4, (0, 1, 2, 3, 4), [{"id": "X", "low": 10, "peak": 16, "dropped": 12, "rises": 3}]),
        (7, (5, 6, 7), [{"id": "X", "low": 20, "peak": 25, "dropped": 15, "rises": 1}]),
    ]


def test_bull_runs_per_partition() -> None:
    x, y = ticks([10, 11, 13, 16, 12]), ticks([5, 6, 7, 8, 9, 1], "Y")
    rows = [r for pair in zip(x, y, strict=False) for r in pair] + y[len(x) :]
    got = run(BULL.format(skip="PAST LAST ROW"), rows)
    assert [(at, pos, objs[0]["id"], objs[0]["rises"]) for at, pos, objs in got] == [
        (8, (0, 2, 4, 6, 8), "X", 3),
        (10, (1, 3, 5, 7, 9, 10), "Y", 4),
    ]


GREEDY = """SELECT * FROM T MATCH_RECOGNIZE (
  MEASURES COUNT(B.*) AS bs
  ALL ROWS PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B{quant} C)
  DEFINE B AS B.v > PREV(B.v)
)"""


def test_greedy_takes_the_longest_run_not_the_first_match_to_end() -> None:
    # C matches any row, so A B C ends at row 2 already; the standard prefers the
    # most B's, so the match is open until a row breaks the rise (row 5), and C is
    # that row.
    rows = ticks([10, 11, 13, 16, 20, 5, 6])
    got = run(GREEDY.format(quant="+"), rows)
    assert [(at, pos) for at, pos, _ in got] == [(5, (0, 1, 2, 3, 4, 5))]
    assert [o["bs"] for o in got[0][2]] == [0, 1, 2, 3, 4, 4]


def test_reluctant_takes_the_fewest_rows() -> None:
    rows = ticks([10, 11, 13, 16, 20, 5, 6])
    got = run(GREEDY.format(quant="+?"), rows)
    assert [(at, pos) for at, pos, _ in got] == [(2, (0, 1, 2)), (5, (3, 4, 5))]
    assert [o["bs"] for o in got[1][2]] == [0, 1, 1]


def test_skip_to_last_and_first_b() -> None:
    rows = ticks([10, 11, 13, 9, 12, 14, 10])
    past = run(BULL.format(skip="PAST LAST ROW"), rows)
    assert [pos for _, pos, _ in past] == [(0, 1, 2, 3), (4, 5, 6)]
    # After A B B C on rows 0-3 the search resumes at the last B (row 2): no rise
    # from 13 to 9; then at row 3: 9 12 14 10.
    last = run(BULL.format(skip="TO LAST B"), rows)
    assert [pos for _, pos, _ in last] == [(0, 1, 2, 3), (3, 4, 5, 6)]
    first = run(BULL.format(skip="TO FIRST B"), rows)
    assert [pos for _, pos, _ in first] == [(0, 1, 2, 3), (1, 2, 3), (3, 4, 5, 6), (4, 5, 6)]
    # SQL:2016: TO v is TO LAST v.
    assert run(BULL.format(skip="TO B"), rows) == last


def test_skip_to_a_variable_without_a_row_or_to_the_first_row() -> None:
    # The standard's runtime errors resume at the row after the match's first, as
    # TO NEXT ROW: rows 0-1 bind A, not B; rows 1-2 bind B to their first row.
    text = """SELECT * FROM T MATCH_RECOGNIZE (
      MEASURES CLASSIFIER() AS c
      AFTER MATCH SKIP TO LAST B
      PATTERN ((A | B) C)
      DEFINE A AS x = 1, C AS x = 0
    )"""
    rows = [{"type": "t", "x": x} for x in (1, 0, 0)]
    assert [pos for _, pos, _ in run(text, rows)] == [(0, 1), (1, 2)]


def test_a_snapshot_carries_a_pending_match() -> None:
    text = GREEDY.format(quant="+")
    rows = ticks([10, 11, 13, 16, 20, 5, 6])
    ev = RowPatternEvaluator(text)
    assert [ce for r in rows[:4] for ce in ev.process(r)] == []
    again = RowPatternEvaluator.restore(ev.snapshot())
    found = [ce.positions for r in rows[4:] for ce in again.process(r)]
    assert found == [(0, 1, 2, 3, 4, 5)]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "SELECT * FROM T MATCH_RECOGNIZE (PATTERN (A B+)\n DEFINE D AS D.v > A.v)",
            (2, 9),
            "D is not a variable of the PATTERN",
        ),
        (
            "SELECT * FROM T MATCH_RECOGNIZE (AFTER MATCH SKIP TO LAST D PATTERN (A B+))",
            (1, 34),
            "D is not a variable of the PATTERN",
        ),
        (
            "SELECT * FROM T MATCH_RECOGNIZE (ALL MATCHES PATTERN (A B+))",
            (1, 34),
            "ALL MATCHES",
        ),
        (
            "SELECT * FROM T MATCH_RECOGNIZE (PATTERN (A B{2}+))",
            (1, 49),
            "expected '?'",
        ),
    ],
)
def test_refused_with_line_and_column(text: str, where: tuple[int, int], message: str) -> None:
    with pytest.raises(MatchRecognizeError) as caught:
        RowPatternEvaluator(text)
    assert (caught.value.line, caught.value.column) == where
    assert message in str(caught.value)


def test_the_readme_example_runs(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    import sys
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("**Every skip mode over any pattern") :]
    start = section.index("```python") + len("```python")
    code = section[start : section.index("```", start)]
    events = ticks([10, 11, 13, 16, 12, 20, 25, 15])
    exec(code, {"text": BULL.format(skip="PAST LAST ROW"), "events": events, "sys": sys})
    lines = capsysbinary.readouterr().out.splitlines()
    assert lines == [
        b'{"id":"X","low":10,"peak":16,"dropped":12,"rises":3}',
        b'{"id":"X","low":20,"peak":25,"dropped":15,"rises":1}',
    ]


def test_window_ends_a_greedy_run_and_rows_without_a_clock() -> None:
    # WITHIN is part of the pattern: B+ stops growing where the window would be
    # exceeded (C any row after it). A row without an ORDER BY value may sit inside
    # a match but neither start nor end one.
    text = """SELECT * FROM T MATCH_RECOGNIZE (
      ORDER BY ts
      MEASURES COUNT(B.*) AS bs
      AFTER MATCH SKIP PAST LAST ROW
      PATTERN (A B+ C)
      WITHIN INTERVAL '3' SECONDS
      DEFINE B AS v > 0
    )"""
    times = [0, 1000, None, 2000, 3000, 3500, 9000, 9100, 9200]
    values = [0, 1, 1, 1, 1, 1, 0, 1, 0]
    rows = [
        {"type": "t", "v": v, **({} if t is None else {"ts": t})}
        for t, v in zip(times, values, strict=True)
    ]
    got = run(text, rows)
    # From row 0: B on rows 1-3 (row 2 has no clock), C on row 4 (3 s after row 0);
    # row 5 would be 3.5 s. From row 5: B needs v > 0 on row 6 (0): no; from row 6:
    # A, B (row 7), C (row 8).
    assert [(pos, objs[0]["bs"]) for _, pos, objs in got] == [
        ((0, 1, 2, 3, 4), 3),
        ((6, 7, 8), 1),
    ]


def test_rows_without_a_scalar_key_are_in_no_partition() -> None:
    text = BULL.format(skip="PAST LAST ROW")
    rows = ticks([10, 11, 13, 16, 12])
    rows[2:2] = [
        {"type": "tick", "v": 1},
        {"type": "tick", "id": ["X"], "v": 1},
        {"type": "tick", "id": float("nan"), "v": 1},
        {"type": "tick", "id": None, "v": 1},
    ]
    assert [pos for _, pos, _ in run(text, rows)] == [(0, 1, 6, 7, 8)]


CROSS = """SELECT * FROM T MATCH_RECOGNIZE (
  MEASURES COUNT(B.*) AS nb, FIRST(B.v) AS fb, C.v AS c
  AFTER MATCH SKIP {skip}
  PATTERN (A B+ C)
  DEFINE B AS B.v > A.v, C AS C.v < FIRST(B.v)
)"""
# Rows 0..7. From row 0 (A 5) B takes 7 9 6 8 (each above 5) and C the 3 (below
# FIRST(B) = 7): the greedy B+ beats B = 7 9 with C = 6. From 1 (A 7): B = 9, C = 6.
# From 3 (A 6): B = 8, C = 3. From 5 (A 3): B = 10, C = 4, final at the end only
# (B = 10 4 might still end in a C). From 2, 4, 6 no row is above A.
CROSS_ROWS = [5, 7, 9, 6, 8, 3, 10, 4]


@pytest.mark.parametrize(
    ("skip", "want"),
    [
        ("PAST LAST ROW", [((0, 1, 2, 3, 4, 5), 4, 7, 3)]),
        (
            "TO NEXT ROW",
            [
                ((0, 1, 2, 3, 4, 5), 4, 7, 3),
                ((1, 2, 3), 1, 9, 6),
                ((3, 4, 5), 1, 8, 3),
                ((5, 6, 7), 1, 10, 4),
            ],
        ),
    ],
)
def test_defines_reading_other_rows_under_a_skip_mode(
    skip: str, want: list[tuple[tuple[int, ...], int, int, int]]
) -> None:
    text = CROSS.format(skip=skip)
    rows = ticks(CROSS_ROWS)
    found = [(pos, o["nb"], o["fb"], o["c"]) for _, pos, [o] in run(text, rows)]
    assert found == want
    # Snapshotted and restored after any row: the same matches.
    for cut in range(len(rows) + 1):
        ev = RowPatternEvaluator(text)
        got = [ce.positions for r in rows[:cut] for ce in ev.process(r)]
        again = RowPatternEvaluator.restore(ev.snapshot())
        got += [ce.positions for r in rows[cut:] for ce in again.process(r)]
        got += [ce.positions for ce in again.finish()]
        assert got == [w[0] for w in want], cut


def test_too_many_partial_matches_fail_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every row may start a match and each B run is told apart by its A: one thread
    # per start row (no window), beyond the bound (lowered: the test stays quick).
    monkeypatch.setattr(selection, "MAX_THREADS", 50)
    text = (
        "SELECT * FROM T MATCH_RECOGNIZE (AFTER MATCH SKIP TO NEXT ROW PATTERN (A B+ C)"
        " DEFINE B AS B.v > A.v, C AS C.v < 0)"
    )
    ev = RowPatternEvaluator(text)
    with pytest.raises(TooManyThreads, match="more than 50 partial matches"):
        for r in ticks(list(range(100))):
            ev.process(r)

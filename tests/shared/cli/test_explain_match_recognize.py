"""``cerfleet explain`` on MATCH_RECOGNIZE: where each DEFINE conjunct went, the lagged
PREV columns, the partition key, the skip mode and the output stage's cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from cerfleet.cli.main import main


def explain(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    path = tmp_path / "q.sql"
    path.write_text(text, encoding="utf-8")
    assert main(["explain", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    return out[out.index("match_recognize:") :]


def test_each_define_conjunct_is_unary_lagged_or_a_correlation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = explain(
        tmp_path,
        """SELECT * FROM Ticker MATCH_RECOGNIZE (
  PARTITION BY name, desk
  MEASURES FIRST(A.price) AS high
  PATTERN (A B{2} C)
  DEFINE A AS A.price > 10,
         B AS price < PREV(price, 2) AND B.price > 0.5 * A.price
           AND volume
             > 3
)""",
        capsys,
    )
    assert out == [
        "match_recognize:",
        "  rows: ONE ROW PER MATCH",
        "  partition key: name, desk (the fleet routes and keeps MATCH_NUMBER by it)",
        "  DEFINE A:",
        "    unary predicate (in the automaton): A.price > 10",
        "  DEFINE B:",
        "    unary predicate (in the automaton): price < PREV(price, 2)",
        "    unary predicate (in the automaton): volume > 3",
        "    correlation checked during enumeration: B.price > 0.5 * A.price",
        "  DEFINE C: none (any row)",
        "  lagged PREV columns: PREV(price, 2) (kept per partition, read as unary attributes)",
        "  skip: AFTER MATCH SKIP PAST LAST ROW: CONSUME BY PARTITION: a match resets its "
        "partition's runs (constant time), so the next match starts after its last row; "
        "constant time per event (fixed-length pattern)",
        "  output stage: each match's rows are labelled by a search of the row pattern that "
        "checks the correlations on the labels so far: it may try every labelling of a "
        "match's rows; MEASURES over the labelled rows",
    ]


@pytest.mark.parametrize(
    ("clauses", "rows", "skip"),
    [
        ("ALL MATCHES", "ALL MATCHES", "ALL MATCHES: every match (strategy ALL"),
        (
            "ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW",
            "ALL ROWS PER MATCH",
            "AFTER MATCH SKIP TO NEXT ROW: no consumption",
        ),
        ("ONE ROW PER MATCH", "ONE ROW PER MATCH", "AFTER MATCH SKIP PAST LAST ROW: CONSUME BY"),
    ],
)
def test_rows_and_skip_modes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], clauses: str, rows: str, skip: str
) -> None:
    out = explain(
        tmp_path,
        f"SELECT * FROM S MATCH_RECOGNIZE (MEASURES COUNT(*) AS n {clauses} "
        "PATTERN (A B) DEFINE A AS v > 1)",
        capsys,
    )
    assert out[1] == f"  rows: {rows}"
    assert out[2] == "  partition key: (none: one partition, one MATCH_NUMBER sequence)"
    assert "  lagged PREV columns: none" in out
    assert next(line for line in out if line.startswith("  skip: ")).startswith(f"  skip: {skip}")
    assert out[-1] == (
        "  output stage: each match's rows are labelled by a search of the row pattern, "
        "O(pattern states x rows) per match; MEASURES over the labelled rows"
    )


def test_the_generic_lines_count_running_correlations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "q.sql"
    path.write_text(
        "SELECT * FROM S MATCH_RECOGNIZE (PATTERN (A B) DEFINE B AS B.v < A.v)", encoding="utf-8"
    )
    assert main(["explain", str(path), "--language", "match_recognize"]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index(next(line for line in out if line.startswith("correlations checked")))
    assert out[at].startswith("correlations checked at enumeration: 1 ")
    assert out[at + 1] == "  running, at each row bound to B"


def test_a_bad_query_names_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "q.sql"
    path.write_text(
        "SELECT * FROM S MATCH_RECOGNIZE (\n  PATTERN (A B+) DEFINE D AS D.v < A.v\n)",
        encoding="utf-8",
    )
    assert main(["explain", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 2, column 25: DEFINE D: D is not a variable of the PATTERN" in err


def test_a_define_reading_other_rows_under_a_skip_mode_states_its_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "q.sql"
    path.write_text(
        "SELECT * FROM S MATCH_RECOGNIZE (\n  PATTERN (A B+ C)\n"
        "  DEFINE B AS B.v > A.v, C AS C.v < FIRST(B.v)\n)",
        encoding="utf-8",
    )
    assert main(["explain", str(path)]) == 0
    skip = next(line for line in capsys.readouterr().out.splitlines() if "skip: " in line)
    assert "O(states x distinct path summaries) = O(4 x path summaries)" in skip
    assert "at most 10000 threads per partition" in skip


@pytest.mark.parametrize(
    ("window", "per_row"),
    [
        ("", "O(states) = O(4) thread steps per row"),
        (
            "WITHIN INTERVAL '5' SECONDS",
            "O(states x rows in the window) = O(4 x rows in the window) thread steps per row",
        ),
    ],
)
def test_a_skip_mode_over_a_variable_length_pattern_states_the_selection_s_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], window: str, per_row: str
) -> None:
    path = tmp_path / "q.sql"
    path.write_text(
        f"""SELECT * FROM T MATCH_RECOGNIZE (MEASURES COUNT(*) AS n
  AFTER MATCH SKIP TO NEXT ROW PATTERN (A B+? C) {window}
  DEFINE A AS v > 1, C AS v < 0)""",
        encoding="utf-8",
    )
    assert main(["explain", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "strategy: the language's own match selection (see below)" in out
    skip = next(line for line in out if line.startswith("  skip: "))
    assert skip.startswith("  skip: AFTER MATCH SKIP TO NEXT ROW: the standard's preferred match")
    assert per_row in skip
    assert "the rows from the next start row are read again" in skip
    assert not any("EXPONENTIALLY" in line for line in out)

"""``cerfleet explain`` on RSEP-QL queries evaluated at their evaluation times: it
names the evaluation times, the windows, each operator's reading and the
consumption policy instead of an automaton."""

from __future__ import annotations

from pathlib import Path

import pytest

from cerfleet.cli.main import main
from cerfleet.rsepql.describe import describe
from cerfleet.rsepql.parser import parse

QUERY = """PREFIX : <http://e/>
SELECT ?x ?y ?z
FROM NAMED :S WIN [LND 1] AS :w1
FROM NAMED :S WIN [RANGE 100 STEP 4] AS :w2
EVENT ON :w1 { ?x :p ?y . } AS E1
EVENT ON :w2 { ?y :q ?z . FILTER(?z != 3) } AS E2
WHERE { MATCH CONSUMING { FIRST(E1 SEQ^c E2) SEQ^n LAST E1 } }
"""


def test_describe_names_times_windows_operators_and_policy() -> None:
    lines = describe(parse(QUERY))
    assert "evaluation times: window close: every 4 s (<http://e/w2>)" in lines
    assert "  <http://e/w1> on <http://e/S>: LND from 1 s" in lines
    assert "  <http://e/w2> on <http://e/S>: RANGE 100 s STEP 4 s" in lines
    assert "  E2 on <http://e/w2>: 1 triple pattern(s), 1 FILTER" in lines
    assert "event pattern: (FIRST(E1 SEQ^c E2) SEQ^n LAST(E1))" in lines
    ops = [line.split(":")[0].strip() for line in lines if line.startswith("  SEQ")]
    assert ops == ["SEQ^n", "SEQ^c"]
    assert any(line.startswith("  FIRST: Eq. (5)") for line in lines)
    assert any(line.startswith("  LAST: Eq. (6)") for line in lines)
    assert lines[-2].startswith("consumption: CONSUMING (P^c = P^r)")
    plain = describe(parse(QUERY.replace(" STEP 4", "").replace("CONSUMING ", "")))
    assert "evaluation times: content change: every instant of the streams" in plain
    assert plain[-2].startswith("consumption: none")


def test_explain_prints_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "q.rq").write_text(QUERY)
    assert main(["explain", str(tmp_path / "q.rq")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == describe(parse(QUERY))
    # An unrestricted SEQ chain still compiles to an automaton.
    (tmp_path / "q.rq").write_text(
        QUERY.replace(" STEP 4", "")
        .replace("CONSUMING ", "")
        .replace("FIRST(E1 SEQ^c E2) SEQ^n LAST E1", "E1 SEQ E2")
    )
    assert main(["explain", str(tmp_path / "q.rq")]) == 0
    assert capsys.readouterr().out.startswith("automaton: ")
    # With STEP alone: the automaton, and when it reports.
    (tmp_path / "q.rq").write_text(
        QUERY.replace("CONSUMING ", "").replace("FIRST(E1 SEQ^c E2) SEQ^n LAST E1", "E1 SEQ E2")
    )
    assert main(["explain", str(tmp_path / "q.rq")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("automaton: ")
    assert "evaluation times: window close: every 4 s (<http://e/w2>)" in out
    assert out[-1].startswith("reported at: the first close")
    # A refusal keeps its line and column.
    (tmp_path / "q.rq").write_text(QUERY.replace("SEQ^c", "SEQ^k"))
    assert main(["explain", str(tmp_path / "q.rq")]) == 2
    assert "line 7, column 36" in capsys.readouterr().err

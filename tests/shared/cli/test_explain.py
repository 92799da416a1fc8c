"""``cerfleet explain``: a query's automaton, predicates, options and output bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from cerfleet.cli.main import main


def explain(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    path = tmp_path / "q.ceql"
    path.write_text(text, encoding="utf-8")
    assert main(["explain", str(path)]) == 0
    return capsys.readouterr().out.splitlines()


def test_everything_about_an_unbounded_query(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = explain(
        tmp_path,
        "SELECT * FROM S\nWHERE (A ; B+) FILTER A[name LIKE 'x.*'] AND B[price > 3]\n"
        "PARTITION BY [name], [region]",
        capsys,
    )
    assert out[0] == "automaton: 4 states, 7 transitions, 2 atoms"
    assert out[1:4] == ["predicates: 2", "  [0] name LIKE 'x.*'", "  [1] price > 3"]
    assert out[4:11] == [
        "event types: A, B",
        "partition by: name, region",
        "correlations: none (every filter is unary, in the automaton)",
        "window: (none)",
        "strategy: ALL",
        "consume by: NONE",
        "limit: (none)",
    ]
    assert out[11].startswith(
        "output per event: CAN GROW EXPONENTIALLY: an iteration '+' (line 2, column 12) "
        "without WITHIN or LIMIT under the ALL strategy"
    )


@pytest.mark.parametrize(
    ("text", "window", "bound"),
    [
        ("SELECT * FROM S WHERE A ; B", "(none)", "bounded"),
        ("SELECT * FROM S WHERE A ; B+ WITHIN 5 EVENTS", "5 EVENTS", "bounded by the window"),
        ("SELECT * FROM S WHERE A+ WITHIN 2.5 SECONDS", "2.5 SECONDS", "bounded by the window"),
        ("SELECT * FROM S WHERE A+ WITHIN 30 [ts]", "30 [ts]", "bounded by the window"),
        ("SELECT * FROM S WHERE A+ LIMIT 3", "(none)", "bounded"),
        ("SELECT MAX * FROM S WHERE A+", "(none)", "bounded"),
    ],
)
def test_bounded_queries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, window: str, bound: str
) -> None:
    out = explain(tmp_path, text, capsys)
    assert f"window: {window}" in out
    assert out[-1].startswith(f"output per event: {bound}")


def test_a_broken_query_exits_2_with_its_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "q.ceql"
    path.write_text("SELECT * FROM S WHERE A FILTER A[name LIKE '(x)\\\\1']", encoding="utf-8")
    assert main(["explain", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 1, column" in err and "backreference" in err


def test_correlations_say_which_guarantee_applies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = explain(
        tmp_path,
        "SELECT * FROM S WHERE (A AS a ; B+ AS b ; C AS c)\n"
        "FILTER a[k] = b[k] AND b[k] = c[k] AND b[p] > PREV(b)[p] AND a[q > 1]\n"
        "WITHIN 5 SECONDS",
        capsys,
    )
    assert "  [0] q > 1" in out
    assert any(line.startswith("partition keys from equalities: k (") for line in out)
    at = out.index(next(line for line in out if line.startswith("correlations checked")))
    assert out[at].startswith("correlations checked at enumeration: 1 ")
    assert out[at + 1] == "  b[p] > PREV(b)[p]"


def test_rdf_queries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # SPAseq and RSEP-QL are told apart as cerfleet run does; a graph-pattern match
    # is summarised, and RSEP-QL's sliding window before the last event is a correlation.
    spaseq = explain(
        tmp_path,
        "PREFIX p: <http://e/>\nSELECT ?c WITHIN 5 SECONDS FROM STREAM S1 <http://e/s>\n"
        "WHERE { SEQ(A ; B) DEFINE GPM A ON S1 { ?t p:company ?c . ?t p:price ?x . "
        "FILTER(?x > 3) } DEFINE GPM B ON S1 { ?u p:company ?c . } }",
        capsys,
    )
    assert spaseq[2] == "  [0] [GRAPH MATCH on S1: 2 triple pattern(s) FILTER x > 3]"
    assert "window: 5 SECONDS" in spaseq
    rsepql = explain(
        tmp_path,
        "PREFIX : <http://e/>\nSELECT * FROM NAMED :S WIN [RANGE 5] AS :w\n"
        "EVENT ON :w { ?x :p ?y . } AS E1\nEVENT ON :w { ?y :q ?z . } AS E2\n"
        "WHERE { MATCH { E1 SEQ E2 } }",
        capsys,
    )
    assert rsepql[2] == "  [0] [GRAPH MATCH on http://e/S: 1 triple pattern(s)]"
    assert rsepql[6] == "correlations checked at enumeration: 1 (constant time per " + (
        "event; enumeration prunes a branch at its first violation, so a complex event "
        "costs the branches visited, not only its size)"
    )
    assert rsepql[7] == "  E1[timestamp] - E0[timestamp] < 5000"

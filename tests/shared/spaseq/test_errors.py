"""Bad SPAseq queries and bad RDF input: errors name line, column and what was
expected; graphs that are not events are reported and skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from cerfleet.cli.main import main
from cerfleet.errors import CEQLError, EventError, SpaseqError
from cerfleet.languages import detect
from cerfleet.rdf.trig import read_trig
from cerfleet.spaseq.check import parse
from cerfleet.spaseq.syntax import Ref

GOOD = """PREFIX : <http://e/>
SELECT ?h
FROM STREAM S1 <http://e/s1>
WHERE { SEQ(A ; B)
  DEFINE GPM A ON S1 { ?h :pow ?p . }
  DEFINE GPM B ON S1 { ?h :loc ?l . FILTER(?l != ?p) }
}"""


def error_of(text: str) -> SpaseqError:
    with pytest.raises(SpaseqError) as info:
        parse(text)
    assert isinstance(info.value, CEQLError)
    return info.value


def test_good_query_parses() -> None:
    q = parse(GOOD)
    assert [e.bop for e in q.elements] == [Ref("A"), Ref("B")]
    assert q.ops == (";",)
    assert detect(GOOD) == "spaseq"


def test_missing_separator_in_seq() -> None:
    err = error_of(GOOD.replace("SEQ(A ; B)", "SEQ(A B)"))
    assert (err.line, err.column) == (4, 15)
    assert err.expected is not None and "',', ';' or ':'" in err.expected


def test_trailing_comma_in_seq() -> None:
    # Query 4 of the paper prints SEQ (A, B, C,): not accepted.
    err = error_of(GOOD.replace("SEQ(A ; B)", "SEQ(A ; B,)"))
    assert (err.line, err.column) == (4, 19)
    assert err.expected is not None and "a name" in err.expected


def test_undeclared_prefix() -> None:
    err = error_of(GOOD.replace("?h :loc ?l", "?h x:loc ?l"))
    assert (err.line, err.column) == (6, 27)
    assert "undeclared prefix 'x:'" in err.message


def test_unknown_stream() -> None:
    err = error_of(GOOD.replace("GPM B ON S1", "GPM B ON S9"))
    assert (err.line, err.column) == (6, 19)
    assert err.expected == "one of S1"


def test_undefined_gpm() -> None:
    err = error_of(GOOD.replace("SEQ(A ; B)", "SEQ(A ; C)"))
    assert (err.line, err.column) == (4, 17)
    assert "no DEFINE GPM defines" in err.message


def test_filter_reading_a_variable_bound_later() -> None:
    text = GOOD.replace("?h :pow ?p . }", "?h :pow ?p . FILTER(?l > 1) }")
    err = error_of(text)
    assert err.line == 5
    assert "?l" in err.message


def test_kleene_on_a_group_is_a_syntax_error() -> None:
    err = error_of(GOOD.replace("SEQ(A ; B)", "SEQ((A | B)+)"))
    assert (err.line, err.column) == (4, 20)
    assert err.expected is not None and "')'" in err.expected


def test_unexpected_character() -> None:
    err = error_of(GOOD.replace("SELECT ?h", "SELECT ?h @"))
    assert (err.line, err.column) == (2, 11)


def test_graph_without_time_is_reported_and_skipped() -> None:
    events, reports = read_trig(
        b"@prefix t: <https://cerfleet.dev/ns#> .\n"
        b"<http://e/g1> t:time 5 . <http://e/g1> { <http://e/a> <http://e/p> 1 . }\n"
        b"<http://e/g2> { <http://e/a> <http://e/p> 2 . }\n"
        b'<http://e/g3> t:time "soon" . <http://e/g3> { <http://e/a> <http://e/p> 3 . }\n'
        b"@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
        b'<http://e/g4> t:time "2024-05-01T00:00:01Z"^^xsd:dateTime .\n'
        b"<http://e/g4> { <http://e/a> <http://e/p> 4 . }\n"
    )
    assert [(e.name, e.ms) for e in events] == [
        ("http://e/g1", 5000),
        ("http://e/g4", 1714521601000),
    ]
    assert len(reports) == 2
    assert "http://e/g2: no" in reports[0]
    assert "neither an integer number of seconds nor an xsd:dateTime" in reports[1]


def test_not_trig() -> None:
    with pytest.raises(EventError, match="not TriG"):
        read_trig(b"<http://e/g1> { <http://e/a> <http://e/p> }")


def test_a_syntax_error_keeps_the_events_before_it() -> None:
    events, reports = read_trig(
        b"@prefix t: <https://cerfleet.dev/ns#> .\n"
        b"<http://e/g1> t:time 1 . <http://e/g1> { <http://e/a> <http://e/p> 1 . }\n"
        b"<http://e/g2> t:time 2 .\n"
        b"<http://e/g2> { <http://e/a> <http://e/p> 2 . <http://e/a> <http://e/p> }\n"
        b"<http://e/g3> t:time 3 . <http://e/g3> { <http://e/a> <http://e/p> 3 . }\n"
    )
    assert [e.name for e in events] == ["http://e/g1"]
    assert reports[0].startswith("not TriG:") and "rest of the file is skipped" in reports[0]
    assert reports[1] == "graph http://e/g2: cut by the error; skipped"


def test_cli_reports_query_error_and_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = tmp_path / "q.rq"
    q.write_text(GOOD.replace("SEQ(A ; B)", "SEQ(A B)"))
    data = tmp_path / "s.trig"
    data.write_text("")
    assert main(["run", str(q), "--stream", f"S1={data}"]) == 2
    assert "line 4, column 15" in capsys.readouterr().err
    q.write_text(GOOD)
    assert main(["run", str(q), "--stream", f"S2={data}"]) == 2
    assert "stream S2 is not declared" in capsys.readouterr().err
    assert main(["run", str(q), "--stream", "S1"]) == 2
    assert "expected NAME=FILE" in capsys.readouterr().err

"""RSEP-QL errors name line, column and what was expected (or why not supported), and
``cerfleet run`` finds the language by itself or by ``--language rsepql``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cerfleet.cli.main import main
from cerfleet.errors import RsepqlError
from cerfleet.languages import detect
from cerfleet.rsepql.parser import parse

GOOD = """PREFIX : <http://e/>
SELECT ?x ?z
FROM NAMED :S WIN [RANGE 5] AS :w
EVENT ON :w { ?x :p ?y . } AS E1
EVENT ON :w { ?y :q ?z . FILTER(?z != 3) } AS E2
WHERE { MATCH { E1 SEQ E2 } }
"""


def _at(text: str, old: str, new: str) -> RsepqlError:
    with pytest.raises(RsepqlError) as caught:
        parse(text.replace(old, new))
    return caught.value


def test_syntax_error_names_line_column_and_expected() -> None:
    err = _at(GOOD, "MATCH { E1 SEQ E2 }", "MATCH { E1 E2 }")
    assert (err.line, err.column) == (6, 20)
    assert err.expected is not None and "SEQ" in err.expected


def test_undefined_names() -> None:
    err = _at(GOOD, "E1 SEQ E2 }", "E1 SEQ E3 }")
    assert "E3" in err.message and err.line == 6
    err = _at(GOOD, "EVENT ON :w { ?x", "EVENT ON :v { ?x")
    assert "no FROM NAMED declares" in err.message and err.line == 4
    err = _at(GOOD, "PREFIX : <http://e/>", "")
    assert "undeclared prefix" in err.message


def test_filter_across_events_is_refused() -> None:
    err = _at(GOOD, "FILTER(?z != 3)", "FILTER(?z != ?x)")
    assert err.line == 5 and "?x" in err.message


def test_policy_and_step_syntax() -> None:
    q = parse(
        GOOD.replace("RANGE 5]", "RANGE 1 MINUTES STEP 30]").replace(
            "MATCH { E1 SEQ E2 }", "MATCH CONSUMING { FIRST (E1 SEQ^c LAST E2) SEQ^N E1 }"
        )
    )
    assert q.windows["http://e/w"].step_ms == 30_000 and q.consuming
    assert q.chain == ("E1", "E2", "E1") and q.per_evaluation()
    assert not parse(GOOD).per_evaluation()
    err = _at(GOOD, "RANGE 5]", "RANGE 5 STEP 0]")
    assert (err.line, err.column) == (3, 28) and "positive" in err.message
    err = _at(GOOD, "RANGE 5]", "LND 5 STEP 1]")
    assert err.line == 3 and err.expected is not None and "']'" in err.expected
    err = _at(GOOD, "MATCH { E1 SEQ E2 }", "MATCH { FIRST }")
    assert (err.line, err.column) == (6, 23)


def test_window_units() -> None:
    q = parse(GOOD.replace("RANGE 5", "RANGE 2 MINUTES"))
    assert q.windows["http://e/w"].ms == 120_000
    assert parse(GOOD.replace("[RANGE 5]", "[LND 3]")).windows["http://e/w"].ms == 3000


def test_cli_detects_rsepql_and_takes_language(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert detect(GOOD) == "rsepql"
    (tmp_path / "q.rq").write_text(GOOD)
    (tmp_path / "s.trig").write_text(
        "@prefix : <http://e/> .\n@prefix t: <https://cerfleet.dev/ns#> .\n"
        ":g1 t:time 1 . :g2 t:time 3 . :g3 t:time 9 .\n"
        ":g1 { :a :p :b . } :g2 { :b :q 4 . } :g3 { :b :q 5 . }\n"
    )
    for extra in ([], ["--language", "rsepql"]):
        args = ["run", str(tmp_path / "q.rq"), "--stream", f"S={tmp_path / 's.trig'}"]
        assert main([*args, *extra, "--quiet"]) == 0
        out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        # 9 - 1 < 5 fails: the item at 1 has left E1's 5-second window by 9.
        assert out == [{"x": "http://e/a", "z": 4, "time": 3}]
    bad = tmp_path / "bad.rq"
    bad.write_text(GOOD.replace("E1 SEQ E2", "E1 SEQ^q E2"))
    assert main(["run", str(bad), "--stream", f"S={tmp_path / 's.trig'}"]) == 2
    err = capsys.readouterr().err
    assert "line 6, column 20" in err and "unknown SEQ policy" in err

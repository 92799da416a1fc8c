"""Seed 003's worked examples through ``cerfleet run`` on a TriG file.

The running example's stream (Figure 1 is missing from the text; the research notes
reconstruct it from Examples 5–11): (G1,2) :a1 :p :b1; (G2,4) :a2 :p :b2;
(G3,6) :b1 :q :c1, :b2 :q :c2; (G4,8) :b2 :q :c2; (G5,10) :a3 :p :b3, :b1 :q :c1.
Windows take Example 3's parameters (W1 landmark from 1, W2 sliding of width 5 by
1; Example 4's query prints LND 9 and RANGE 5, the notes' erratum). Results are
pushed at each instant (content change), each once, ``time`` the end of its interval.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.shared.rsepql.oracle import Bep, Query, Win, evaluate, interval, nest, window_function

E = "http://e/"
STREAM = """@prefix : <http://e/> .
@prefix t: <https://cerfleet.dev/ns#> .
:G1 t:time 2 . :G2 t:time 4 . :G3 t:time 6 . :G4 t:time 8 . :G5 t:time 10 .
:G1 { :a1 :p :b1 . }
:G2 { :a2 :p :b2 . }
:G3 { :b1 :q :c1 . :b2 :q :c2 . }
:G4 { :b2 :q :c2 . }
:G5 { :a3 :p :b3 . :b1 :q :c1 . }
"""
# STREAM's events as the oracle reads them: (time, triples).
GRAPHS = [
    (2, frozenset({(E + "a1", E + "p", E + "b1")})),
    (4, frozenset({(E + "a2", E + "p", E + "b2")})),
    (6, frozenset({(E + "b1", E + "q", E + "c1"), (E + "b2", E + "q", E + "c2")})),
    (8, frozenset({(E + "b2", E + "q", E + "c2")})),
    (10, frozenset({(E + "a3", E + "p", E + "b3"), (E + "b1", E + "q", E + "c1")})),
]
HEAD = """PREFIX : <http://e/>
SELECT {select}
FROM NAMED :S WIN [LND 1] AS :w1
FROM NAMED :S WIN [RANGE 5] AS :w2
FROM NAMED :S AS :wid
"""


def run(tmp_path: Path, query: str) -> list[dict[str, Any]]:
    (tmp_path / "q.rq").write_text(query)
    (tmp_path / "s.trig").write_text(STREAM)
    done = subprocess.run(
        [
            sys.executable,
            *("-m", "cerfleet.cli", "run", str(tmp_path / "q.rq")),
            *("--stream", f"S={tmp_path / 's.trig'}", "--quiet"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def rows(out: list[dict[str, Any]], *names: str) -> list[tuple[Any, ...]]:
    return [tuple(r[n][len(E) :] if n != "time" else r[n] for n in names) for r in out]


SEQ_QUERY = (
    HEAD.format(select="?x ?y ?z")
    + """EVENT ON :w1 { ?x :p ?y . } AS E1
EVENT ON :w2 { ?y :q ?z . } AS E2
WHERE { MATCH { E1 SEQ E2 } }
"""
)


def test_example_8_unrestricted_seq(tmp_path: Path) -> None:
    # At t = 8: ({a1,b1,c1},2,6), ({a2,b2,c2},4,6), ({a2,b2,c2},4,8) (the notes correct
    # the printed (6,8) to (4,8)); at 10 the one new result ({a1,b1,c1},2,10) — §2's
    # "unrestricted returns e1, e2, e3 at 8 and e4 at 10".
    out = run(tmp_path, SEQ_QUERY)
    assert rows(out, "x", "y", "z", "time") == [
        ("a1", "b1", "c1", 6),
        ("a2", "b2", "c2", 6),
        ("a2", "b2", "c2", 8),
        ("a1", "b1", "c1", 10),
    ]


def test_example_9_match_at_8(tmp_path: Path) -> None:
    # MATCH drops the intervals: at 8, {?x→a_i, ?y→b_i, ?z→c_i | i = 1, 2}.
    out = run(tmp_path, SEQ_QUERY)
    at_8 = {(r["x"], r["y"], r["z"]) for r in out if r["time"] <= 8}
    assert at_8 == {(E + "a1", E + "b1", E + "c1"), (E + "a2", E + "b2", E + "c2")}


def test_example_7_event_on_the_identity_window(tmp_path: Path) -> None:
    # ⟦E2⟧^8 with W^id = {(μ2,6,6), (μ'2,6,6), (μ'2,8,8)}; then (μ2,10,10) at 10.
    query = HEAD.format(select="?y ?z") + "EVENT ON :wid { ?y :q ?z . } AS E2\n"
    out = run(tmp_path, query + "WHERE { MATCH { E2 } }\n")
    assert rows(out, "y", "z", "time") == [
        ("b1", "c1", 6),
        ("b2", "c2", 6),
        ("b2", "c2", 8),
        ("b1", "c1", 10),
    ]


def test_example_2_windows_seen_through_seq(tmp_path: Path) -> None:
    # Example 2: W^λ[(1)](S,8) = G1..G4, W^τ[(5,1)](S,8) = G2, G3, G4. Which items an
    # event on each window pairs with the item at 8 (strictly before it, Eq. (7)):
    # landmark G1, G2, G3; sliding G2, G3 (G1 at 2 is out: 8 − 5 < 2 fails).
    for window, times in (("w1", [2, 4, 6]), ("w2", [4, 6])):
        query = (
            HEAD.format(select="?s ?t")
            + f"EVENT ON :{window} {{ ?s ?p ?o . }} AS E1\n"
            + "EVENT ON :wid { ?t :q :c2 . } AS E2\n"
            + "WHERE { MATCH { E1 SEQ E2 } }\n"
        )
        out = [r for r in run(tmp_path, query) if r["time"] == 8]
        starts = {r["s"] for r in out}
        assert starts == {E + s for s, t in _subjects().items() if t in times}, window


def _subjects() -> dict[str, int]:
    return {"a1": 2, "a2": 4, "b1": 6, "b2": 6}


def test_example_2_window_functions_in_the_oracle() -> None:
    # The oracle's windows against Example 2's printed contents.
    items = [(frozenset(), t, "S") for t in (2, 4, 6, 8, 10)]
    lnd = window_function(Win("S", "landmark", 1))
    rng = window_function(Win("S", "range", 5))
    assert [t for _, t, _ in lnd(items[:4], 8)] == [2, 4, 6, 8]
    assert [t for _, t, _ in rng(items[:4], 8)] == [4, 6, 8]
    assert [t for _, t, _ in nest(interval(0, 5), lnd)(items[:4], 8)] == [2, 4]


def test_oracle_on_example_8() -> None:
    q = Query(
        {"w1": Win("S", "landmark", 1), "w2": Win("S", "range", 5)},
        {
            "E1": Bep("w1", (("?x", E + "p", "?y"),)),
            "E2": Bep("w2", (("?y", E + "q", "?z"),)),
        },
        ("SEQ", "E1", "E2"),
        ["x", "z"],
    )
    got = evaluate(q, {"S": GRAPHS})
    assert got == {
        (6, (("x", E + "a1"), ("z", E + "c1"))),
        (6, (("x", E + "a2"), ("z", E + "c2"))),
        (8, (("x", E + "a2"), ("z", E + "c2"))),
        (10, (("x", E + "a1"), ("z", E + "c1"))),
    }


@pytest.mark.parametrize(
    ("fragment", "where", "why"),
    [
        ("MATCH { E1 SEQ^x E2 }", "SEQ^x", "unknown SEQ policy"),
        ("MATCH { E1 AND E2 }", "AND", "no conjunction"),
        ("MATCH { E1 OR E2 }", "OR", "no disjunction"),
        ("EVENT ON ?w", "?w", "variable window"),
    ],
)
def test_unsupported_is_refused_with_its_place(fragment: str, where: str, why: str) -> None:
    from cerfleet.errors import RsepqlError
    from cerfleet.rsepql.parser import parse

    base = SEQ_QUERY.replace("WIN [RANGE 5]", "WIN [RANGE 5]")
    if fragment.startswith("WIN"):
        text = base.replace("WIN [RANGE 5]", fragment)
    elif fragment.startswith("EVENT"):
        text = base.replace("EVENT ON :w1", fragment)
    else:
        text = base.replace("MATCH { E1 SEQ E2 }", fragment)
    with pytest.raises(RsepqlError) as caught:
        parse(text)
    err = caught.value
    line = text.splitlines()[err.line - 1]
    assert line[err.column - 1 :].startswith(where), (line, err.column)
    assert why in err.message

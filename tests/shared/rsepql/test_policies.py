"""Seed 003's Examples 10 and 11 (selection and consumption policies, FIRST/LAST) and
STEP windows through ``cerfleet run`` on the running example's TriG stream.

The paper evaluates Examples 10 and 11 at t = 8 and, in §2, at 8 and 10. Here E2's
window is ``RANGE 100 STEP 4`` — wide enough to hold the whole stream, so at 8 it is
W^id's content as in the examples — and its closes 4, 8, 12 are the evaluation times
(window close): the evaluation at 8 is the examples' own, and the one at 12 sees G5
as the paper's second evaluation at 10 does. Expected results are worked by hand
from Eqs. (5)–(11) and Appendix A with the research notes' errata.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cerfleet.cli.rdf_run import rsepql_evaluations
from cerfleet.errors import RsepqlError
from cerfleet.rdf.trig import read_trig
from cerfleet.rsepql.translate import parse_and_check
from tests.shared.rsepql.oracle import Bep, Query, Win, evaluations
from tests.shared.rsepql.test_examples import GRAPHS, HEAD, STREAM, E, run

EVENTS = """EVENT ON :w1 { ?x :p ?y . } AS E1
EVENT ON :w2 { ?y :q ?z . } AS E2
"""


def query(match: str, w2: str = "[RANGE 100 STEP 4]", consuming: bool = False) -> str:
    head = HEAD.format(select="?x ?y ?z").replace("[RANGE 5]", w2)
    return head + EVENTS + f"WHERE {{ MATCH {'CONSUMING ' if consuming else ''}{{ {match} }} }}\n"


def reported(text: str, tmp_path: Path | None = None) -> list[tuple[int, str, str, str, int]]:
    """(evaluation time in s, x, y, z, end of the event mapping); with ``tmp_path``,
    also through ``cerfleet run`` on a TriG file, which must print the same rows in
    the same order (its rows do not carry the evaluation time)."""
    events, _ = read_trig(STREAM.encode())
    got = [
        (at // 1000, r["x"][len(E) :], r["y"][len(E) :], r["z"][len(E) :], r["time"])
        for at, r in rsepql_evaluations(text, [("S", events)])
    ]
    if tmp_path is not None:
        printed = [tuple(r[k] for k in ("x", "y", "z", "time")) for r in run(tmp_path, text)]
        assert printed == [(E + x, E + y, E + z, t) for _, x, y, z, t in got]
    return got


def test_example_10_naive_seq_at_8(tmp_path: Path) -> None:
    # SEQ^n at 8: LAST E1 = (a2 b2, 4, 4) (landmark from 1: G1, G2), LAST E2 =
    # (b2 c2, 8, 8); (4,4) ≺ (8,8) and compatible: ({a2,b2,c2}, 4, 8). At 12 LAST E1 is
    # (a3 b3, 10) and LAST E2 (b1 c1, 10): not ≺, no result (§2: C-SPARQL has no
    # output at 10).
    assert reported(query("E1 SEQ^n E2"), tmp_path) == [(8, "a2", "b2", "c2", 8)]


def test_example_10_chronological_at_8(tmp_path: Path) -> None:
    # SEQ^c at 8: the E2 mappings with a compatible E1 before them are (b1c1,6,6),
    # (b2c2,6,6), (b2c2,8,8); the ≺-least are both at 6, each with FIRST of its E1:
    # ({a1,b1,c1},2,6), ({a2,b2,c2},4,6). Without consumption the least stay at 6 by
    # 12: nothing new.
    assert reported(query("E1 SEQ^c E2"), tmp_path) == [
        (8, "a1", "b1", "c1", 6),
        (8, "a2", "b2", "c2", 6),
    ]


def test_example_10_recent_at_8_follows_eq_11(tmp_path: Path) -> None:
    # SEQ^r at 8 by Eq. (11): the ≺-greatest E2 mapping with a compatible E1 is
    # (b2c2,8,8) alone, with LAST of its E1 (a2 at 4): ({a2,b2,c2},4,8). The paper
    # prints a second row ({a1,b1,c1},2,6), which Eq. (11) excludes (the notes'
    # erratum). At 12 the greatest is (b1c1,10,10) with a1 at 2: ({a1,b1,c1},2,10).
    assert reported(query("E1 SEQ^r E2"), tmp_path) == [
        (8, "a2", "b2", "c2", 8),
        (12, "a1", "b1", "c1", 10),
    ]


def test_example_11_chronological_consumes(tmp_path: Path) -> None:
    # Example 11: the same two rows at 8; P^c consumes their justifications (G1, G2,
    # G3's triples), so at 12 neither (b2c2,8) nor (b1c1,10) has an E1 left: no row
    # (the paper: "no event ... is produced" at 10).
    got = reported(query("E1 SEQ^c E2", consuming=True), tmp_path)
    assert got == [(8, "a1", "b1", "c1", 6), (8, "a2", "b2", "c2", 6)]


def test_recent_consumes_what_it_used(tmp_path: Path) -> None:
    # SEQ^r at 8 uses a2 (G2) and b2c2 (G4); a1 stays, so at 12 (b1c1,10) pairs
    # with it. (The paper's §2 says recent returns nothing at 10 because a1 was
    # consumed at 8, which follows from its printed Example 10, not from Eq. (11).)
    got = reported(query("E1 SEQ^r E2", consuming=True), tmp_path)
    assert got == [(8, "a2", "b2", "c2", 8), (12, "a1", "b1", "c1", 10)]


def test_unrestricted_with_consumption_content_change(tmp_path: Path) -> None:
    # EP-SPARQL's evaluation at every item (no STEP): at 6 both pairs; consuming
    # G1–G3 leaves (b2c2,8) and (b1c1,10) without an E1: §2's "both chronological
    # and recent do not return any event at 10".
    for seq in ("SEQ", "SEQ^c", "SEQ^r"):
        got = reported(query(f"E1 {seq} E2", "[RANGE 5]", consuming=True), tmp_path)
        assert got == [(6, "a1", "b1", "c1", 6), (6, "a2", "b2", "c2", 6)], seq


def test_section_2_c_sparql(tmp_path: Path) -> None:
    # §2: C-SPARQL with a window of width 7 "outputs e3 at time 8 and has no output at
    # 10 ... it considers only the two triples (:b1 :q :c1) and (:a3 :p :b3)". Table 1:
    # W^τ + SEQ^n. With STEP 2 the closes are 2, 4, …, 10: at 8 the window (1, 8]
    # has LAST E1 = a2 at 4 and LAST E2 = b2c2 at 8: e3 = ({a2,b2,c2},4,8); at 10,
    # (3, 10] has LAST E1 = a3 at 10 and LAST E2 = b1c1 at 10, not in order: nothing.
    # (The close at 6, which the paper does not evaluate, pairs a2 with b2c2 at 6.)
    text = HEAD.format(select="?x ?y ?z").replace("[RANGE 5]", "[RANGE 7 STEP 2]")
    text += EVENTS.replace(":w1", ":w2") + "WHERE { MATCH { E1 SEQ^n E2 } }\n"
    got = reported(text, tmp_path)
    assert got == [(6, "a2", "b2", "c2", 6), (8, "a2", "b2", "c2", 8)]


def test_first_and_last() -> None:
    # FIRST E2 over W^id: the ≺-least E2 mappings, both at 6; reported at 8 (the first
    # close that has them), never again. LAST E2: at 4 none, at 8 (b2c2,8), at 12
    # (b1c1,10).
    head = HEAD.format(select="?y ?z").replace("[RANGE 5]", "[RANGE 100 STEP 4]")
    ev = "EVENT ON :w2 { ?y :q ?z . } AS E2\n"
    events, _ = read_trig(STREAM.encode())
    for which, want in (
        ("FIRST", [(8, "b1", "c1", 6), (8, "b2", "c2", 6)]),
        ("LAST", [(8, "b2", "c2", 8), (12, "b1", "c1", 10)]),
    ):
        text = head + ev + f"WHERE {{ MATCH {{ {which}(E2) }} }}\n"
        got = [
            (at // 1000, r["y"][len(E) :], r["z"][len(E) :], r["time"])
            for at, r in rsepql_evaluations(text, [("S", events)])
        ]
        assert got == want, which


def test_step_window_reports_at_its_closes(tmp_path: Path) -> None:
    # Both events on W^τ (5, 4): its closes 4, 8, 12 are the evaluation times. At 4 it
    # holds (−1, 4] = G1, G2: no E2. At 8, (3, 8] = G2, G3, G4: a1 (at 2) has left,
    # so ({a2,b2,c2},4,6) and (4,8) only. At 12, (7, 12] = G4, G5: no E1 before an E2.
    # Sliding by the time unit instead, the evaluation at 6 sees (1, 6] and pairs a1.
    def body(win: str) -> str:
        text = HEAD.format(select="?x ?y ?z").replace("[RANGE 5]", win)
        return text + EVENTS.replace(":w1", ":w2") + "WHERE { MATCH { E1 SEQ E2 } }\n"

    out = run(tmp_path, body("[RANGE 5 STEP 4]"))
    assert [(r["x"][len(E) :], r["time"]) for r in out] == [("a2", 6), ("a2", 8)]
    assert [(at, x, t) for at, x, _, _, t in reported(body("[RANGE 5 STEP 4]"))] == [
        (8, "a2", 6),
        (8, "a2", 8),
    ]
    out = run(tmp_path, body("[RANGE 5]"))
    assert [(r["x"][len(E) :], r["time"]) for r in out] == [("a1", 6), ("a2", 6), ("a2", 8)]


def test_oracle_agrees_on_example_11() -> None:
    q = Query(
        {"w1": Win("S", "landmark", 1), "w2": Win("S", "range", 100, 4)},
        {"E1": Bep("w1", (("?x", E + "p", "?y"),)), "E2": Bep("w2", (("?y", E + "q", "?z"),))},
        ("SEQ^c", "E1", "E2"),
        ["x"],
        consuming=True,
    )
    got = evaluations(q, {"S": GRAPHS})
    assert got == {(8, 6, (("x", E + "a1"),)), (8, 6, (("x", E + "a2"),))}


@pytest.mark.parametrize(
    ("match", "where"),
    [
        ("E1 SEQ^c E2", "SEQ^c"),
        ("FIRST(E1) SEQ E2", "FIRST"),
        ("E1 SEQ LAST E2", "LAST"),
    ],
)
def test_automata_front_end_refuses_with_the_place(match: str, where: str) -> None:
    # The fleet and the backfills compile through the pattern form, which reports at
    # a complex event's last event: these are refused there, at their place.
    text = query(match, "[RANGE 5]")
    with pytest.raises(RsepqlError) as caught:
        parse_and_check(text)
    err = caught.value
    line = text.splitlines()[err.line - 1]
    assert line[err.column - 1 :].startswith(where)
    assert "cerfleet run" in err.message
    for extra, word in (("[RANGE 5 STEP 2]", "STEP"),):
        text = query("E1 SEQ E2", extra)
        with pytest.raises(RsepqlError) as caught:
            parse_and_check(text)
        line = text.splitlines()[caught.value.line - 1]
        assert line[caught.value.column - 1 :].startswith(word)
    text = query("E1 SEQ E2", "[RANGE 5]", consuming=True)
    with pytest.raises(RsepqlError) as caught:
        parse_and_check(text)
    line = text.splitlines()[caught.value.line - 1]
    assert line[caught.value.column - 1 :].startswith("CONSUMING")


def test_consumption_selects_again_at_an_unchanged_close() -> None:
    # E2 on RANGE 100 STEP 5: closes 5, 10, 15. By 5, a1 (1), a2 (2), b1c1 (3) and
    # b2c2 (4) have arrived: SEQ^c selects the earliest E2 with an E1, b1c1 at 3, and
    # consumes it with a1. Nothing arrives before 10, yet the evaluation at 10 differs:
    # b2c2 at 4 is now the earliest, with a2: reported at 10, not at 15 (the graph at
    # 12 matches neither event).
    stream = """@prefix : <http://e/> .
@prefix t: <https://cerfleet.dev/ns#> .
:G1 t:time 1 . :G2 t:time 2 . :G3 t:time 3 . :G4 t:time 4 . :G5 t:time 12 .
:G1 { :a1 :p :b1 . } :G2 { :a2 :p :b2 . } :G3 { :b1 :q :c1 . } :G4 { :b2 :q :c2 . }
:G5 { :d :r :e . }
"""
    events, _ = read_trig(stream.encode())
    text = query("E1 SEQ^c E2", consuming=True).replace("STEP 4", "STEP 5")
    got = [
        (at // 1000, r["x"][len(E) :], r["time"])
        for at, r in rsepql_evaluations(text, [("S", events)])
    ]
    assert got == [(5, "a1", 3), (10, "a2", 4)]

"""Seed 004's exact worked examples (Ex. 3–8, 10, with the research notes' typo fixes)
through ``cerfleet run`` on TriG files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cerfleet.cli.main import main

PREFIXES = "@prefix : <http://e/> .\n@prefix t: <https://cerfleet.dev/ns#> .\n"
E = "http://e/"


def trig(path: Path, events: list[tuple[int, str]]) -> str:
    lines = [PREFIXES]
    for i, (time, body) in enumerate(events):
        lines.append(f":g{i} t:time {time} .\n:g{i} {{ {body} }}\n")
    path.write_text("".join(lines))
    return str(path)


Rows = list[dict[str, object]]


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], query: str, *options: str) -> Rows:
    q = tmp_path / "q.rq"
    q.write_text(query)
    assert main(["run", str(q), *options, "--quiet"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def query(seq: str, select: str = "?h ?p ?l ?w ?v", window: str = "", extra: str = "") -> str:
    return f"""PREFIX : <http://e/>
SELECT {select} {window}
FROM STREAM S1 <http://e/s1>
FROM STREAM S2 <http://e/s2>
WHERE {{ SEQ({seq})
  DEFINE GPM A ON S1 {{ ?h :pow ?p . ?h :loc ?l . {extra} }}
  DEFINE GPM B ON S2 {{ ?w :value ?v . ?w :loc ?l . }}
}}"""


def row(time: int, **values: str) -> dict[str, object]:
    out: dict[str, object] = {k: (E + v if v else None) for k, v in values.items()}
    out["time"] = time
    return out


# Example 6's streams (the notes' fixes: H2's location and W1's first location at 15).
S1_6 = [(10, ":H1 :pow :Pw1 . :H1 :loc :L1 ."), (15, ":H2 :pow :Pw2 . :H2 :loc :L1 .")]
S2_6 = [
    (15, ":W1 :value :Vl1 . :W1 :loc :L2 ."),
    (20, ":W1 :value :Vl1 . :W1 :loc :L1 ."),
    (25, ":W2 :value :Vl2 . :W2 :loc :L1 ."),
]


def streams6(tmp_path: Path) -> list[str]:
    return [
        "--stream",
        "S1=" + trig(tmp_path / "s1.trig", S1_6),
        "--stream",
        "S2=" + trig(tmp_path / "s2.trig", S2_6),
    ]


def test_example_6_skip_till_any(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    got = run(tmp_path, capsys, query("A : B"), *streams6(tmp_path))
    want = [
        row(20, h="H1", p="Pw1", l="L1", w="W1", v="Vl1"),
        row(20, h="H2", p="Pw2", l="L1", w="W1", v="Vl1"),
        row(25, h="H1", p="Pw1", l="L1", w="W2", v="Vl2"),
        row(25, h="H2", p="Pw2", l="L1", w="W2", v="Vl2"),
    ]
    assert got == want


def test_example_7_skip_till_next(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    got = run(tmp_path, capsys, query("A ; B"), *streams6(tmp_path))
    assert got == [
        row(20, h="H1", p="Pw1", l="L1", w="W1", v="Vl1"),
        row(20, h="H2", p="Pw2", l="L1", w="W1", v="Vl1"),
    ]


def test_example_8_strict_contiguity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    got = run(tmp_path, capsys, query("A , B"), *streams6(tmp_path))
    assert got == [row(20, h="H2", p="Pw2", l="L1", w="W1", v="Vl1")]


S1_4 = [(10, ":H1 :pow :Pw1 . :H1 :loc :L1 ."), (25, ":H2 :pow :Pw2 . :H2 :loc :L2 .")]
S2_4 = [(10, ":W1 :value :Vl1 . :W1 :loc :L1 ."), (20, ":W2 :value :Vl2 . :W2 :loc :L1 .")]


def streams4(tmp_path: Path) -> list[str]:
    return [
        "--stream",
        "S1=" + trig(tmp_path / "s1.trig", S1_4),
        "--stream",
        "S2=" + trig(tmp_path / "s2.trig", S2_4),
    ]


def test_example_4_conjunction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    got = run(tmp_path, capsys, query("A & B"), *streams4(tmp_path))
    assert got == [row(10, h="H1", p="Pw1", l="L1", w="W1", v="Vl1")]


def test_example_5_disjunction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    got = run(tmp_path, capsys, query("A | B"), *streams4(tmp_path))
    # The paper's row at 15 has no event in the inputs (research notes): four rows.
    assert got == [
        row(10, h="H1", p="Pw1", l="L1", w="", v=""),
        row(10, h="", p="", l="L1", w="W1", v="Vl1"),
        row(20, h="", p="", l="L1", w="W2", v="Vl2"),
        row(25, h="H2", p="Pw2", l="L2", w="", v=""),
    ]


def test_example_3_gpm_in_time_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # [5, 15] as the tumbling window [0, 15] (windows start at time 0).
    s1 = [
        (10, ":H1 :pow :Pw1 . :H1 :loc :L1 ."),
        (15, ":H2 :pow :Pw2 . :H2 :loc :L2 ."),
        (25, ":H3 :pow :Pw3 . :H3 :loc :L3 ."),
    ]
    got = run(
        tmp_path,
        capsys,
        query("A", select="?h ?p ?l"),
        "--stream",
        "S1=" + trig(tmp_path / "s1.trig", s1),
    )
    assert got[:2] == [row(10, h="H1", p="Pw1", l="L1"), row(15, h="H2", p="Pw2", l="L2")]


def test_example_10_background_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kb = tmp_path / "kb.ttl"
    kb.write_text(
        "@prefix : <http://e/> .\n:H1 :owner :john . :H1 :address :paris .\n"
        ":H2 :owner :smith . :H2 :address :lyon .\n"
    )
    s1 = [(10, ":H1 :pow :Pw1 . :H1 :loc :L1 ."), (25, ":H2 :pow :Pw2 . :H2 :loc :L2 .")]
    text = query(
        "A",
        select="?h ?p ?l ?n ?a",
        window="WITHIN 20 SECONDS",
        extra="GRAPH <http://e/db> { ?h :owner ?n . ?h :address ?a . }",
    )
    got = run(
        tmp_path,
        capsys,
        text,
        "--stream",
        "S1=" + trig(tmp_path / "s1.trig", s1),
        "--background",
        f"http://e/db={kb}",
    )
    # [10, 20] of the paper: the window [0, 20] holds H1 only; H2 at 25 falls in [20, 40].
    assert got[0] == row(10, h="H1", p="Pw1", l="L1", n="john", a="paris")
    assert got[1:] == [row(25, h="H2", p="Pw2", l="L2", n="smith", a="lyon")]


def test_optional_inside_a_gpm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Not a paper example: OPTIONAL is SPARQL's left outer join inside one GPM. H1 has an
    # owner, H2 none: its row has ?n null.
    s1 = trig(
        tmp_path / "s1.trig",
        [
            (10, ":H1 :pow :Pw1 . :H1 :loc :L1 . :H1 :owner :o1 ."),
            (12, ":H2 :pow :Pw2 . :H2 :loc :L1 ."),
        ],
    )
    s2 = trig(tmp_path / "s2.trig", [(20, ":W1 :value :Vl1 . :W1 :loc :L1 .")])
    q = query("A : B", select="?h ?n ?w", extra="OPTIONAL { ?h :owner ?n . }")
    got = run(tmp_path, capsys, q, "--stream", f"S1={s1}", "--stream", f"S2={s2}")
    assert got == [row(20, h="H1", n="o1", w="W1"), row(20, h="H2", n="", w="W1")]


def test_not_exists_inside_a_gpm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Not a paper example: FILTER NOT EXISTS drops the solutions an extra pattern
    # extends: H1 has an owner, so only H2 starts a match.
    s1 = trig(
        tmp_path / "s1.trig",
        [
            (10, ":H1 :pow :Pw1 . :H1 :loc :L1 . :H1 :owner :o1 ."),
            (12, ":H2 :pow :Pw2 . :H2 :loc :L1 ."),
        ],
    )
    s2 = trig(tmp_path / "s2.trig", [(20, ":W1 :value :Vl1 . :W1 :loc :L1 .")])
    q = query("A : B", select="?h ?w", extra="FILTER NOT EXISTS { ?h :owner ?n . }")
    got = run(tmp_path, capsys, q, "--stream", f"S1={s1}", "--stream", f"S2={s2}")
    assert got == [row(20, h="H2", w="W1")]

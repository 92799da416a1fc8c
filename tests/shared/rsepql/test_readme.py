"""The README's RSEP-QL query is Example 4 with Example 3's windows: on the running
example's stream it gives Example 8's results (and the one new at 10)."""

from __future__ import annotations

import re
from pathlib import Path

from cerfleet.cli.rdf_run import rsepql_results
from cerfleet.rdf.trig import read_trig
from tests.shared.rsepql.test_examples import STREAM

README = Path(__file__).resolve().parents[3] / "README.md"


def test_readme_query_gives_example_8() -> None:
    section = README.read_text().split("## RDF graph streams: RSEP-QL", 1)[1]
    text = re.search(r"```sparql\n(.*?)```", section, re.S)
    assert text is not None
    events, _ = read_trig(STREAM.encode())
    got = [
        (r["x"][-2:], r["y"][-2:], r["z"][-2:], r["time"])
        for r in rsepql_results(text.group(1), [("S", events)])
    ]
    assert got == [
        ("a1", "b1", "c1", 6),
        ("a2", "b2", "c2", 6),
        ("a2", "b2", "c2", 8),
        ("a1", "b1", "c1", 10),
    ]

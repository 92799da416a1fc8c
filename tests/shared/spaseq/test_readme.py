"""The README's SPAseq query parses and finds the V shapes of a small price series."""

from __future__ import annotations

import re
from pathlib import Path

from cerfleet.cli.rdf_run import results
from cerfleet.rdf.trig import read_trig

README = Path(__file__).resolve().parents[3] / "README.md"


def test_readme_query_finds_v_shapes() -> None:
    section = README.read_text().split("## RDF graph streams: SPAseq", 1)[1]
    text = re.search(r"```sparql\n(.*?)```", section, re.S)
    assert text is not None
    prices = [10, 8, 7, 9, 9]
    lines = ["@prefix pred: <http://example/> .", "@prefix t: <https://cerfleet.dev/ns#> ."]
    for i, price in enumerate(prices):
        lines.append(f"<http://e/g{i}> t:time {i} .")
        lines.append(
            f"<http://e/g{i}> {{ <http://e/t{i}> pred:company <http://e/acme> ; "
            f"pred:price {price} . }}"
        )
    events, _ = read_trig("\n".join(lines).encode())
    got = list(results(text.group(1), [("S1", events)]))
    # A at 10 then falling prices then a rise, all contiguous: 10,8,7,9 and 8,7,9
    # (B+ keeps its last iteration: ?p2 is 7).
    assert got == [
        {"company": "http://e/acme", "p1": 10, "p2": 7, "p3": 9, "time": 3},
        {"company": "http://e/acme", "p1": 8, "p2": 7, "p3": 9, "time": 3},
    ]

"""RDF graph events as the fleet's records and as a TriG file: seed 004's stock stream
(a random walk of one company's trades) and its Query 4, for the tests that compare
records' rows with ``cerfleet run``'s."""

from __future__ import annotations

import json
import random

PREFIXES = (
    "@prefix pred: <http://example/> .\n"
    "@prefix t: <https://cerfleet.dev/ns#> .\n"
    "@prefix : <http://example/trades/> .\n"
)
CONTEXT = {"pred": "http://example/", "cf": "https://cerfleet.dev/ns#"}
# Seed 004's Query 4 in its Kleene form (the V: down, then up), as benchmarks.rdf runs it.
QUERY_4 = """PREFIX pred: <http://example/>
SELECT ?company ?p1 ?p2 ?p3
WITHIN 1 MINUTES
FROM STREAM S1 <http://stockmarket.org/stocks/google>
WHERE {
  SEQ (A, B+, C)
  DEFINE GPM A ON S1 { ?t1 pred:company ?company . ?t1 pred:price ?p1 . }
  DEFINE GPM B ON S1 { ?t2 pred:company ?company . ?t2 pred:price ?p2 . FILTER (?p2 < ?p1) }
  DEFINE GPM C ON S1 { ?t3 pred:company ?company . ?t3 pred:price ?p3 . FILTER (?p3 > ?p2) }
}
"""


def trades(n: int, seed: int) -> list[tuple[int, int, str, int]]:
    """(time, price, kind, volume) of a random walk, several trades per second at
    times."""
    rng = random.Random(seed)
    price, time, out = 100, 0, []
    for _ in range(n):
        time += rng.choice((0, 1, 1, 2))
        price = max(1, price + rng.choice((-2, -1, -1, 0, 1, 1, 2)))
        out.append((time, price, rng.choice(("buy", "sell")), rng.randrange(1, 1000)))
    return out


def trig_record(i: int, trade: tuple[int, int, str, int]) -> bytes:
    time, price, kind, volume = trade
    return (
        PREFIXES
        + f":g{i} t:time {time} .\n"
        + f':g{i} {{ :t{i} pred:company :google ; pred:price {price} ; pred:type "{kind}" ; '
        + f"pred:volume {volume} . }}\n"
    ).encode()


def jsonld_record(i: int, trade: tuple[int, int, str, int]) -> bytes:
    time, price, kind, volume = trade
    node = {
        "@id": f"http://example/trades/t{i}",
        "pred:company": {"@id": "http://example/trades/google"},
        "pred:price": price,
        "pred:type": kind,
        "pred:volume": volume,
    }
    doc = {
        "@context": CONTEXT,
        "@id": f"http://example/trades/g{i}",
        "cf:time": time,
        "@graph": [node],
    }
    return json.dumps(doc).encode()


def file_of(records: list[bytes]) -> bytes:
    """Records concatenated: a TriG file (prefixes may be declared again)."""
    return b"".join(records)

"""CORE's experiment queries, re-stated: does cerfleet compile them?

CORE's C++ engine ships its experiments as folders of a stream declaration
(``CREATE STREAM``), sometimes a quarantine declaration (``CREATE QUARANTINE``), and
query files: stocks (37 queries), stocks read out of order (37, under
``FIXED_TIME 2 seconds``), smart homes (24), taxis (24), Bluesky in order (1, under
``DIRECT``) and out of order (4, under ``BOUNDED_TIME 10 seconds``), a crypto ticker
(2), and, on a branch, Google cluster traces (3, with ``A, B`` sequencing and chained
equalities). This module writes that corpus anew, query for query in the same shapes
(sequence lengths, OR groups, filters per variable, a tail no event satisfies, a group
named as a whole, PARTITION BY, WITHIN over an attribute, a primary_time or seconds,
CONSUME BY ANY / NONE / PARTITION, LIMIT, LAST), with constants of its own; the files
themselves (GPL-3.0) are not copied.

Run ``python -m benchmarks.core_corpus [--out DIR]``: prints how many queries compile
with their declarations, each refusal's first line, and writes ``core_corpus.md`` and
``core_corpus.json``.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from cerfleet.errors import CerfleetError
from cerfleet.query import compile_query

STOCK = """CREATE STREAM S {
EVENT BUY { id:int, name:string, volume:int, price:double, stock_time:%s },
EVENT SELL { id:int, name:string, volume:int, price:double, stock_time:%s }
}
"""
HOMES = """CREATE STREAM S {
EVENT LOAD { id:int, plug_timestamp:int, value:double, plug_id:int, household_id:int }
}
"""
TAXI = """CREATE STREAM S {
EVENT TRIP { id:int, medallion:string, pickup_datetime:int, dropoff_datetime:int,
    trip_distance:double, pickup_zone:string, dropoff_zone:string, fare_amount:double }
}
"""
BLUESKY = """CREATE STREAM Bluesky {
    EVENT CreatePost { did: string, time: primary_time, langs: string, text: string },
    EVENT CreateLike { did: string, time: primary_time, subject_uri: string },
    EVENT CreateFollow { did: string, time: primary_time, subject: string }
}
"""
TICKER = """CREATE STREAM TICKER {
EVENT Buy { product_id:string, price:double, best_bid:double, time:primary_time },
EVENT Sell { product_id:string, price:double, best_bid:double, time:primary_time }
}
"""
CLUSTER = """CREATE STREAM S {
EVENT TASK { job:int, task:int, machine:int, status:int, priority:int, event_number:int }
}
"""

TICKERS = ("ACME", "BOLT", "CRUX", "DYNA", "EPIC", "FLUX", "GRID", "HALO", "IRIS", "JADE")
ZONES = ("Harbor", "Old Town", "Riverside", "Uptown", "Mill Park", "Airport", "Docks")
CONSUMES = ("ANY", "NONE")


def _stocks(primary_time: bool) -> Iterator[tuple[str, str]]:
    time_type = "primary_time" if primary_time else "int"
    decl = STOCK % (time_type, time_type)
    # q1..q12: SELL, BUY, BUY repeated, one ticker per variable; q11 and q12 keep LAST.
    for number, length in enumerate((3, 4, 6, 7, 9, 10, 12, 13, 15, 18, 21, 24), 1):
        kinds = [("SELL", "BUY", "BUY")[i % 3] for i in range(length)]
        seq = "; ".join(f"{k} as T{i + 1}" for i, k in enumerate(kinds))
        filt = " AND ".join(f"T{i + 1}[name = '{TICKERS[i % 10]}']" for i in range(length))
        strategy = "LAST " if number > 10 else ""
        for consume in CONSUMES:
            yield (
                f"q{number}_{consume.lower()}",
                f"{decl}SELECT {strategy}* FROM S\nWHERE ({seq})\nFILTER {filt}\n"
                f"WITHIN 10000 [stock_time]\nCONSUME BY {consume}\n",
            )
    # other-q1..q6: four variables, OR groups, price bounds, partitions by volume.
    groups = ("SELL as a; BUY as b; BUY as c; SELL as d", "SELL as a; (BUY OR SELL) as b; "
              "(BUY OR SELL) as c; SELL as d")  # fmt: skip
    names = "a[name = 'ACME'] AND b[name = 'BOLT'] AND c[name = 'CRUX'] AND d[name = 'DYNA']"
    prices = names + " AND a[price > 10] AND b[price > 20.5] AND d[price >= 3]"
    others = [
        (groups[0], prices, ""),
        (groups[1], prices, ""),
        (groups[0], names, ""),
        (groups[1], names, ""),
        (groups[0], names, "PARTITION BY [volume]\n"),
        (groups[1], names, "PARTITION BY [volume]\n"),
    ]
    for number, (seq, filt, partition) in enumerate(others, 1):
        for consume in CONSUMES:
            yield (
                f"other-q{number}_{consume.lower()}",
                f"{decl}SELECT * FROM S\nWHERE ({seq})\nFILTER {filt}\n{partition}"
                f"WITHIN 10000 [stock_time]\nCONSUME BY {consume}\n",
            )
    yield (
        "other-q6_partition",
        f"{decl}SELECT * FROM S\nWHERE ({groups[1]})\nFILTER {names}\nPARTITION BY [volume]\n"
        "WITHIN 10000 [stock_time]\nCONSUME BY PARTITION\n",
    )


def _homes() -> Iterator[tuple[str, str]]:
    # A group of LOADs named H as a whole, one household per member; q10..q12 end on a
    # member no event satisfies and keep LAST.
    for number, length in enumerate((3, 4, 6, 7, 9, 10, 12, 13, 15, 4, 7, 10), 1):
        tail = number > 9
        members = [f"LOAD as H{i + 1}" for i in range(length)] + (["LOAD as HNE"] if tail else [])
        filt = "H[value > 76]" + "".join(
            f" AND H{i + 1}[household_id = {2 * i + 1}]" for i in range(length)
        )
        if tail:
            filt += " AND HNE[household_id = 999]"
        strategy = "LAST " if tail else ""
        for consume in CONSUMES:
            yield (
                f"q{number}_{consume.lower()}",
                f"{HOMES}SELECT {strategy}* FROM S\nWHERE ({'; '.join(members)}) as H\n"
                f"FILTER {filt}\nWITHIN 10 [plug_timestamp]\nCONSUME BY {consume}\nLIMIT 1000\n",
            )


def _taxis() -> Iterator[tuple[str, str]]:
    # Trips chained zone to zone; every query ends on a trip from a zone that does not
    # exist; q10..q12 are short and keep LAST.
    for number, length in enumerate((3, 4, 6, 7, 9, 10, 12, 13, 24, 3, 6, 9), 1):
        trips = [f"TRIP as loc{i + 1}" for i in range(length)] + ["TRIP as NE"]
        filt = " AND\n    ".join(
            f"loc{i + 1}[pickup_zone = '{ZONES[i % 7]}' AND dropoff_zone = '{ZONES[(i + 1) % 7]}']"
            for i in range(length)
        )
        strategy = "LAST " if number > 9 else ""
        for consume in CONSUMES:
            yield (
                f"q{number}_{consume.lower()}",
                f"{TAXI}SELECT {strategy}* FROM S\nWHERE ({'; '.join(trips)})\nFILTER\n    {filt}"
                " AND\n    NE[pickup_zone = 'Nowhere']\nWITHIN 1000 [dropoff_datetime]\n"
                f"CONSUME BY {consume}\nLIMIT 1000\n",
            )


def _bluesky(policy: str, formulas: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    quarantine = f"CREATE QUARANTINE {{\n{policy} {{Bluesky}}\n}}\n"
    for number, formula in enumerate(formulas, 1):
        yield (
            f"q{number}",
            f"{BLUESKY}{quarantine}SELECT *\nFROM Bluesky\nWHERE {formula}\n"
            "PARTITION BY [did]\nWITHIN 10 SECONDS\n",
        )


def _ticker() -> Iterator[tuple[str, str]]:
    yield (
        "q1",
        f"{TICKER}SELECT *\nFROM TICKER\nWHERE (Buy:Sell) OR (Sell:Buy)\n"
        "FILTER Buy[product_id='BTC-EUR'] AND Sell[product_id='BTC-EUR']\n"
        "WITHIN 3000000000 [time]\n",
    )
    yield (
        "q2",
        f"{TICKER}SELECT *\nFROM TICKER\nWHERE (Buy AS X:Sell AS X) OR (Sell AS X:Buy AS X)\n"
        "FILTER X[product_id='BTC-EUR']\nWITHIN 3000000000 [time]\n",
    )


def _cluster() -> Iterator[tuple[str, str]]:
    yield (
        "other-q1_any",
        f"{CLUSTER}SELECT a,b,c FROM S\nWHERE (TASK as a, TASK as b, TASK as c)\nFILTER\n"
        "    a[status = 2] AND b[status = 3] AND c[status = 2] AND\n"
        "    a[job] = b[job] = c[job] AND\n    a[machine] = b[machine] = c[machine]\n"
        "WITHIN 50 [event_number]\nCONSUME BY ANY\n",
    )
    yield (
        "other-q2_any",
        f"{CLUSTER}SELECT a,b,c FROM S\nWHERE (TASK as a, TASK as b, TASK as c, TASK as d)\n"
        "FILTER\n    a[status=1] AND b[status=1] AND c[status=1] AND d[status=1] AND\n"
        "    a[machine] = b[machine] = c[machine] = d[machine]\n"
        "WITHIN 80 [event_number]\nCONSUME BY ANY\n",
    )
    yield (
        "other-q3_any",
        f"{CLUSTER}SELECT a,b,c FROM S\nWHERE (TASK as a, TASK as b, TASK as c)\nFILTER\n"
        "    a[status = 0] AND b[status = 0] AND c[status = 4] AND\n"
        "    a[job] = c[job] AND\n    a[machine] = b[machine]\n"
        "WITHIN 150 [event_number]\nCONSUME BY ANY\n",
    )


def corpus() -> list[tuple[str, str, str]]:
    """(family, query name, text): the re-stated corpus, declarations included."""
    post3 = "CreatePost ; CreatePost ; CreatePost"
    families = {
        "stocks": _stocks(primary_time=False),
        "unordered_stocks": (
            (
                name,
                text.replace(
                    "}\n}\n", "}\n}\nCREATE QUARANTINE {\nFIXED_TIME 2 seconds {S}\n}\n", 1
                ),
            )
            for name, text in _stocks(primary_time=True)
        ),
        "smart_homes": _homes(),
        "taxis": _taxis(),
        "ordered_bluesky": _bluesky("DIRECT", (post3,)),
        "unordered_bluesky": _bluesky(
            "BOUNDED_TIME 10 seconds",
            (
                post3,
                post3.replace(";", ":"),
                "CreatePost ; CreatePost ; (CreatePost OR CreateLike)",
                "CreatePost : CreatePost : (CreatePost OR CreateLike)",
            ),
        ),
        "crypto_market": _ticker(),
        "google_cluster": _cluster(),
    }
    return [(family, name, text) for family, queries in families.items() for name, text in queries]


_QUARANTINE = re.compile(r"CREATE QUARANTINE \{.*?\}\s*\}\n", re.S)


def _refusal(text: str) -> str | None:
    try:
        compile_query(text)
    except CerfleetError as err:
        return str(err).splitlines()[0]
    return None


def check() -> list[dict[str, str | None]]:
    """Each query of the corpus with the first line of its refusal (None: compiles), as
    written and with its stream declaration only (no quarantine)."""
    return [
        {
            "family": family,
            "query": name,
            "error": _refusal(text),
            "error_without_quarantine": _refusal(_QUARANTINE.sub("", text)),
        }
        for family, name, text in corpus()
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.core_corpus")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    rows = check()
    total = Counter(str(r["family"]) for r in rows)
    good = Counter(str(r["family"]) for r in rows if r["error"] is None)
    bare = Counter(str(r["family"]) for r in rows if r["error_without_quarantine"] is None)
    refusals = Counter(str(r["error"]) for r in rows if r["error"] is not None)
    lines = [
        "# CORE's experiment queries, re-stated, compiled by cerfleet",
        "",
        f"{sum(good.values())} of {len(rows)} compile with their declarations; "
        f"{sum(bare.values())} with their stream declarations only.",
        "",
        "| family | queries | compile | without the quarantine |",
        "|---|---:|---:|---:|",
        *(f"| {family} | {total[family]} | {good[family]} | {bare[family]} |" for family in total),
        "",
        *(f"- refused ({n}): {reason}" for reason, n in refusals.items()),
    ]
    print("\n".join(lines))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "core_corpus.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    payload = {
        "compiled": sum(good.values()),
        "compiled_without_quarantine": sum(bare.values()),
        "queries": len(rows),
        "rows": rows,
    }
    (args.out / "core_corpus.json").write_text(json.dumps(payload, indent=1) + "\n")


if __name__ == "__main__":
    main()

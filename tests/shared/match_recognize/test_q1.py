"""Seed 000's Q1 ("bull runs": rises in price followed by a sudden drop) on a stream
built here, the expected matches worked out by hand.

Q1 as printed cannot run as is (the research notes list its typos). Its DEFINE of A,
``A.amount >= 1.20 * prev(A.amount)``, runs as written (PREV is the previous row of the
partition). B's ``B.amount < 0.80 * A.lastOf().amount`` runs as
``B.amount < 0.80 * LAST(A.amount)`` (A's last row so far) with ``A* B`` as printed:
with no A row, ``LAST(A.amount)`` is null and B's condition does not hold. Since B
directly follows the last A, it is also ``0.80 * PREV(B.amount)`` with ``A+ B``. The
duration is ``last - first`` (the printed ``first - last`` is negative), in days. Each
row also carries ``change``, its amount over the coin's previous amount, for the
variants that do without PREV.
"""

from __future__ import annotations

import json
from typing import Any

from cerfleet.match_recognize.translate import writer
from cerfleet.query import compile_query

DAY = 86400
#  position: (coin, amount, change)
ROWS = [
    ("BTC", 100, 1.00),  # 0
    ("ETH", 50, 1.00),  # 1
    ("BTC", 125, 1.25),  # 2  A
    ("BTC", 150, 1.20),  # 3  A (exactly 1.20: >= holds)
    ("ETH", 65, 1.30),  # 4  A
    ("BTC", 90, 0.60),  # 5  B
    ("ETH", 45, 0.69),  # 6  B
    ("BTC", 110, 1.22),  # 7  A
    ("BTC", 140, 1.27),  # 8  A
    ("BTC", 175, 1.25),  # 9  A
    ("BTC", 100, 0.57),  # 10 B
]
EVENTS = [
    {"type": "Crypto", "id": c, "amount": a, "change": ch, "ts": i * DAY}
    for i, (c, a, ch) in enumerate(ROWS)
]

Q1 = """
SELECT * FROM Crypto
MATCH_RECOGNIZE (
  PARTITION BY Crypto.id
  MEASURES MAX(A.amount) AS M, MIN(A.amount) AS m,
           (LAST(A.ts) - FIRST(A.ts)) / 86400 AS d
  ALL MATCHES
  PATTERN (A+ B)
  DEFINE A AS A.change >= 1.20,
         B AS B.change < 0.80
)
"""


def run(text: str) -> list[tuple[tuple[int, ...], list[dict[str, Any]]]]:
    query = compile_query(text, language="match_recognize")
    write = writer(text)
    ev = query.evaluator()
    out = []
    for e in EVENTS:
        for ce in ev.process(e):
            out.append((ce.positions, [json.loads(line) for line in write([ce]).splitlines()]))
    return out


Q1_PREV = """
SELECT * FROM Crypto
MATCH_RECOGNIZE (
  PARTITION BY Crypto.id
  MEASURES MAX(A.amount) AS M, MIN(A.amount) AS m,
           (LAST(A.ts) - FIRST(A.ts)) / 86400 AS d
  ALL MATCHES
  PATTERN (A+ B)
  DEFINE A AS A.amount >= 1.20 * PREV(A.amount),
         B AS B.amount < 0.80 * PREV(B.amount)
)
"""
ALL_MATCHES = [
    ((2, 3, 5), [{"id": "BTC", "M": 150, "m": 125, "d": 1.0}]),
    ((3, 5), [{"id": "BTC", "M": 150, "m": 150, "d": 0.0}]),
    ((4, 6), [{"id": "ETH", "M": 65, "m": 65, "d": 0.0}]),
    ((7, 8, 9, 10), [{"id": "BTC", "M": 175, "m": 110, "d": 2.0}]),
    ((8, 9, 10), [{"id": "BTC", "M": 175, "m": 140, "d": 1.0}]),
    ((9, 10), [{"id": "BTC", "M": 175, "m": 175, "d": 0.0}]),
]


Q1_AS_PRINTED = Q1_PREV.replace("PATTERN (A+ B)", "PATTERN (A* B)").replace(
    "0.80 * PREV(B.amount)", "0.80 * LAST(A.amount)"
)


def test_q1_as_printed_with_last_of_a() -> None:
    # B reads A's last row in the match: the same matches as with PREV (B follows it).
    # Row 5 (90) is no B of a match from 5 itself: no A row there, LAST(A.amount) is null.
    assert "A* B" in Q1_AS_PRINTED and "LAST(A.amount)" in Q1_AS_PRINTED
    assert sorted(run(Q1_AS_PRINTED)) == ALL_MATCHES


def test_q1_with_prev() -> None:
    # The first row of each coin has no previous row: neither a rise nor a drop.
    assert sorted(run(Q1_PREV)) == ALL_MATCHES


def test_q1_all_matches() -> None:
    # Every run of rises ending in a drop, from each of its rises: BTC's 2 3 | 5 and
    # 7 8 9 | 10, ETH's 4 | 6. Durations: ts are days apart.
    assert sorted(run(Q1)) == ALL_MATCHES


def test_q1_past_last_row_two_rises() -> None:
    # Fixed length (two rises, a drop), so SKIP PAST LAST ROW maps exactly. BTC: from 2,
    # rows 2 3 5 match; from 7, rows 7 8 9 do not (9 is no drop), from 8, rows 8 9 10
    # do. ETH has one rise only.
    text = Q1.replace("ALL MATCHES", "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW")
    text = text.replace("PATTERN (A+ B)", "PATTERN (A{2} B)").replace(
        "MEASURES", "MEASURES MATCH_NUMBER() AS k, LAST(B.amount) AS low,"
    )
    assert run(text) == [
        ((2, 3, 5), [{"id": "BTC", "k": 1, "low": 90, "M": 150, "m": 125, "d": 1.0}]),
        ((8, 9, 10), [{"id": "BTC", "k": 2, "low": 100, "M": 175, "m": 140, "d": 1.0}]),
    ]


def test_q1_all_rows_per_match() -> None:
    text = """
    SELECT * FROM Crypto MATCH_RECOGNIZE (
      PARTITION BY id
      MEASURES CLASSIFIER() AS label, COUNT(A.*) AS rises, MAX(A.amount) AS top
      ALL ROWS PER MATCH
      AFTER MATCH SKIP PAST LAST ROW
      PATTERN (A A B)
      DEFINE A AS change >= 1.20, B AS change < 0.80
    )"""
    [(positions, rows)] = run(text)[:1]
    assert positions == (2, 3, 5)
    # RUNNING semantics: each row's measures over the match up to that row.
    assert [(r["amount"], r["label"], r["rises"], r["top"]) for r in rows] == [
        (125, "A", 1, 125),
        (150, "A", 2, 150),
        (90, "B", 2, 150),
    ]

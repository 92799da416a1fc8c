"""Seeded synthetic stand-ins for the paper's three datasets, as numpy columns.

Each generator returns a *columnar batch*: ``dict[str, numpy.ndarray]``, one
array per attribute plus the event type column ``type``. Numbers are ``int64``
or ``float64``; strings are numpy unicode (``U``) arrays, which the engine's
columnar fast path evaluates as whole-column comparisons. Everything is drawn
with vector operations, so 10M events take a few seconds.

The data imitate the shape of the paper's workloads (CORE, §5.2), not their
exact values:

* ``stock``: NYSE-like trades of 10 tickers, SELL or BUY, Zipf-like ticker
  frequencies, round volumes common, prices around a per-ticker level,
  ``stock_time`` in ms; a 10 000 ms window holds about 200 events.
* ``smart_homes``: LOAD measurements of 85 plugs in 17 households (the plugs
  of one house), ``value`` in W around 76 (``value > 76`` for about half),
  ``plug_timestamp`` in s; a 10 s window holds about 275 events.
* ``taxi``: TRIP events between 30 NYC zones, ordered by drop-off time,
  ``dropoff_datetime`` in s; a 10 000 s window holds about 400 events.

Frequencies are chosen so that the with-output queries of length 3 (S3, H3,
T3) produce some tens of thousands of complex events per million events, never
zero and never millions: the tickers and households named in the queries are
among the less frequent ones, while the zones of the taxi chain rank high
enough (pickup and drop-off are independent) for the chain to occur.

Streams are made of blocks of ``BLOCK`` events, block k drawn from
``numpy.random.default_rng([seed, k])`` and its clock continuing the previous
block's, so ``batches(name, n, seed)`` yields exactly the slices of
``GENERATORS[name](n, seed)`` without ever holding the whole stream.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]
Batch = dict[str, Array]
Block = Callable[[np.random.Generator, int, int], Batch]

BLOCK = 1 << 16  # events per generated block

# --- stock ---------------------------------------------------------------------------

TICKERS = ("INTC", "RIMM", "QQQ", "IPIX", "AMAT", "CSCO", "YHOO", "DELL", "ORCL", "MSFT")
# Share of each ticker: Zipf-like, rank r ∝ 1/r^1.6, in the order of TICKER_RANK.
# The tickers of S3 (INTC RIMM QQQ) and of Q1–Q7 (MSFT ORCL CSCO AMAT QQQ) are
# the less traded ones, so their matches number thousands, not millions.
TICKER_RANK = ("YHOO", "DELL", "IPIX", "CSCO", "INTC", "ORCL", "RIMM", "MSFT", "QQQ", "AMAT")
TICKER_LEVEL = {  # price level in dollars
    "INTC": 25.6,
    "RIMM": 27.3,
    "QQQ": 38.5,
    "IPIX": 4.1,
    "AMAT": 18.92,
    "CSCO": 17.6,
    "YHOO": 17.3,
    "DELL": 25.2,
    "ORCL": 11.14,
    "MSFT": 26.0,
}
ROUND_VOLUMES = np.array([100, 200, 300, 500, 1000, 2000, 4000, 5000], dtype=np.int64)
ROUND_VOLUME_P = np.array([0.32, 0.14, 0.06, 0.16, 0.16, 0.06, 0.06, 0.04])
STOCK_GAP_MS = 50.0  # mean gap between trades: ~20 trades/s, ~200 per 10 000 ms
STOCK_START_MS = 34_200_000  # 09:30 in ms since midnight


def _zipf(k: int, s: float) -> npt.NDArray[np.float64]:
    w = 1.0 / np.arange(1, k + 1, dtype=np.float64) ** s
    return w / w.sum()


def _ranked_shares(order: tuple[str, ...], rank: tuple[str, ...], s: float) -> Array:
    """Shares of the values of ``order`` (query order) when ``rank`` is Zipf(s)."""
    share = dict(zip(rank, _zipf(len(rank), s).tolist(), strict=True))
    return np.array([share[v] for v in order])


_TABLE = 1 << 14


def _sampling_table(values: Array, p: Array) -> Array:
    """``values`` repeated in proportion to ``p`` (to 1/16384): indexing it with uniform
    integers draws from ``p`` in one gather, faster than ``Generator.choice``."""
    counts = np.floor(np.asarray(p) * _TABLE).astype(np.int64)
    counts[np.argmax(counts)] += _TABLE - counts.sum()
    return np.repeat(values, counts)


def _draw(rng: np.random.Generator, table: Array, m: int) -> Array:
    return table[rng.integers(0, len(table), size=m)]


TICKER_P = _ranked_shares(TICKERS, TICKER_RANK, 1.6)
_TICKER_LEVELS = np.array([TICKER_LEVEL[t] for t in TICKERS])
_TICKER_PHASE = np.linspace(0.0, 2.0 * math.pi, len(TICKERS), endpoint=False)
_VOLUME_TABLE = _sampling_table(ROUND_VOLUMES, ROUND_VOLUME_P)
_TICKER_TABLE = _sampling_table(np.arange(len(TICKERS)), TICKER_P)
_TICKER_ARR = np.array(TICKERS)
_SELL_BUY = np.array(["SELL", "BUY"])


def _stock_block(rng: np.random.Generator, m: int, t0: int) -> Batch:
    code = _draw(rng, _TICKER_TABLE, m)
    side = (rng.random(m) < 0.5).astype(np.intp)  # 0: SELL, 1: BUY
    round_lot = rng.random(m) < 0.55
    volume = np.where(
        round_lot,
        _draw(rng, _VOLUME_TABLE, m),
        np.maximum(1.0, np.exp(5.6 + 1.1 * rng.standard_normal(m))).astype(np.int64),
    )
    gaps = np.floor(rng.exponential(STOCK_GAP_MS, size=m)).astype(np.int64)
    stock_time = t0 + np.cumsum(gaps)
    # A slow intraday swing per ticker (±1%) plus tick noise (±0.5%), in cents.
    swing = 0.01 * np.sin(stock_time / 3.6e6 + _TICKER_PHASE[code])
    noise = 0.005 * rng.standard_normal(m)
    price = np.round(_TICKER_LEVELS[code] * (1.0 + swing + noise), 2)
    return {
        "type": _SELL_BUY[side],
        "name": _TICKER_ARR[code],
        "volume": volume,
        "price": price,
        "stock_time": stock_time,
    }


# --- smart homes ---------------------------------------------------------------------

# 17 households of one house, 85 plugs. The households named in the H queries
# (0 2 4 6 9 10 12 14 15) have one or two plugs; the others most of them.
HOUSEHOLD_PLUGS = {
    0: 2,
    1: 20,
    2: 2,
    3: 13,
    4: 1,
    5: 10,
    6: 2,
    7: 8,
    9: 2,
    10: 2,
    11: 6,
    12: 2,
    13: 5,
    14: 2,
    15: 2,
    17: 4,
    19: 2,
}
LOAD_MEDIAN_W = 76.0
HOMES_RATE = 25  # measurements per second: ~275 per 10 s window (11 distinct seconds)
HOMES_START_S = 1_377_986_401  # 2013-09-01 00:00:01 UTC, as DEBS 2014

_PLUG_HOUSEHOLD = np.array(
    [h for h, k in HOUSEHOLD_PLUGS.items() for _ in range(k)], dtype=np.int64
)
_PLUG_LOCAL = np.array([i for k in HOUSEHOLD_PLUGS.values() for i in range(k)], dtype=np.int64)
# Each plug's typical load: a fixed spread around the median (not per seed).
_PLUG_LEVEL = LOAD_MEDIAN_W * np.exp(
    0.3 * np.random.default_rng(2014).standard_normal(len(_PLUG_HOUSEHOLD))
)


def _smart_homes_block(rng: np.random.Generator, m: int, t0: int) -> Batch:
    plug = rng.integers(0, len(_PLUG_HOUSEHOLD), size=m)
    value = np.round(_PLUG_LEVEL[plug] * np.exp(0.5 * rng.standard_normal(m)), 3)
    ticks = rng.random(m) < 1.0 / HOMES_RATE
    return {
        "type": np.full(m, "LOAD"),
        "household_id": _PLUG_HOUSEHOLD[plug],
        "plug_id": _PLUG_LOCAL[plug],
        "value": value,
        "plug_timestamp": t0 + np.cumsum(ticks, dtype=np.int64),
    }


# --- taxi ----------------------------------------------------------------------------

# Zipf-like popularity, most popular first. Pickup and drop-off are drawn
# independently, so the query zones rank high enough for the T3 chain to occur.
ZONES = (
    "Upper East Side South",
    "Midwood",
    "Gravesend",
    "East Harlem North",
    "West Brighton",
    "Midtown Center",
    "Lincoln Square West",
    "Sutton Place/Turtle Bay North",
    "East Concourse/Concourse Village",
    "Upper East Side North",
    "Midtown East",
    "Murray Hill",
    "Times Sq/Theatre District",
    "Union Sq",
    "Lincoln Square East",
    "Clinton East",
    "East Village",
    "Penn Station/Madison Sq West",
    "Upper West Side South",
    "Gramercy",
    "Midtown North",
    "East Chelsea",
    "West Village",
    "LaGuardia Airport",
    "Lenox Hill West",
    "JFK Airport",
    "Yorkville West",
    "Garment District",
    "Financial District North",
    "Central Park",
)
ZONE_P = _zipf(len(ZONES), 0.8)
TAXI_GAP_S = 25.0  # mean gap between drop-offs: ~400 trips per 10 000 s window
TAXI_START_S = 1_356_998_400  # 2013-01-01 00:00:00 UTC, as DEBS 2015
_ZONE_TABLE = _sampling_table(np.array(ZONES), ZONE_P)


def _taxi_block(rng: np.random.Generator, m: int, t0: int) -> Batch:
    gaps = np.floor(rng.exponential(TAXI_GAP_S, size=m)).astype(np.int64)
    dropoff_datetime = t0 + np.cumsum(gaps)
    distance = np.round(np.exp(0.8 + 0.7 * rng.standard_normal(m)), 2)
    duration = np.maximum(60, distance * 240 + rng.normal(120, 60, size=m)).astype(np.int64)
    fare = np.round(2.5 + 2.5 * distance + 0.5 * duration / 60, 2)
    return {
        "type": np.full(m, "TRIP"),
        "pickup_loc": _draw(rng, _ZONE_TABLE, m),
        "dropoff_loc": _draw(rng, _ZONE_TABLE, m),
        "pickup_datetime": dropoff_datetime - duration,
        "dropoff_datetime": dropoff_datetime,
        "trip_distance": distance,
        "fare_amount": fare,
    }


# --- streams of blocks ---------------------------------------------------------------

_BLOCKS: dict[str, tuple[Block, str, int]] = {
    "stock": (_stock_block, "stock_time", STOCK_START_MS),
    "smart_homes": (_smart_homes_block, "plug_timestamp", HOMES_START_S),
    "taxi": (_taxi_block, "dropoff_datetime", TAXI_START_S),
}
TIME_FIELD = {name: spec[1] for name, spec in _BLOCKS.items()}


def _blocks(name: str, n: int, seed: int) -> Iterator[Batch]:
    block, clock, t = _BLOCKS[name]
    done = k = 0
    while done < n:
        m = min(BLOCK, n - done)
        batch = block(np.random.default_rng([seed, k]), m, t)
        t = int(batch[clock][-1])
        yield batch
        done += m
        k += 1


def _empty(name: str) -> Batch:
    block, _, t = _BLOCKS[name]
    return {k: v[:0] for k, v in block(np.random.default_rng(0), 1, t).items()}


def generate(name: str, n: int, seed: int = 1) -> Batch:
    """The first ``n`` events of dataset ``name`` for ``seed``, as one batch."""
    out: Batch | None = None
    lo = 0
    for block in _blocks(name, n, seed):
        m = length(block)
        if out is None:
            if m == n:
                return block
            out = {k: np.empty(n, dtype=v.dtype) for k, v in block.items()}
        for k, v in block.items():
            out[k][lo : lo + m] = v
        lo += m
    return out if out is not None else _empty(name)


def stock(n: int, seed: int = 1) -> Batch:
    """NYSE-like SELL/BUY trades: name, volume, price, stock_time (ms)."""
    return generate("stock", n, seed)


def smart_homes(n: int, seed: int = 1) -> Batch:
    """LOAD measurements: household_id, plug_id, value (W), plug_timestamp (s)."""
    return generate("smart_homes", n, seed)


def taxi(n: int, seed: int = 1) -> Batch:
    """TRIP events: pickup_loc, dropoff_loc, pickup/dropoff_datetime (s), distance, fare."""
    return generate("taxi", n, seed)


GENERATORS: dict[str, Callable[[int, int], Batch]] = {
    "stock": stock,
    "smart_homes": smart_homes,
    "taxi": taxi,
}


def batches(name: str, n: int, seed: int = 1, size: int = BLOCK) -> Iterator[Batch]:
    """The same events as ``generate(name, n, seed)``, as consecutive batches of at
    most ``size`` events (views into generated blocks; memory stays bounded)."""
    for block in _blocks(name, n, seed):
        m = len(block["type"])
        for lo in range(0, m, size):
            yield {k: v[lo : lo + size] for k, v in block.items()}


def length(batch: Batch) -> int:
    return len(batch["type"]) if "type" in batch else len(next(iter(batch.values()), ()))


def to_dicts(batch: Batch) -> list[dict[str, Any]]:
    """The batch as a list of events: dicts of plain Python values (str, int, float)."""
    keys = list(batch)
    columns = [batch[k].tolist() for k in keys]
    return [dict(zip(keys, row, strict=True)) for row in zip(*columns, strict=True)]


def write_jsonl(path: str | Path, batch: Batch) -> int:
    """Write the batch as JSON Lines, one event per line; returns the number written."""
    keys = list(batch)
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for lo in range(0, length(batch), BLOCK):
            columns = [batch[k][lo : lo + BLOCK].tolist() for k in keys]
            for row in zip(*columns, strict=True):
                f.write(json.dumps(dict(zip(keys, row, strict=True)), separators=(",", ":")))
                f.write("\n")
                n += 1
    return n

"""The paper's query suites as CEQL text (CORE, §5.3–5.4 and Appendix G).

* ``S(n)``, ``H(n)``, ``T(n)``: the sequence workloads Pn on stock, smart homes and
  taxi, n ∈ {3, 6, 9, 12, 24}, window T (10 000 ms, 10 s and 10 000 s).
* ``S_prime(n)``, ``H_prime(n)``, ``T_prime(n)``: Pn′, the same with one more event
  that never occurs (``… ; BUY as NE`` and ``NE[name = 'NotExists']``), so no output.
  ``window=k`` gives the window sweep P3′ with window k·T.
* ``Q(i)``, i = 1..7: the other-operator workload on stock; Q3 and Q6 add
  ``PARTITION BY [volume]`` and ``CONSUME BY ANY``.

Every builder takes ``limit``: ``LIMIT n`` enumerates at most n complex events
per event, as the paper enumerated at most 1000 per pattern occurrence.
``suite()`` lists all of them with names, datasets and families.
"""

from __future__ import annotations

from dataclasses import dataclass

SIZES = (3, 6, 9, 12, 24)
WINDOW_FACTORS = (1, 2, 3, 4)
PAPER_LIMIT = 1000

# Ti[name = X_i], i = 1..24
_TEN = ("INTC", "RIMM", "QQQ", "IPIX", "AMAT", "CSCO", "YHOO", "DELL", "ORCL", "MSFT")
STOCK_NAMES = (*_TEN, "INTC", "RIMM", *_TEN, "INTC", "RIMM")
# Li[household_id = h_i], i = 1..24
HOUSEHOLDS = (0, 2, 4, 6, 9, 10, 12, 14, 15, 4, 9, 10, 0, 2, 4, 6, 9, 10, 12, 14, 15, 4, 9, 10)
_ROUTE = (
    ("East Harlem North", "Midwood"),
    ("Midwood", "Gravesend"),
    ("Gravesend", "West Brighton"),
    ("West Brighton", "Lincoln Square West"),
    ("Lincoln Square West", "Sutton Place/Turtle Bay North"),
    ("Sutton Place/Turtle Bay North", "East Concourse/Concourse Village"),
    ("East Concourse/Concourse Village", "East Harlem North"),
    ("East Harlem North", "East Harlem North"),
    ("East Harlem North", "Gravesend"),
    ("Gravesend", "Midwood"),
    ("Midwood", "Midwood"),
    ("Midwood", "Gravesend"),
    ("Gravesend", "Midwood"),
    ("Midwood", "Gravesend"),
)
# loci[pickup_loc = A_i AND dropoff_loc = B_i], i = 1..24 (15–24 repeat 3–12)
TAXI_ROUTES = _ROUTE + _ROUTE[2:12]

WINDOW = {"stock": (10000, "stock_time"), "smart_homes": (10, "plug_timestamp")}
WINDOW["taxi"] = (10000, "dropoff_datetime")


def _check_n(n: int) -> None:
    if not 1 <= n <= 24:
        raise ValueError(f"n must be in 1..24, got {n}")


def _tail(dataset: str, window: int, limit: int | None) -> str:
    size, attr = WINDOW[dataset]
    text = f"     WITHIN {size * window} [{attr}]"
    return text + (f"\n     LIMIT {limit}" if limit is not None else "")


def _query(where: str, filters: list[str], tail: str, first: str = "", sep: str = " ") -> str:
    """The paper's layout: ``sep`` is what separates the filter atoms after AND."""
    return (
        "SELECT * FROM S\n"
        f"     WHERE {where}\n"
        f"     FILTER {first}" + f" AND{sep}".join(filters) + "\n" + tail
    )


def S(n: int, *, limit: int | None = None) -> str:
    """Sn on stock: SELL, BUY, BUY, SELL, … with Ti[name = X_i]."""
    return _stock(n, prime=False, window=1, limit=limit)


def S_prime(n: int, *, window: int = 1, limit: int | None = None) -> str:
    """Sn′: Sn followed by a BUY named 'NotExists' (no output); window ``window``·T."""
    return _stock(n, prime=True, window=window, limit=limit)


def _stock(n: int, *, prime: bool, window: int, limit: int | None) -> str:
    _check_n(n)
    seq = [f"{'SELL' if i % 3 == 1 else 'BUY'} as T{i}" for i in range(1, n + 1)]
    filters = [f"T{i}[name = '{STOCK_NAMES[i - 1]}']" for i in range(1, n + 1)]
    if prime:
        seq.append("BUY AS NE" if n >= 6 else "BUY as NE")
        filters.append("NE[name = 'NotExists']")
    return _query(f"({'; '.join(seq)})", filters, _tail("stock", window, limit))


def H(n: int, *, limit: int | None = None) -> str:
    """Hn on smart homes: (LOAD as L1; …; LOAD as Ln) as L, every load > 76."""
    return _homes(n, prime=False, window=1, limit=limit)


def H_prime(n: int, *, window: int = 1, limit: int | None = None) -> str:
    """Hn′: one more LOAD (inside ``as L``) of household 1000, which never occurs."""
    return _homes(n, prime=True, window=window, limit=limit)


def _homes(n: int, *, prime: bool, window: int, limit: int | None) -> str:
    _check_n(n)
    seq = [f"LOAD as L{i}" for i in range(1, n + 1)]
    filters = [f"L{i}[household_id = {HOUSEHOLDS[i - 1]}]" for i in range(1, n + 1)]
    if prime:
        seq.append("LOAD as NE")
        filters.append("NE[household_id = 1000]")
    where = f"({'; '.join(seq)}) as L"
    tail = _tail("smart_homes", window, limit)
    return _query(where, filters, tail, first="L[value > 76] AND\n            ")


def T(n: int, *, limit: int | None = None) -> str:
    """Tn on taxi: a chain of trips, each drop-off the next pickup."""
    return _taxi(n, prime=False, window=1, limit=limit)


def T_prime(n: int, *, window: int = 1, limit: int | None = None) -> str:
    """Tn′: one more TRIP picked up at 'NotExists', which never occurs."""
    return _taxi(n, prime=True, window=window, limit=limit)


def _taxi(n: int, *, prime: bool, window: int, limit: int | None) -> str:
    _check_n(n)
    seq = [f"TRIP as loc{i}" for i in range(1, n + 1)]
    filters = []
    for i in range(1, n + 1):
        a, b = TAXI_ROUTES[i - 1]
        conj = "and" if i in (1, 13) else "AND"  # as in the paper's source
        filters.append(f"loc{i}[pickup_loc = '{a}' {conj} dropoff_loc = '{b}']")
    if prime:
        seq.append("TRIP as NE")
        filters.append("NE[pickup_loc = 'NotExists']")
    where = f"({'; '.join(seq)})"
    return _query(where, filters, _tail("taxi", window, limit), sep="\n            ")


_Q1_WHERE = "(SELL as msft; BUY as oracle; BUY as csco; SELL as amat)"
_Q4_WHERE = "(SELL as msft; (BUY OR SELL) as oracle; (BUY OR SELL) as csco; SELL as amat)"
_Q1_FILTER = (
    "msft[name = 'MSFT'] AND oracle[name = 'ORCL'] AND\n"
    "            csco[name = 'CSCO'] AND amat[name = 'AMAT']"
)
_Q2_FILTER = (
    "msft[name = 'MSFT'] AND msft[price > 26.0] AND\n"
    "            oracle[name = 'ORCL'] AND oracle[price > 11.14] AND\n"
    "            csco[name = 'CSCO'] AND amat[name = 'AMAT'] AND amat[price >= 18.92]"
)
_Q7_FILTER = (
    "msft[name = 'MSFT'] AND qqq[name = 'QQQ'] and\n"
    "            qqq[volume=4000] AND amat[name = 'AMAT']"
)
_Q_PARTS = {
    1: (_Q1_WHERE, _Q1_FILTER, False),
    2: (_Q1_WHERE, _Q2_FILTER, False),
    3: (_Q1_WHERE, _Q1_FILTER, True),
    4: (_Q4_WHERE, _Q1_FILTER, False),
    5: (_Q4_WHERE, _Q2_FILTER, False),
    6: (_Q4_WHERE, _Q1_FILTER, True),
    7: ("(SELL as msft; (BUY OR SELL)+ as qqq; SELL as amat)", _Q7_FILTER, False),
}


def Q(i: int, *, limit: int | None = None) -> str:
    """Qi (i = 1..7) of the other-operator workload on stock, window 30 000 ms."""
    if i not in _Q_PARTS:
        raise ValueError(f"Q{i} does not exist: Q1..Q7")
    where, filters, partitioned = _Q_PARTS[i]
    lines = ["SELECT * FROM S", f"     WHERE {where}", f"     FILTER {filters}"]
    if partitioned:
        lines.append("     PARTITION BY [volume]")
    lines.append("     WITHIN 30000 [stock_time]")
    if partitioned:
        lines.append("     CONSUME BY ANY")
    if limit is not None:
        lines.append(f"     LIMIT {limit}")
    return "\n".join(lines)


@dataclass(frozen=True)
class BenchQuery:
    """One query of the suites: ``family`` is S, H, T, S', H', T', or Q."""

    name: str  # S3, S3', S3'x2, Q1, …
    dataset: str  # stock, smart_homes or taxi
    family: str
    n: int  # sequence length (Q: the query number)
    window: int  # window factor: k for a window of k·T
    output: bool  # False for the primed (no-output) queries
    text: str


DATASET_OF = {"S": "stock", "H": "smart_homes", "T": "taxi"}
_BUILDERS = {"S": (S, S_prime), "H": (H, H_prime), "T": (T, T_prime)}


def suite(limit: int | None = PAPER_LIMIT) -> list[BenchQuery]:
    """Every query of the paper's experiments: Pn and Pn′ for the three datasets,
    the window sweeps P3′ at 2T..4T, and Q1–Q7. ``limit`` goes on the queries
    with output (the primed ones produce none)."""
    out: list[BenchQuery] = []
    for fam, (with_output, prime) in _BUILDERS.items():
        dataset = DATASET_OF[fam]
        for n in SIZES:
            out.append(
                BenchQuery(f"{fam}{n}", dataset, fam, n, 1, True, with_output(n, limit=limit))
            )
        for n in SIZES:
            out.append(BenchQuery(f"{fam}{n}'", dataset, fam + "'", n, 1, False, prime(n)))
        for k in WINDOW_FACTORS[1:]:
            text = prime(3, window=k)
            out.append(BenchQuery(f"{fam}3'x{k}", dataset, fam + "'", 3, k, False, text))
    for i in sorted(_Q_PARTS):
        out.append(BenchQuery(f"Q{i}", "stock", "Q", i, 3, True, Q(i, limit=limit)))
    return out

"""Fuzzing the two front doors: the CEQL compiler and the event decoders.

Whatever the text or bytes, each must either succeed or raise one of the
product's own errors (``cerfleet.errors``) that says where: a ``CEQLError`` with
a line and column inside the query, a malformed record with its line number, a
dead-letter reason. Inputs are valid seeds (queries in every clause, events in
both formats) mutated at random: characters deleted, duplicated, swapped,
replaced by CEQL tokens or by hostile bytes, nesting pumped up.

``tests/shared/test_fuzz.py`` runs a few thousand inputs on every CI run (with
hypothesis drawing the mutations); the long run is this script::

    python -m tests.fuzz --examples 100000 [--seed 1] [--only ceql|jsonl|csv|records]

It prints, per target, how many inputs were tried, how many were accepted and
how many were refused with which error kind, and every unexpected exception (then
exits 1).
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from typing import Any

from cerfleet import compile_query
from cerfleet.errors import CEQLError, CerfleetError
from cerfleet.events.reader import EventReader, MalformedEvent
from cerfleet.fleet.records import Rejected, decode_event

# ------------------------------------------------------------------------ seeds

CEQL_SEEDS: tuple[str, ...] = (
    "SELECT * FROM S WHERE A ; B",
    "SELECT * FROM S WHERE A+",
    "SELECT a, b FROM S WHERE (A AS a ; B+ AS b) OR C WITHIN 10 EVENTS",
    "SELECT NEXT * FROM Stock WHERE SELL as s ; BUY+ as b ; SELL as c\n"
    "FILTER s[name = 'INTC'] AND b[price > 100.5 OR volume IN (1, 2, 3)]\n"
    "PARTITION BY [name] WITHIN 60000 [stock_time] CONSUME BY PARTITION LIMIT 5",
    "SELECT MAX * FROM S WHERE (A ; B) FILTER A[x * 2 + y % 3 >= -4] WITHIN 3 SECONDS",
    "SELECT STRICT * FROM S WHERE A ; B FILTER B[NOT name LIKE 'a.*[0-9]+' AND z != 1]",
    "SELECT LAST * FROM S WHERE A FILTER A[t IN RANGE(1, 2.5) AND s NOT IN ('x', 'y')]",
    "SELECT * FROM S WHERE A ; B PARTITION BY [k], [j] CONSUME BY ANY",
    "DECLARE STREAM S { EVENT A { x: int, name: string }, EVENT B { ok: boolean, "
    "t: primary_time, d: double } }\nSELECT * FROM S WHERE A ; B FILTER A[x > 1] AND "
    "B[ok = TRUE] WITHIN 5 MINUTES",
    "-- a comment\nSELECT * /* block */ FROM S WHERE A ; B WITHIN 2 HOURS",
    "select * from s where a ; b filter a[x == 1 or y <> 2] within 100 milliseconds",
)

CEQL_TOKENS: tuple[str, ...] = (
    "SELECT", "FROM", "WHERE", "FILTER", "WITHIN", "PARTITION BY", "CONSUME BY", "LIMIT",
    "AS", "OR", "AND", "NOT", "IN", "RANGE", "LIKE", "TRUE", "FALSE", "EVENTS", "SECONDS",
    "DECLARE", "STREAM", "EVENT", "ANY", "NONE", "NEXT", "LAST", "MAX", "STRICT", "ALL",
    ";", "+", "*", "(", ")", "[", "]", "{", "}", ",", ":", ".", "-", "/", "%", "=", "!=",
    "<", "<=", ">", ">=", "==", "<>", "'", '"', "'(a+)+$'", "'\\1'", "'(?=x)'", "--", "/*",
    "*/", "\\", "\n", "\t", " ", "0", "-1", "1e309", "99999999999999999999999", "1.5",
    "0x1F", "é", "\u0000", "\ud800", "\U0001f600", "x", "A", "_", "`",
)  # fmt: skip

JSON_SEEDS: tuple[str, ...] = (
    '{"type": "A", "x": 1, "name": "INTC", "price": 10.5, "ok": true, "n": null}',
    '{"type": "B", "t": "2026-01-01T00:00:00Z", "tags": ["a", {"b": [1, 2]}], "d": -0.0}',
    '{"type": "SELL", "volume": 12345678901234567890, "s": "caf\\u00e9 \\ud83d\\ude00"}',
    '{"type": 7}',
    '["not", "an", "object"]',
)
JSON_TOKENS: tuple[str, ...] = (
    "{", "}", "[", "]", ",", ":", '"', "\\", "\\u", "\\ud800", "null", "true", "NaN",
    "Infinity", "-", "1e999", "0", '"type"', '"A"', "\n", "\r", " ", "\x00", "\xff", "é",
)  # fmt: skip
CSV_SEEDS: tuple[str, ...] = (
    'type,x,name,price\nA,1,INTC,10.5\nB,,"quoted, comma",-3\n',
    'type,t\nA,2026-01-01T00:00:00Z\nB,"multi\nline"\n',
)
CSV_TOKENS: tuple[str, ...] = (",", '"', "\n", "\r\n", "type", "A", "", "\x00", "\xff", "1e5", " ")

# -------------------------------------------------------------------- mutation


def mutate(rng: random.Random, seed: str, tokens: tuple[str, ...], rounds: int = 0) -> str:
    """``seed`` after 1-8 random edits (or ``rounds`` of them)."""
    text = seed
    # Mostly one or two edits: inputs near valid ones reach past the first syntax check.
    for _ in range(rounds or rng.choice((1, 1, 1, 1, 2, 2, 3, 8))):
        n = len(text)
        i = rng.randint(0, n)
        j = min(n, i + rng.randint(0, 12))
        op = rng.randrange(7)
        if op == 0:  # delete a span
            text = text[:i] + text[j:]
        elif op == 1:  # insert a token
            text = text[:i] + rng.choice(tokens) + text[i:]
        elif op == 2:  # replace a span with a token
            text = text[:i] + rng.choice(tokens) + text[j:]
        elif op == 3:  # duplicate a span
            text = text[:j] + text[i:j] + text[j:]
        elif op == 4 and n > 1:  # swap two characters
            k = rng.randrange(n - 1)
            text = text[:k] + text[k + 1] + text[k] + text[k + 2 :]
        elif op == 5:  # pump a span: nesting, repetition
            text = text[:i] + text[i:j] * rng.choice((2, 10, 300)) + text[j:]
        else:  # a random character
            text = (
                text[:i] + chr(rng.choice((rng.randrange(128), rng.randrange(0x110000)))) + text[i:]
            )
    return text


# --------------------------------------------------------------------- checks


def check_ceql(text: str) -> str:
    """Compile ``text``; return "ok" or the error kind; raise on anything unexpected."""
    try:
        compile_query(text)
    except CEQLError as err:
        lines = text.splitlines() or [""]
        assert 1 <= err.line <= len(lines) + 1, (err.line, len(lines))
        assert err.column >= 1 and err.length >= 1
        str(err)  # renders the caret line
        return "CEQLError"
    except CerfleetError as err:
        assert "line" in str(err) or "transitions" in str(err), err
        return type(err).__name__
    return "ok"


def check_jsonl(data: bytes) -> str:
    """Read ``data`` as JSON Lines, leniently then strictly; every refusal has a line."""
    lines = data.count(b"\n") + 1
    refused: list[int] = []
    reader = EventReader(
        io.BytesIO(data), format="jsonl", on_malformed=lambda n, r: refused.append(n)
    )
    events = sum(1 for _ in reader)
    assert all(1 <= n <= lines for n in refused), refused
    try:
        for _ in EventReader(io.BytesIO(data), format="jsonl", strict=True):
            pass
    except MalformedEvent as err:
        assert 1 <= err.line <= lines and err.reason
    return "ok" if not refused else ("malformed" if not events else "mixed")


def check_csv(data: bytes) -> str:
    lines = data.count(b"\n") + data.count(b"\r") + 1
    refused: list[int] = []
    try:
        reader = EventReader(
            io.BytesIO(data), format="csv", on_malformed=lambda n, r: refused.append(n)
        )
        for _ in reader:
            pass
    except MalformedEvent as err:  # an unusable header
        assert 1 <= err.line <= lines and err.reason
        return "header"
    assert all(1 <= n <= lines for n in refused), refused
    return "ok" if not refused else "malformed"


def check_record(data: bytes) -> str:
    """The fleet's judge of input records: an event or a dead-letter reason."""
    got = decode_event(data)
    if isinstance(got, Rejected):
        assert got.reason and got.error
        return got.reason
    assert isinstance(got, dict)
    return "ok"


def _encode(rng: random.Random, text: str) -> bytes:
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.05 and data:  # a stray invalid byte
        i = rng.randrange(len(data))
        data = data[:i] + bytes([rng.choice((0x80, 0xC3, 0xFF))]) + data[i:]
    return data


def ceql_input(rng: random.Random) -> str:
    return mutate(rng, rng.choice(CEQL_SEEDS), CEQL_TOKENS)


def jsonl_input(rng: random.Random) -> bytes:
    lines = [mutate(rng, rng.choice(JSON_SEEDS), JSON_TOKENS) for _ in range(rng.randint(1, 3))]
    return _encode(rng, "\n".join(lines))


def csv_input(rng: random.Random) -> bytes:
    return _encode(rng, mutate(rng, rng.choice(CSV_SEEDS), CSV_TOKENS))


def json_value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value; containers nest up to 6 deep, occasionally 100."""
    roll = rng.random()
    if depth < 6 and roll < 0.3:
        return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 6 and roll < 0.5:
        return {rng.choice("abtx"): json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if roll < 0.52:
        return [[[[[[[[[[1]]]]]]]]]] * 10 if rng.random() < 0.5 else nested_list(100)
    return rng.choice((None, True, 0, -1, 2**70, 1.5, "", "A", "é\U0001f600", "x" * 1000))


def nested_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def record_input(rng: random.Random) -> bytes:
    if rng.random() < 0.3:
        event = {"type": rng.choice(("A", 1, None)), "v": json_value(rng)}
        return json.dumps(event).encode()
    return _encode(rng, mutate(rng, rng.choice(JSON_SEEDS), JSON_TOKENS))


# name -> (make an input, check it)
TARGETS: dict[str, tuple[Callable[[random.Random], Any], Callable[[Any], str]]] = {
    "ceql": (ceql_input, check_ceql),
    "jsonl": (jsonl_input, check_jsonl),
    "csv": (csv_input, check_csv),
    "records": (record_input, check_record),
}


def run(name: str, examples: int, seed: int) -> list[str]:
    """Fuzz one target; print a summary line; return the failures, with their inputs."""
    rng = random.Random(f"{name}:{seed}")
    make, check = TARGETS[name]
    outcomes: Counter[str] = Counter()
    failures: list[str] = []
    start = time.perf_counter()
    for i in range(examples):
        case = make(rng)
        try:
            outcome = check(case)
        except Exception:
            outcome = "UNEXPECTED"
            failures.append(f"{name} #{i}: {case!r:.300}\n{traceback.format_exc(limit=-4)}")
        outcomes[outcome] += 1
    spent = time.perf_counter() - start
    summary = ", ".join(f"{k} {v}" for k, v in outcomes.most_common())
    print(f"{name}: {examples} inputs in {spent:.0f} s: {summary}", flush=True)
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--examples", type=int, default=10_000, help="inputs per target")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=sorted(TARGETS), action="append")
    args = parser.parse_args(argv)
    failures: list[str] = []
    for name in args.only or TARGETS:
        failures += run(name, args.examples, args.seed)
    for failure in failures[:20]:
        print(failure, file=sys.stderr)
    print(f"{len(failures)} unexpected exceptions")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""AFTER MATCH SKIP over any row pattern: the standard's matches of one partition, in
a stream.

SQL:2016 tries start rows in order; from a start row it takes the *preferred* match
(the first parse in preferment order, ``nfa``), else tries the next row; after a match
the next start row follows from the skip mode (past its last row, its first row
plus one, or the first / last row bound to a variable). ``PartitionMatcher`` finds
those matches row by row with a Pike VM over the ordered NFA: its threads, each a
reading state and the start row of its parse, are kept in priority order (earlier
start first, then preferment), at most one per state (per state and start under a
window, where an earlier start may leave the window before a later one). A thread
reaching the final state records a match and cuts every thread below it; the match is
final once no thread above it is alive. Then the next start row may lie behind the
current row (a greedy ``B+`` kept the match open): the rows from it are run again
from the buffer, which holds the rows since the earliest live start.

Cost per row: O(states) thread steps (O(states × starts in the window) under WITHIN),
plus the replays: a row is read again once per match that ends before it and becomes
final after it. The DEFINE conditions must judge a row alone (its own attributes and
PREV): threads in one state are then interchangeable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cerfleet.match_recognize import syntax as s
from cerfleet.match_recognize.nfa import labels, nfa

__all__ = ["Match", "PartitionMatcher", "Skip"]

Row = Mapping[str, Any]
# (kind, variable): kind PAST LAST ROW, TO NEXT ROW, TO FIRST or TO LAST.
Skip = tuple[str, str | None]
# A DEFINE judging one row (its own values and its lagged ones): variable, row.
RowCond = Callable[[str, Row], bool]
# A match: the positions and rows it covers.
Match = tuple[list[int], list[Row]]


class PartitionMatcher:
    """One partition's search. ``feed(position, row, time)`` returns the matches that
    became final at that row, in order; ``time`` is the row's window clock (None:
    it has none and can neither start nor end a match under a window)."""

    def __init__(
        self, regex: s.Regex, cond: RowCond, skip: Skip, window: float | None = None
    ) -> None:
        self.regex = regex
        self.machine = nfa(regex)
        self.cond = cond
        self.skip = skip
        self.window = window
        self.count = 0  # rows of the partition seen
        self.base = 0  # partition index of buffer[0]
        self.buffer: list[tuple[int, Row, float | None]] = []
        self.next_start = 0  # the earliest start row still to try
        self.threads: list[tuple[int, int]] = []  # (reading state, start row), by priority
        self.best: tuple[int, int] | None = None  # (start, end) of the match found so far

    @property
    def idle(self) -> bool:
        return not self.threads and self.best is None

    def feed(self, position: int, row: Row, time: float | None) -> list[Match]:
        self.buffer.append((position, row, time))
        self.count += 1
        return self._run(self.count - 1)

    def finish(self) -> list[Match]:
        """The end of the input: no thread reads another row, so pending matches are
        final (after each, the rows from the next start row are read again)."""
        out: list[Match] = []
        while self.threads or self.best is not None:
            self.threads = []
            if self.best is None:
                break
            start, end = self.best
            out.append(self._match(start, end))
            self.next_start = self._next_start(start, end)
            self.best = None
            if self.next_start < self.count:
                out += self._run(self.next_start)
        self.next_start = max(self.next_start, self.count)
        self._trim()
        return out

    def _run(self, i: int) -> list[Match]:
        """Read rows i, i + 1, ... up to the last one received, each time a match
        becomes final going back to its next start row."""
        out: list[Match] = []
        while True:
            self._step(i)
            if self.best is not None and not self.threads:
                start, end = self.best
                out.append(self._match(start, end))
                self.next_start = self._next_start(start, end)
                self.best = None
                i = self.next_start  # the rows from there are read again
            elif not self.threads and self.best is None:
                self.next_start = max(self.next_start, i + 1)
                i += 1
            else:
                i += 1
            if i >= self.count:
                break
        self._trim()
        return out

    def _row(self, i: int) -> tuple[int, Row, float | None]:
        return self.buffer[i - self.base]

    def _step(self, i: int) -> None:
        """Read partition row i with every live thread (and a new start if no match is
        pending: a start after a pending match's could never be taken)."""
        machine, window = self.machine, self.window
        _, row, time = self._row(i)
        threads = self.threads
        if self.best is None and i >= self.next_start and (window is None or time is not None):
            taken = {self._key(q, st) for q, st in threads}
            threads = list(threads)
            for q in machine.closure[machine.start]:
                if self._key(q, i) not in taken:
                    threads.append((q, i))
                    taken.add(self._key(q, i))
        new: list[tuple[int, int]] = []
        seen: set[tuple[int, int] | int] = set()
        verdicts: dict[str, bool] = {}
        for q, st in threads:
            if window is not None and time is not None:
                first = self._row(st)[2]
                assert first is not None  # a start row has a clock under a window
                if time - first > window:
                    continue  # its match would be too long
            step = machine.reads[q]
            assert step is not None
            var, nxt = step
            ok = verdicts.get(var)
            if ok is None:
                ok = verdicts[var] = self.cond(var, row)
            if not ok:
                continue
            cut = False
            for p in machine.closure[nxt]:
                if p == machine.final:
                    if window is None or time is not None:
                        self.best = (st, i)
                        cut = True  # every thread after this one is less preferred
                        break
                    continue  # a row without a clock ends no match under a window
                key = self._key(p, st)
                if key not in seen:
                    seen.add(key)
                    new.append((p, st))
            if cut:
                break
        self.threads = new

    def _key(self, q: int, start: int) -> tuple[int, int] | int:
        return q if self.window is None else (q, start)

    def _match(self, start: int, end: int) -> Match:
        rows = [self._row(k) for k in range(start, end + 1)]
        return [p for p, _, _ in rows], [r for _, r, _ in rows]

    def _next_start(self, start: int, end: int) -> int:
        kind, var = self.skip
        if kind == "PAST LAST ROW":
            return end + 1
        if kind in ("TO FIRST", "TO LAST"):
            rows = [r for _, r, _ in (self._row(k) for k in range(start, end + 1))]
            names = labels(self.regex, rows, lambda v, k, _: self.cond(v, rows[k]))
            bound = [k for k, name in enumerate(names) if name == var]
            if bound:
                target = start + (bound[0] if kind == "TO FIRST" else bound[-1])
                if target > start:
                    return target
            # The standard's error (no row bound to the variable, or a skip back to
            # the match's own first row, which would loop): resume as TO NEXT ROW.
        return start + 1

    def _trim(self) -> None:
        keep = min([self.next_start, *(st for _, st in self.threads)])
        if self.best is not None:
            keep = min(keep, self.best[0])
        keep = min(keep, self.count)
        if keep > self.base:
            del self.buffer[: keep - self.base]
            self.base = keep

    def export(self) -> dict[str, Any]:
        """The state as JSON-ready data (rows as given)."""
        return {
            "count": self.count,
            "base": self.base,
            "buffer": [[p, dict(r), t] for p, r, t in self.buffer],
            "next_start": self.next_start,
            "threads": [list(t) for t in self.threads],
            "best": None if self.best is None else list(self.best),
        }

    def load(self, data: Mapping[str, Any]) -> None:
        self.count = data["count"]
        self.base = data["base"]
        self.buffer = [(p, r, t) for p, r, t in data["buffer"]]
        self.next_start = data["next_start"]
        self.threads = [(q, st) for q, st in data["threads"]]
        self.best = None if data["best"] is None else (data["best"][0], data["best"][1])

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

A DEFINE reading other rows of the match (``B.price > A.price``, ``FIRST(A.price)``,
``LAST(B.price, 1)``) makes a thread's future depend on its path: threads are then
kept one per (state, path summary), the summary holding the rows those reads can
still reach (``paths``), in the same priority order, so the preferred match still
wins. At most ``MAX_THREADS`` threads live in a partition; a query and stream that
would need more fail (``TooManyThreads``) rather than grow without bound.

Cost per row: O(states) thread steps (O(states × starts in the window) under WITHIN);
with DEFINEs reading other rows, O(states × distinct path summaries) (times starts in
the window under WITHIN), each step evaluating the running DEFINE once; plus the
replays: a row is read again once per match that ends before it and becomes final
after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cerfleet.errors import EvaluationLimit
from cerfleet.match_recognize import syntax as s
from cerfleet.match_recognize.nfa import labels, nfa
from cerfleet.match_recognize.paths import PathReads, Summary

__all__ = ["MAX_THREADS", "Match", "PartitionMatcher", "Skip", "TooManyThreads"]

# Live threads of one partition; DEFINEs reading other rows over long greedy runs
# could otherwise hold one per path (untrusted queries and streams).
MAX_THREADS = 10_000


class TooManyThreads(EvaluationLimit):
    """A partition's search would hold more than ``MAX_THREADS`` threads."""


Row = Mapping[str, Any]
# (kind, variable): kind PAST LAST ROW, TO NEXT ROW, TO FIRST or TO LAST.
Skip = tuple[str, str | None]
# A DEFINE judging one row (its own values and its lagged ones): variable, row.
RowCond = Callable[[str, Row], bool]
# A thread: its reading state, start row and path summary (``paths``).
Thread = tuple[int, int, Summary]
# What makes threads interchangeable (``PartitionMatcher._key``).
_Key = int | tuple[int, int] | tuple[int, Summary] | tuple[int, int, Summary]
# A match: the positions and rows it covers.
Match = tuple[list[int], list[Row]]


class PartitionMatcher:
    """One partition's search. ``feed(position, row, time)`` returns the matches that
    became final at that row, in order; ``time`` is the row's window clock (None:
    it has none and can neither start nor end a match under a window)."""

    def __init__(
        self,
        regex: s.Regex,
        cond: RowCond,
        skip: Skip,
        window: float | None = None,
        paths: PathReads | None = None,
    ) -> None:
        self.regex = regex
        self.machine = nfa(regex)
        self.cond = cond
        self.skip = skip
        self.window = window
        self.paths = paths if paths else None
        self.empty: Summary = () if self.paths is None else self.paths.empty
        self.count = 0  # rows of the partition seen
        self.base = 0  # partition index of buffer[0]
        self.buffer: list[tuple[int, Row, float | None]] = []
        self.next_start = 0  # the earliest start row still to try
        self.threads: list[Thread] = []  # by priority
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
            empty = self.empty
            taken = {self._key(q, st, sm) for q, st, sm in threads}
            threads = list(threads)
            for q in machine.closure[machine.start]:
                key = self._key(q, i, empty)
                if key not in taken:
                    threads.append((q, i, empty))
                    taken.add(key)
        paths = self.paths
        new: list[Thread] = []
        seen: set[_Key] = set()
        verdicts: dict[str, bool] = {}
        for q, st, sm in threads:
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
            if paths is not None:
                if not paths.holds(var, sm, i, row, self._row_values):
                    continue
                sm = paths.extend(sm, var, i)
            cut = False
            for p in machine.closure[nxt]:
                if p == machine.final:
                    if window is None or time is not None:
                        self.best = (st, i)
                        cut = True  # every thread after this one is less preferred
                        break
                    continue  # a row without a clock ends no match under a window
                key = self._key(p, st, sm)
                if key not in seen:
                    seen.add(key)
                    new.append((p, st, sm))
            if cut:
                break
        if len(new) > MAX_THREADS:
            raise TooManyThreads(
                f"MATCH_RECOGNIZE: a partition would hold more than {MAX_THREADS} partial "
                "matches (DEFINEs reading other rows keep one per path they can tell apart); "
                "bound the pattern (a quantifier's maximum, WITHIN) or narrow PARTITION BY"
            )
        self.threads = new

    def _row_values(self, k: int) -> Row:
        return self._row(k)[1]

    def _key(self, q: int, start: int, summary: Summary) -> _Key:
        # Without a window an earlier start in the same state and summary is preferred
        # and its future is the same: the later one is dropped. A bare state when no
        # DEFINE reads other rows (the common case stays as cheap as before).
        if self.window is None:
            return q if self.paths is None else (q, summary)
        return (q, start) if self.paths is None else (q, start, summary)

    def _match(self, start: int, end: int) -> Match:
        rows = [self._row(k) for k in range(start, end + 1)]
        return [p for p, _, _ in rows], [r for _, r, _ in rows]

    def _next_start(self, start: int, end: int) -> int:
        kind, var = self.skip
        if kind == "PAST LAST ROW":
            return end + 1
        if kind in ("TO FIRST", "TO LAST"):
            rows = [r for _, r, _ in (self._row(k) for k in range(start, end + 1))]
            names = labels(
                self.regex, rows, self._label_cond(rows, start), running=self.paths is not None
            )
            bound = [k for k, name in enumerate(names) if name == var]
            if bound:
                target = start + (bound[0] if kind == "TO FIRST" else bound[-1])
                if target > start:
                    return target
            # The standard's error (no row bound to the variable, or a skip back to
            # the match's own first row, which would loop): resume as TO NEXT ROW.
        return start + 1

    def _label_cond(self, rows: list[Row], start: int) -> Callable[[str, int, Sequence[str]], bool]:
        """The DEFINEs as ``labels`` sees them (the labels before a row give its path)."""
        paths = self.paths

        def cond(var: str, k: int, before: Sequence[str]) -> bool:
            if not self.cond(var, rows[k]):
                return False
            if paths is None:
                return True
            sm = paths.empty
            for j, name in enumerate(before):
                sm = paths.extend(sm, name, start + j)
            return paths.holds(var, sm, start + k, rows[k], lambda j: rows[j - start])

        return cond

    def _trim(self) -> None:
        keep = min([self.next_start, *(st for _, st, _ in self.threads)])
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
            "threads": [[q, st, [list(kept) for kept in sm]] for q, st, sm in self.threads],
            "best": None if self.best is None else list(self.best),
        }

    def load(self, data: Mapping[str, Any]) -> None:
        self.count = data["count"]
        self.base = data["base"]
        self.buffer = [(p, r, t) for p, r, t in data["buffer"]]
        self.next_start = data["next_start"]
        self.threads = [
            (t[0], t[1], tuple(tuple(kept) for kept in t[2]) if len(t) > 2 else self.empty)
            for t in data["threads"]
        ]
        self.best = None if data["best"] is None else (data["best"][0], data["best"][1])

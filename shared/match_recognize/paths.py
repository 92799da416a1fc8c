"""What a DEFINE reading other rows of the match can still read of a thread's path.

A running read (``pattern.RunningAttr``: ``A.price`` = ``LAST(A.price)``,
``FIRST(A.price, n)``, ``LAST(B.price, 1)`` in DEFINE B, ``FIRST(price)`` over any
variable) reaches, at any later row, only the first n + 1 or the last n + 1 rows bound
to its variable. A thread's *summary* keeps exactly those rows (partition indexes) for
every (variable, FIRST or LAST) some DEFINE reads, with n the largest offset read.
Two threads in one NFA state with equal summaries judge every later row alike, so the
selection's Pike VM keeps one thread per (state, summary) and the preferred one of
them, as it keeps one per state when no DEFINE reads other rows.

Indexes rather than values: a summary is then hashable and JSON-ready whatever the
attribute values are, at the price of merging fewer threads (two rows with equal
values stay apart).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cerfleet import pattern
from cerfleet.evaluation.running import RunningPredicate

__all__ = ["PathReads", "Summary"]

# Per tracked (variable, FIRST or LAST): the partition indexes of the rows kept.
Summary = tuple[tuple[int, ...], ...]
Row = Mapping[str, Any]


class PathReads:
    """The running DEFINEs of a query (``running``: variable → its running part)."""

    def __init__(self, running: Mapping[str, RunningPredicate]) -> None:
        self.running = dict(running)
        depth: dict[tuple[str | None, bool], int] = {}
        for check in self.running.values():
            for read in check.reads:
                key = (read.var, read.last)
                depth[key] = max(depth.get(key, 0), read.n + 1)
        self.tracked = sorted(depth.items(), key=lambda kv: (kv[0][0] or "", kv[0][1]))
        self.slot = {key: k for k, (key, _) in enumerate(self.tracked)}
        self.empty: Summary = tuple(() for _ in self.tracked)

    def __bool__(self) -> bool:
        return bool(self.running)

    def extend(self, summary: Summary, var: str, i: int) -> Summary:
        """The summary after the thread binds partition row ``i`` to ``var``."""
        if not self.tracked:
            return summary
        out: list[tuple[int, ...]] = []
        for ((v, last), depth), kept in zip(self.tracked, summary, strict=True):
            if v is not None and v != var:
                out.append(kept)
            elif last:
                out.append((*kept, i)[-depth:])
            else:
                out.append(kept if len(kept) >= depth else (*kept, i))
        return tuple(out)

    def holds(
        self, var: str, summary: Summary, i: int, row: Row, row_at: Callable[[int], Row]
    ) -> bool:
        """Whether ``var``'s running part holds at partition row ``i`` (``row``), bound
        to ``var`` after the path ``summary`` (``row_at``: a partition row by index)."""
        check = self.running.get(var)
        if check is None:
            return True
        now = self.extend(summary, var, i)

        def value(read: pattern.RunningAttr) -> Any:
            kept = now[self.slot[(read.var, read.last)]]
            if read.n >= len(kept):
                return None  # fewer rows bound so far: the standard's missing value
            k = kept[-1 - read.n] if read.last else kept[read.n]
            return (row if k == i else row_at(k)).get(read.attr)

        return check.holds_reading(row, value)

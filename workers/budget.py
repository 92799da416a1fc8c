"""The per-query time budget: a query too slow for its worker is suspended there, replayably.

``PartitionState.process`` times each query's evaluation of each batch of a keyed
partition. A query whose evaluation of one batch takes over the worker's
``query_time_budget`` (seconds; 0: no budget) is *suspended* on that keyed
partition from the offset after the batch (``Suspension.offset``): it is given
no record at or past that offset, its state (evaluator, outputs numbered so far)
is kept and checkpointed, and the partition's other queries go on. It runs
again only as another version: removing the query retires it, and a new
version starts from its own state at the first record routed after it, as any
new version does. A query is not interrupted inside a batch: the longest one
slow query can hold up the others is its time on one batch (which
``batch_size``, ``max_outputs_per_event`` and linear-time ``LIKE`` bound).

Wall-clock time differs between a run and its replay, so a successor never
remakes a decision its predecessor recorded; it reads it back:

- The record is the partition's checkpoint: it carries each suspension (query,
  version, offset, why). The worker writes a checkpoint as soon as it decides
  (its outputs so far flushed first; with transactions, one transaction holds
  both), before it evaluates any later record of the partition, and reports the
  suspension (log, ``/healthz``, ``cerfleet_worker_suspended_queries``) only
  once that checkpoint is written (``Suspension.recorded``; a round out of time
  is tried again after the partition's next batch). That checkpoint resumes at
  or past the suspension's offset, so a successor restoring it, or any later
  one, skips the query from the same offset; checkpoints carry the suspension
  on for as long as that version of the query runs.
- Until then the decision binds nothing: no output published depends on it, so
  a successor replaying from an older checkpoint may decide otherwise (later,
  or not at all) and the output topic still holds the output of one run. One
  rule keeps that true: no query is suspended while its replay is recomputing
  outputs a predecessor already published (``emitted < suppress``), so every
  output published lies below the offset a suspension applies from.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Suspension:
    """Query ``version`` gets no record at or past keyed ``offset`` of its partition,
    because its evaluation of ``records`` records took ``seconds``, over ``budget``."""

    version: int
    offset: int
    seconds: float
    records: int
    budget: float
    recorded: bool = False  # in a checkpoint that was written (or read back)
    error: str | None = None  # an evaluation limit's reason, instead of the time's

    def reason(self) -> str:
        if self.error is not None:
            return self.error
        return (
            f"evaluating a batch of {self.records} records took {self.seconds:.3f} s, "
            f"over the budget of {self.budget:g} s"
        )

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "version": self.version,
            "offset": self.offset,
            "seconds": self.seconds,
            "records": self.records,
            "budget": self.budget,
        }
        if self.error is not None:  # written as before for a time-budget suspension
            doc["error"] = self.error
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Suspension:
        return cls(
            int(doc["version"]),
            int(doc["offset"]),
            float(doc["seconds"]),
            int(doc["records"]),
            float(doc["budget"]),
            recorded=True,
            error=doc.get("error"),
        )


@dataclass
class Suspensions:
    """One keyed partition's suspended queries, by name."""

    by_name: dict[str, Suspension] = field(default_factory=dict)

    def of(self, name: str, version: int) -> Suspension | None:
        found = self.by_name.get(name)
        return found if found is not None and found.version == version else None

    def rows(self, name: str, version: int, rows: list[int], offsets: list[int]) -> list[int]:
        """The rows of a batch (indexes into ``offsets``) this query version is given."""
        found = self.of(name, version)
        if found is None:
            return rows
        return [i for i in rows if offsets[i] < found.offset]

    def judge(
        self,
        name: str,
        version: int,
        seconds: float,
        records: int,
        budget: float,
        next_offset: int,
        replaying: bool,
    ) -> Suspension | None:
        """Suspend the query from ``next_offset`` if evaluating ``records`` took it over
        ``budget`` (0: none), unless it is suspended already or still ``replaying``
        outputs a predecessor published; returns the new suspension."""
        if budget <= 0 or seconds <= budget or replaying or self.of(name, version) is not None:
            return None
        found = self.by_name[name] = Suspension(version, next_offset, seconds, records, budget)
        return found

    def fail(self, name: str, version: int, offset: int, records: int, error: str) -> None:
        """Suspend the query from ``offset``: evaluating the batch starting there hit an
        evaluation limit (``EvaluationLimit``). Unlike the time, the limit is a function
        of the records, so a replay fails at the same record and suspends it again."""
        self.by_name[name] = Suspension(version, offset, 0.0, records, 0.0, error=error)

    def live(self, versions: Mapping[str, int]) -> dict[str, Suspension]:
        """The suspensions of the query versions running (``versions``: name → version);
        a removed or replaced version's suspension is over."""
        # A copy first: /healthz and /metrics read this from another thread.
        return {n: s for n, s in list(self.by_name.items()) if versions.get(n) == s.version}

    def unrecorded(self) -> bool:
        return any(not s.recorded for s in self.by_name.values())

    def mark_recorded(self, where: str) -> None:
        """The checkpoint holding the new suspensions is written: report them."""
        for name, s in sorted(self.by_name.items()):
            if not s.recorded:
                self.by_name[name] = replace(s, recorded=True)
                log.warning(
                    "%s: query %r (version %d) suspended from offset %d: %s; the other "
                    "queries go on; it runs again as a new version (resubmit it) or when "
                    "removed",
                    where,
                    name,
                    s.version,
                    s.offset,
                    s.reason(),
                )

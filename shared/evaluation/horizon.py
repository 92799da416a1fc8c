"""The lateness horizon: how per-key memory stays bounded by the window.

Under a time or attribute window, a ``PARTITION BY`` key whose runs have all
expired can only be forgotten if no later event of that key can still reach back
into its window, and a key evicted while idle can only forget its latest clock
(which makes its later events late, see ``query_evaluator``) if no later event
can fall below it. Per-key time alone promises neither: a key's next event may
carry any clock at or above its own latest one. So memory would grow with every
key ever seen (1M one-event keys: 6x the memory of 1,000 keys).

The horizon adds one global rule: an event whose clock is more than
``lateness`` below the newest clock seen so far in the whole stream (over the
events that belong to a partition) is *late* in every partition, like an event
below its own key's latest clock. Below the low-watermark
``floor = newest - lateness`` nothing more can arrive, hence:

- a key whose latest clock ``L`` is below ``floor - ε`` (``ε`` the window) holds
  runs that started at or before ``L`` and can only end at an event at or before
  ``L + ε < floor``: none can ever complete, so the key's substream is dropped
  (``sweep``) even though it is not idle. Only under ALL and STRICT, whose runs
  never interact: under NEXT, LAST and MAX a run that cannot complete (one begun
  at an event without a clock, say) may still outrank a later complex event, so
  those keys go only once idle, as without the horizon; likewise a key whose
  events all lacked a clock;
- an evicted key's latest clock below ``floor`` needs no remembering: every
  later event is at or above ``floor`` anyway.

Which keys are dropped when is not observable in the output: a dropped key behaves
as its dead-but-kept substream would. The output differs from per-key lateness only
on events more than ``lateness`` behind the stream's newest clock, which are
dropped (and counted in ``late``) instead of opening or extending their key.
``DEFAULT_LATENESS`` is a minute of milliseconds (time windows measure
milliseconds; attribute windows their attribute's unit). ``QueryEvaluator.horizon =
None`` restores pure per-key lateness with unbounded memory.

Keys are visited in the order they had events (``touched``), oldest first, and a
sweep stops at the first key still alive: O(1) amortised per event. A key whose
clock is ahead of the others delays the sweep of the keys behind it only until the
floor passes it.

``touched`` is a queue of keys, each with its latest clock when touched, not an
ordered set: an ``OrderedDict`` entry cost about 210 bytes per live key, a queue slot
8 (the clock object is the substream's own). A key touched again leaves its older
entries behind; the sweep knows one for stale by its clock, below the key's latest,
and drops it. Entries of evicted keys go the same way (their key is no substream).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from cerfleet.evaluation.evicted import EvictedClocks
from cerfleet.evaluation.substream import SubstreamEvaluator

if TYPE_CHECKING:
    import numpy as np
else:
    from cerfleet.lazy_numpy import np

Key = tuple[Any, ...]

DEFAULT_LATENESS = 60_000.0


class _Owner(Protocol):
    substreams: dict[Key, SubstreamEvaluator]
    evicted: EvictedClocks


class Horizon:
    """The newest clock seen and the live keys in the order of their last event."""

    __slots__ = ("drops_live", "epsilon", "lateness", "newest", "touched", "touched_at")

    def __init__(
        self, epsilon: float, lateness: float = DEFAULT_LATENESS, *, drops_live: bool = True
    ) -> None:
        if not lateness >= 0:
            raise ValueError(f"lateness must be a number >= 0, not {lateness!r}")
        self.epsilon = epsilon
        self.lateness = lateness
        self.drops_live = drops_live  # whether dead-but-not-idle substreams may go
        self.newest = float("-inf")
        # Keys in the order they were touched, and their latest clock then.
        self.touched: deque[Key] = deque()
        self.touched_at: deque[float] = deque()

    def behind(self, clock: float) -> bool:
        """Whether an event at ``clock`` is late for every key."""
        return clock < self.newest - self.lateness

    def see(self, clock: float) -> None:
        if clock > self.newest:
            self.newest = clock

    def batch(self, clocks: np.ndarray, keyed: np.ndarray) -> np.ndarray:
        """The rows of a batch late for every key (``keyed``: the rows in a partition,
        the only ones whose clocks move ``newest``), as ``behind``/``see`` row by row."""
        moving = np.where(keyed, clocks, np.nan)
        before = np.fmax.accumulate(np.concatenate(([self.newest], moving)))
        self.newest = float(before[-1])
        with np.errstate(invalid="ignore"):
            return np.asarray(clocks < before[:-1] - self.lateness) & keyed

    def touch(self, key: Key, clock: float) -> None:
        """The key had events and is live; ``clock``: its latest clock now."""
        if self.drops_live:
            self.touched.append(key)
            self.touched_at.append(clock)

    def sweep(self, owner: _Owner) -> None:
        """Drop the keys no later event can revive and the evicted clocks below the floor."""
        floor = self.newest - self.lateness
        if floor == float("-inf"):
            return
        dead_below = floor - self.epsilon
        touched, touched_at, substreams = self.touched, self.touched_at, owner.substreams
        while touched:
            sub = substreams.get(touched[0])
            alive = sub is not None and not sub.last_clock < dead_below
            # An alive key's entry below its latest clock is stale: it was touched since.
            if alive and not touched_at[0] < sub.last_clock:  # type: ignore[union-attr]
                break
            key = touched.popleft()
            touched_at.popleft()
            # No clock yet: nothing says its runs are dead; touched again by its next event.
            if sub is not None and not alive and sub.last_clock != float("-inf"):
                del substreams[key]
        owner.evicted.expire(floor, self.lateness)

    def restored(self, owner: _Owner, newest: float) -> None:
        """After a snapshot restore: the newest clock it held; live keys in any order
        (the order only decides when keys are swept, never an output)."""
        self.newest = newest
        subs = owner.substreams if self.drops_live else {}
        self.touched = deque(subs)
        self.touched_at = deque(sub.last_clock for sub in subs.values())

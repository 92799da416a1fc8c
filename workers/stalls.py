"""Stalls: a worker process that stood still (SIGSTOP, a VM pause) for over a session
timeout may have lost its partitions to a successor without a rebalance callback.

A ticker thread notices the gap; the loop then drops what it fetched or evaluated
since, puts each partition back to be restored, and restores nothing until the group
confirms that this member still owns them (same member id, an offset commit
accepted). Part of ``Ownership``, kept apart for its size.

The main thread does not wait for the ticker's next tick: a last tick older than a
session timeout says the same (``_stood_still``), so a batch evaluated across the stop
is dropped, and a batch being published when the process stopped publishes at most one
more output after it resumes. Without transactions, what a zombie can still repeat is
that one output and those its producer held, unsent, when it stopped.
"""

from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTP

from cerfleet.fleet.settings import WorkerSettings
from cerfleet.workers.partition import PartitionState

__all__ = ["TP", "CheckpointTimeout", "StallWatch"]

log = logging.getLogger(__name__)

TP = tuple[str, int]


class CheckpointTimeout(Exception):
    """The producers could not be flushed in time: no checkpoint was written."""


class StallWatch:
    """Noticing a stall and confirming ownership after it (mixed into ``Ownership``)."""

    settings: WorkerSettings
    states: dict[TP, PartitionState]
    consumer: Consumer
    _pending: dict[TP, None]
    _txn: dict[TP, Producer]
    # A stall seen and not yet handled (a plain flag, set by the ticker thread or the
    # loop: the publishing loop reads it once an output); the ticker's last tick
    # (monotonic) and the gap that makes a stall, never one before the ticker starts; the
    # member id the last rebalance callback saw; the partitions to probe ownership with.
    _stalled: bool = False
    _last_tick: float = float("inf")
    _stall_limit: float = float("inf")
    _member: str | None
    _suspect: dict[TP, int]
    _registry_stale: bool

    def _flush(self, deadline: float) -> None:
        raise NotImplementedError  # Ownership's

    def _close_transactional(self, tp: TP, producer: Producer) -> None:
        raise NotImplementedError  # Ownership's

    def _session_timeout(self) -> float:
        s = self.settings
        ms = s.consumer.get("session.timeout.ms", s.kafka.get("session.timeout.ms", "45000"))
        return float(ms) / 1000

    def _start_stall_watch(self) -> threading.Event:
        """Starts the ticker thread; setting the event returned stops it."""
        self._stall_limit = self._session_timeout()
        self._last_tick = time.monotonic()
        stop = threading.Event()
        threading.Thread(
            target=self._watch_stalls, args=(stop,), name="stall-watch", daemon=True
        ).start()
        return stop

    def _watch_stalls(self, stop: threading.Event) -> None:
        """A ticker thread: a gap of over a session timeout between its ticks means the
        whole process stood still (SIGSTOP, a VM pause), heartbeats included."""
        limit = self._stall_limit
        while not stop.wait(0.1):
            now = time.monotonic()
            # The flag before the tick: the main thread sees one or the other.
            if now - self._last_tick > limit:
                self._stalled = True
            self._last_tick = now

    def _stood_still(self) -> bool:
        """Whether the process stood still for over a session timeout: the ticker saw it,
        or has not ticked for that long (it resumes with the main thread, not before)."""
        if self._stalled:
            return True
        now = time.monotonic()
        if now - self._last_tick > self._stall_limit:
            self._stalled = True
            self._last_tick = now  # seen: the ticker's next tick must not see it again
            return True
        return False

    def _check_stall(self) -> bool:
        """Whether the partitions may have been lost to a stall (see ``_watch_stalls``).
        The group may have given them to a successor meanwhile, so what was fetched or
        evaluated since must not be published and no checkpoint written: each partition
        goes back to being restored (from its checkpoint and the output tails, once all
        is flushed), and nothing is restored until the group confirms that this member
        still owns them."""
        if not self._stood_still():
            return False
        self._stalled = False
        log.warning("stalled for over a session timeout: the partitions may have moved on")
        try:
            self._flush(time.monotonic() + self.settings.revoke_timeout)
        except CheckpointTimeout as exc:
            log.error("flush after a stall: %s", exc)
        for tp, state in list(self.states.items()):
            self._suspect[tp] = state.next_offset
            del self.states[tp]
            self._pending[tp] = None
            self._registry_stale = True
            self.consumer.pause([KafkaTP(*tp)])
            producer = self._txn.pop(tp, None)
            if producer is not None:
                # Its open transaction holds outputs the restore's read_committed scan
                # cannot see: abort them, and let the restore make them again.
                self._close_transactional(tp, producer)
        return True

    def _owner_confirmed(self) -> bool:
        """After a stall: whether this member still owns what it held (the same member id
        as at the last rebalance, and the group accepts its offset commit)."""
        if not self._suspect:
            return True
        owned = {tp: o for tp, o in self._suspect.items() if tp in self._pending}
        if owned:
            try:
                if self.consumer.memberid() != self._member:
                    raise KafkaException(KafkaError(KafkaError.UNKNOWN_MEMBER_ID))
                self.consumer.commit(
                    offsets=[KafkaTP(t, p, o) for (t, p), o in owned.items()],
                    asynchronous=False,
                )
            except KafkaException as exc:
                log.info("ownership not confirmed yet: %s", exc)
                return False
        log.info("still the owner after the stall: restoring %d partitions", len(owned))
        self._suspect.clear()
        return True

"""Offset commits that survive the rebalance window."""

from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

log = logging.getLogger(__name__)


def commit_with_retry(consumer: Consumer, offsets: list[TopicPartition], attempts: int = 5) -> bool:
    """Synchronous commit, retried while a rebalance is in progress (brokers, and the mock
    for the whole rebalance, reject commits then). False if it never went through: the
    records will be processed again, which consumers of keyed topics tolerate."""
    for attempt in range(attempts):
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return True
        except KafkaException as exc:
            code = exc.args[0].code() if exc.args else None
            if code not in (
                KafkaError.REBALANCE_IN_PROGRESS,
                KafkaError._WAIT_COORD,
                KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                KafkaError.NOT_COORDINATOR,
            ):
                log.warning("commit failed: %s", exc)
                return False
            time.sleep(0.2 * (attempt + 1))
    log.warning("commit still rejected after %d attempts", attempts)
    return False

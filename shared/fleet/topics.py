"""Make sure the fleet's topics exist, on real Kafka and on the local mock broker alike.

Topics are created through the Admin API where the broker supports it. The local
mock broker (:mod:`cerfleet.fleet.local_broker`) does not: its CreateTopics fails (or,
without a controller, stalls until the request times out). Processes started by
``cerfleet dev`` then ask the process hosting the broker, which creates topics with
the partition count wanted (:mod:`cerfleet.fleet.local_topics`); anywhere else a topic
the broker lacks is auto-created by a producer's metadata request and gets the
broker's default partition count and configs, which is logged. Metadata is read for
all topics at once, never for a named one, because a producer-side request for a named
topic may create it.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

# The same class as confluent_kafka.admin.NewTopic, which type checkers see as not re-exported.
from confluent_kafka.cimpl import NewTopic

from cerfleet.errors import CerfleetError
from cerfleet.fleet import local_topics

if TYPE_CHECKING:
    from confluent_kafka.admin._metadata import ClusterMetadata

__all__ = ["TopicError", "ensure_topics", "partition_count"]

logger = logging.getLogger(__name__)

# -1 asks the broker for its default.replication.factor (KIP-464, Kafka >= 2.4, which
# confluent-kafka 2.x sends); 1 is the retry for brokers that reject the default.
_REPLICATION_FACTORS = (-1, 1)
_VISIBILITY_POLL_S = 0.1
# Callers ensure the same topics again and again (every new query, every worker
# start); a partition-count mismatch is worth one warning per process, not each time.
_reported_mismatches: set[tuple[str, str, int, int]] = set()


class TopicError(CerfleetError, RuntimeError):
    """A topic is missing and could not be created, or metadata could not be read."""


def ensure_topics(
    client_config: dict[str, str],
    topics: Mapping[str, int],
    *,
    timeout: float = 10.0,
    configs: Mapping[str, Mapping[str, str]] | None = None,
    report_mismatch: bool = True,
) -> None:
    """Make sure each topic in ``topics`` (name -> wanted partition count) exists.

    Existing topics are left as they are; a different partition count is only
    logged, once per process, unless ``report_mismatch`` is false (for callers
    whose count is a mere default for new topics). ``configs`` maps a topic to
    the topic configs it is created with (``retention.ms`` …); they are not
    checked or changed on existing topics. ``client_config`` is a librdkafka
    configuration passed untouched to the clients. ``timeout`` bounds each broker
    round trip (metadata, creation, waiting for new topics to show in metadata),
    not the whole call.

    Raises :class:`TopicError` when metadata cannot be read or a topic is still
    missing afterwards.
    """
    for name, partitions in topics.items():
        if not name or partitions < 1:
            raise ValueError(f"invalid topic {name!r} with {partitions} partitions")
    if not topics:
        return
    configs = configs or {}
    admin = _admin(client_config)
    metadata = _metadata(admin, client_config, timeout)
    missing: dict[str, int] = {}
    for name, wanted in topics.items():
        if name not in metadata.topics:
            missing[name] = wanted
            continue
        actual = len(metadata.topics[name].partitions)
        mismatch = (client_config.get("bootstrap.servers", ""), name, actual, wanted)
        if report_mismatch and actual != wanted and mismatch not in _reported_mismatches:
            _reported_mismatches.add(mismatch)
            logger.warning(
                "topic %r has %d partitions, %d wanted; leaving it as it is", name, actual, wanted
            )
    if not missing:
        return
    not_created = _create(admin, metadata, missing, configs, timeout)
    local = local_topics.server_address()
    if not_created and local is not None:
        # The mock has no topic configs at all, so there is nothing to warn about.
        not_created = local_topics.create_topics(
            local, {name: missing[name] for name in not_created}, timeout
        )
    if not_created:
        _auto_create(client_config, not_created, timeout)
    metadata = _wait_visible(admin, client_config, missing, not_created, timeout)
    for name, reason in not_created.items():
        if configs.get(name):
            # Not silent: the broker's defaults (say, 7 days of retention) may be
            # exactly what the configs were there to avoid.
            logger.warning(
                "topic %r was auto-created because CreateTopics is unavailable (%s): it has "
                "the broker's default configs, not %s",
                name,
                reason,
                ", ".join(f"{k}={v}" for k, v in sorted(configs[name].items())),
            )
        if len(metadata.topics[name].partitions) == missing[name]:
            continue
        logger.warning(
            "topic %r was auto-created because CreateTopics is unavailable (%s): the broker's "
            "default partition count applies, %d partitions instead of the %d wanted",
            name,
            reason,
            len(metadata.topics[name].partitions),
            missing[name],
        )


def partition_count(client_config: dict[str, str], topic: str, timeout: float = 10.0) -> int:
    """The number of partitions of ``topic``; :class:`TopicError` if it is unknown."""
    metadata = _metadata(_admin(client_config), client_config, timeout)
    described = metadata.topics.get(topic)
    if described is None or not described.partitions:
        raise TopicError(f"topic {topic!r} does not exist")
    return len(described.partitions)


def _admin(client_config: dict[str, str]) -> AdminClient:
    config: dict[str, str | int | float | bool] = dict(client_config)
    return AdminClient(config)


def _metadata(admin: AdminClient, client_config: dict[str, str], timeout: float) -> ClusterMetadata:
    try:
        return admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        servers = client_config.get("bootstrap.servers", "?")
        raise TopicError(f"cannot read topic metadata from {servers}: {exc}") from exc


def _create(
    admin: AdminClient,
    metadata: ClusterMetadata,
    missing: Mapping[str, int],
    configs: Mapping[str, Mapping[str, str]],
    timeout: float,
) -> dict[str, str]:
    """Create ``missing`` with the Admin API; returns the topics it could not, with why."""
    if metadata.controller_id not in metadata.brokers:
        # No reachable controller (the mock without one reports id 0 and no such
        # broker): CreateTopics would only wait out the request timeout.
        reason = f"no controller among the brokers (controller id {metadata.controller_id})"
        return dict.fromkeys(missing, reason)
    not_created: dict[str, str] = {}
    pending = dict(missing)
    for replication_factor in _REPLICATION_FACTORS:
        retry: dict[str, int] = {}
        futures = admin.create_topics(
            [
                NewTopic(
                    name,
                    num_partitions=n,
                    replication_factor=replication_factor,
                    config=dict(configs.get(name, {})),
                )
                for name, n in pending.items()
            ],
            request_timeout=timeout,
        )
        for name, future in futures.items():
            outcome = _outcome(future, timeout)
            if outcome is None:
                continue
            code, text = outcome
            if code == KafkaError._UNSUPPORTED_FEATURE and replication_factor == -1:
                retry[name] = pending[name]  # maybe only the default replication factor
            elif code in (KafkaError._UNSUPPORTED_FEATURE, KafkaError._TIMED_OUT):
                not_created[name] = text
            else:
                raise TopicError(f"cannot create topic {name!r}: {text}")
        if not retry:
            break
        pending = retry
    return not_created


def _outcome(future: concurrent.futures.Future[None], timeout: float) -> tuple[int, str] | None:
    """None when the topic was created or already existed, else the error's code and text."""
    try:
        # The client resolves the future by its own request timeout; the margin
        # only guards against a future that is never resolved.
        future.result(timeout=timeout + 1.0)
    except KafkaException as exc:
        error = exc.args[0]
        if not isinstance(error, KafkaError):
            return KafkaError._FAIL, str(exc)
        if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return None  # created concurrently, e.g. by another coordinator
        return error.code(), error.str()
    except concurrent.futures.TimeoutError:
        return KafkaError._TIMED_OUT, "CreateTopics timed out"
    return None


def _auto_create(client_config: dict[str, str], topics: Mapping[str, str], timeout: float) -> None:
    # A producer's metadata request for a named topic makes a broker that allows
    # auto-creation (the mock always does) create it with its defaults.
    producer = Producer(client_config)
    for name in topics:
        try:
            producer.list_topics(topic=name, timeout=timeout)
        except KafkaException as exc:
            logger.warning("metadata request to auto-create topic %r failed: %s", name, exc)


def _wait_visible(
    admin: AdminClient,
    client_config: dict[str, str],
    topics: Mapping[str, int],
    not_created: Mapping[str, str],
    timeout: float,
) -> ClusterMetadata:
    # New topics reach every broker's metadata cache asynchronously.
    deadline = time.monotonic() + timeout
    while True:
        metadata = _metadata(admin, client_config, max(deadline - time.monotonic(), 0.1))
        absent = [
            name
            for name in topics
            if name not in metadata.topics or not metadata.topics[name].partitions
        ]
        if not absent:
            return metadata
        if time.monotonic() >= deadline:
            break
        time.sleep(_VISIBILITY_POLL_S)
    details = "; ".join(
        f"{name}: CreateTopics unavailable ({not_created[name]}) and auto-creation "
        "did not create it (auto.create.topics.enable=false?)"
        if name in not_created
        else f"{name}: created but not visible in metadata after {timeout:g} s"
        for name in absent
    )
    raise TopicError(f"topics missing: {details}")

"""Settings of the fleet's processes, as pydantic models.

Each value comes from, highest priority first: a command-line flag, an
environment variable ``CERFLEET_<FIELD>`` (dicts as JSON, e.g.
``CERFLEET_KAFKA='{"security.protocol": "SASL_SSL"}'``), a TOML file given with
``--config``, then the default. Kafka client settings (``kafka`` for every
client, ``consumer`` / ``producer`` for one kind) are librdkafka properties
passed through untouched, so SASL, SSL and tuning need no code here.
"""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from pydantic import Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from cerfleet.bounds import DEFAULT_MAX_OUTPUTS_PER_EVENT
from cerfleet.fleet.batching import FETCHING_CONSUMER
from cerfleet.fleet.records import RecordLimits

_CONFIG_FILE: ContextVar[Path | None] = ContextVar("cerfleet_config_file", default=None)

S = TypeVar("S", bound="FleetSettings")


class FleetSettings(BaseSettings):
    """What every fleet process shares: where Kafka is and the fleet's own topics."""

    model_config = SettingsConfigDict(env_prefix="CERFLEET_", extra="forbid")

    bootstrap_servers: str = "localhost:9092"
    kafka: dict[str, str] = Field(default_factory=dict)
    consumer: dict[str, str] = Field(default_factory=dict)
    producer: dict[str, str] = Field(default_factory=dict)
    registry_topic: str = "cerfleet.queries"
    keyed_topic_prefix: str = "cerfleet.keyed."
    dead_letter_topic: str = "cerfleet.dead-letters"
    # For output topics that ``submit``, or a worker about to publish, finds missing.
    # Keyed topics' default: keyed partition p writes to output partition p mod this,
    # so each then has an output partition of its own, which keeps the tail a worker
    # scans on takeover short. One key's outputs stay in order at any count.
    output_partitions: int = Field(8, ge=1)
    # Seconds a client command (submit, queries, produce, consume ...) waits for the
    # broker to answer before it gives up with one line: an unreachable broker is a
    # user mistake worth reporting, not a reason to hang.
    timeout: float = Field(10.0, gt=0)
    # Input records over either limit become dead letters (too_large, too_deep) at the
    # coordinator and the workers alike. Raising max_event_bytes past about 1 MB needs
    # message.max.bytes raised on the brokers and the clients (-X message.max.bytes=...).
    max_event_bytes: int = Field(512 * 1024, ge=1)
    max_event_depth: int = Field(64, ge=1, le=200)
    metrics_port: int | None = None
    metrics_host: str = "0.0.0.0"
    log_level: str = "INFO"

    @field_validator("kafka", "consumer", "producer", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        # librdkafka takes strings; TOML and JSON give ints and bools.
        if isinstance(value, dict):
            return {
                str(k): (str(v).lower() if isinstance(v, bool) else str(v))
                for k, v in value.items()
            }
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = _CONFIG_FILE.get()
        if path is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    def record_limits(self) -> RecordLimits:
        return RecordLimits(self.max_event_bytes, self.max_event_depth)

    def client_config(self) -> dict[str, str]:
        """librdkafka settings common to every client of this process."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.kafka}

    def consumer_config(self, **overrides: str) -> dict[str, str]:
        return {**self.client_config(), **FETCHING_CONSUMER, **overrides, **self.consumer}

    def producer_config(self, **overrides: str) -> dict[str, str]:
        return {**self.client_config(), **overrides, **self.producer}


class CoordinatorSettings(FleetSettings):
    group_id: str = "cerfleet-coordinator"
    keyed_partitions: int = Field(8, ge=1)
    batch_size: int = Field(10_000, ge=1)
    commit_interval: float = Field(1.0, gt=0)
    # Seconds an assigned input partition with nothing buffered and not read to its end
    # holds back the others; one with records left on the broker holds them back until
    # they come (see ``cerfleet.coordinator.time_merge``).
    merge_idle: float = Field(2.0, ge=0)
    # Seconds an input partition read to its end caps the others' records at its last
    # clock plus the skew its queries tolerate (their lateness horizon): what it gets
    # meanwhile is not late because the others were fetched first.
    merge_end_wait: float = Field(0.2, ge=0)
    # Records of one input partition the merge buffers before pausing it (until half have
    # gone; never fewer than two batches). Pausing makes the client drop what it had
    # prefetched of the partition and fetch it again on resume, so the default is what it
    # prefetches (librdkafka's ``queued.min.messages``). Routing 1M events from 20 input
    # partitions on tansu: 174-241k events/s with a cap of two batches (20,000 records),
    # 267-375k with this one (medians of seven runs, 207k and 349k); peak resident memory
    # 329 and 483 MB. A buffered record of 80 bytes holds roughly 300 to 400 (the client's
    # message object is 144 by ``tracemalloc``, its value about 110).
    merge_buffer: int = Field(100_000, ge=1)


class WorkerSettings(FleetSettings):
    group_id: str = "cerfleet-workers"
    checkpoint_topic_prefix: str = "cerfleet.checkpoints."
    checkpoint_interval: float = Field(1.0, gt=0)
    # Records per consume call: what a worker holds at once while it catches up. Every
    # record of a batch is alive until the batch is evaluated (its message, value, head,
    # decoded attributes), so a smaller batch is likelier to stay in the core's cache (1
    # MB of L2 a core where measured; a guess, but Kafka plays no part: see the figures
    # without it). A 1M-event backlog of the PARTITION BY query through tansu, six
    # alternating pairs: 166k events/s at the median with 2,000 against 147k with 10,000
    # (6.5 against 7.2 µs of CPU an event); without Kafka (``benchmarks.fleet_cpu``)
    # 4.7-4.9 against 5.4-5.6 µs. 500 and 1,000 did no better than 2,000. Under a paced
    # load a worker reads a few dozen records at a time, below either. The coordinator
    # keeps 10,000: over 20 input partitions it routed 281k events/s with 500 and 332k
    # with 1,000, 366-376k with 2,000 to 10,000.
    batch_size: int = Field(2_000, ge=1)
    transactions: bool = False
    registry_wait: float = Field(30.0, gt=0)
    # Complex events one event may make one query emit: enumeration stops there (a
    # Kleene query without a window has 2ⁿ ending at its n-th event). Only for registry
    # records that carry no cap of their own (written before ``submit`` registered
    # one, see ``QuerySpec.max_outputs_per_event``): every worker of a group must then
    # use the same value, since outputs are numbered for exactly-once replay.
    max_outputs_per_event: int = Field(DEFAULT_MAX_OUTPUTS_PER_EVENT, ge=1)
    # Seconds one query may take to evaluate one batch of a keyed partition; a query
    # over it is suspended there (state kept) so the partition's other queries go on
    # (see ``cerfleet.workers.budget``). 0: no budget.
    query_time_budget: float = Field(5.0, ge=0)

    # The checkpoint on revoke gives up after this long (the group waits for it); the
    # successor then replays from the previous checkpoint.
    revoke_timeout: float = Field(10.0, gt=0)

    def partition_limits(self) -> tuple[int, RecordLimits, float]:
        """What each keyed partition's state is bounded by (see ``PartitionState``)."""
        return self.max_outputs_per_event, self.record_limits(), self.query_time_budget


def load_settings(cls: type[S], config_file: str | Path | None, flags: dict[str, Any]) -> S:
    """Build ``cls`` from ``flags`` (unset ones omitted), the environment and ``config_file``."""
    token = _CONFIG_FILE.set(None if config_file is None else Path(config_file))
    try:
        return cls(**{k: v for k, v in flags.items() if v is not None})
    finally:
        _CONFIG_FILE.reset(token)

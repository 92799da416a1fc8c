"""``cerfleet dev``: the whole fleet on one machine, with no broker to install.

The broker is librdkafka's mock cluster hosted in this process (memory only:
everything is gone on exit). The coordinator and workers are ordinary child
processes connecting to it over TCP, as they would to a real broker, with
consumer-group timeouts shortened so joins and failovers take seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from importlib import resources
from pathlib import Path
from types import FrameType

import orjson

from cerfleet.errors import CerfleetError
from cerfleet.fleet.local_broker import LocalBroker
from cerfleet.fleet.local_topics import ADDRESS_ENV, TopicServer
from cerfleet.fleet.settings import FleetSettings

REGISTRY_TOPIC = FleetSettings.model_fields["registry_topic"].default
DEAD_LETTER_TOPIC = FleetSettings.model_fields["dead_letter_topic"].default

# Package data, not the repository's examples/ (which an installed wheel does not
# have): copies of examples/stock.ceql and examples/stock.jsonl, kept equal to them by
# a test.
EXAMPLE_PACKAGE = "cerfleet.fleet"
EXAMPLE_FILES = ("stock.ceql", "stock.jsonl")

# Fast group membership for a local broker: a rebalance lasts about the session
# timeout, and failover after a crash waits for it.
DEV_CONSUMER = {"session.timeout.ms": "6000", "heartbeat.interval.ms": "500"}


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "cerfleet.cli", *args]


@contextmanager
def example_files() -> Iterator[dict[str, Path]]:
    """The bundled example files by name, as paths on disk while the context lasts
    (a package imported from a zip archive has them extracted to a temporary place)."""
    folder = resources.files(EXAMPLE_PACKAGE) / "examples"
    with ExitStack() as stack:
        paths = {}
        for name in EXAMPLE_FILES:
            resource = folder / name
            if not resource.is_file():
                raise CerfleetError(
                    f"the bundled example {name} is missing from {folder}: a broken install?"
                )
            paths[name] = stack.enter_context(resources.as_file(resource))
        yield paths


# Ctrl-C reaches the whole foreground process group, children included; SIGTERM (kill,
# systemd, docker stop) and SIGHUP (the terminal closing) reach this process only, and
# by default would end it without a word to its children, which then retried the
# vanished broker forever under PID 1. Either now stops the fleet as Ctrl-C does.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class _Stop(Exception):
    """Raised in the main thread by :data:`STOP_SIGNALS`: leave and stop the children."""


def _on_stop_signal(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def run_dev(
    workers: int, example: bool, metrics_port: int | None, log_level: str | None = None
) -> int:
    """Run the local fleet until Ctrl-C, SIGTERM, SIGHUP or one of its processes exits.

    ``log_level`` is the coordinator's and workers' (default: ``CERFLEET_LOG_LEVEL``,
    else WARNING)."""
    previous = {sig: signal.getsignal(sig) for sig in (*STOP_SIGNALS, signal.SIGINT)}
    for sig in STOP_SIGNALS:
        signal.signal(sig, _on_stop_signal)
    try:
        with ExitStack() as stack:
            # Found before the broker starts, so a broken install fails at once.
            examples = stack.enter_context(example_files()) if example else {}
            return _run(workers, examples, metrics_port, log_level)
    except _Stop:
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(
    workers: int, examples: dict[str, Path], metrics_port: int | None, log_level: str | None
) -> int:
    children: list[subprocess.Popen[bytes]] = []
    with LocalBroker() as broker, TopicServer(broker) as topic_server:
        try:
            env = _environment(broker.bootstrap_servers, topic_server.address, log_level)
            _serve(broker, env, children, workers, examples, metrics_port)
        except (KeyboardInterrupt, _Stop) as stop:
            reason = "Ctrl-C" if isinstance(stop, KeyboardInterrupt) else str(stop)
            print(f"{reason}: stopping the fleet", file=sys.stderr, flush=True)
        finally:
            # A second signal must not cut this short: children would be orphaned.
            # run_dev puts the handlers back.
            for sig in (*STOP_SIGNALS, signal.SIGINT):
                signal.signal(sig, signal.SIG_IGN)
            _stop(children)
    return 0


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    # Workers first: they checkpoint and leave the group while the broker is up.
    for child in reversed(children):
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in reversed(children):
        try:
            child.wait(20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _serve(
    broker: LocalBroker,
    env: dict[str, str],
    children: list[subprocess.Popen[bytes]],
    workers: int,
    examples: dict[str, Path],
    metrics_port: int | None,
) -> None:
    """Start the fleet into ``children`` and watch it until one of them exits."""
    bootstrap = broker.bootstrap_servers
    # The fleet's own topics and the example's input, before anything else runs: the
    # registry and an ordered input stream need exactly one partition.
    for topic in (REGISTRY_TOPIC, DEAD_LETTER_TOPIC, "stock"):
        broker.create_topic(topic, 1)
    print(f"bootstrap servers: {bootstrap}", flush=True)
    print(f"  export CERFLEET_BOOTSTRAP_SERVERS={bootstrap}", flush=True)
    if examples:
        _submit_example(env, examples["stock.ceql"])
    ports = iter(range(metrics_port, metrics_port + 1 + workers) if metrics_port else [])
    children.append(_start(["coordinator"], env, next(ports, None)))
    for _ in range(workers):
        children.append(_start(["worker"], env, next(ports, None)))
    if examples:
        _produce_example(env, examples["stock.jsonl"])
        print(
            f"complex events: cerfleet consume stock-matches --bootstrap-servers {bootstrap}",
            flush=True,
        )
    print("Ctrl-C (or SIGTERM) stops everything", flush=True)
    while all(c.poll() is None for c in children):
        time.sleep(0.5)
    print("a fleet process exited; stopping", file=sys.stderr)


def _environment(bootstrap: str, topic_server: str, log_level: str | None) -> dict[str, str]:
    env = {
        **os.environ,
        "CERFLEET_BOOTSTRAP_SERVERS": bootstrap,
        "CERFLEET_CONSUMER": orjson.dumps(DEV_CONSUMER).decode(),
        # The broker answers no CreateTopics: the fleet's processes create keyed,
        # checkpoint and output topics, with their partition counts, through this one.
        ADDRESS_ENV: topic_server,
    }
    # Every process's per-partition start-up lines would bury the few lines dev prints;
    # --log-level or CERFLEET_LOG_LEVEL bring them back.
    if log_level is not None:
        env["CERFLEET_LOG_LEVEL"] = log_level
    env.setdefault("CERFLEET_LOG_LEVEL", "WARNING")
    return env


def _start(args: list[str], env: dict[str, str], port: int | None) -> subprocess.Popen[bytes]:
    extra = ["--metrics-port", str(port)] if port is not None else []
    return subprocess.Popen(_cli(*args, *extra), env=env)


def _submit_example(env: dict[str, str], query: Path) -> None:
    subprocess.run(
        _cli(
            "submit",
            "stock",
            str(query),
            "--input-topic",
            "stock",
            "--output-topic",
            "stock-matches",
        ),
        env=env,
        check=True,
    )


def _produce_example(env: dict[str, str], events: Path) -> None:
    subprocess.run(_cli("produce", str(events), "--topic", "stock"), env=env, check=True)

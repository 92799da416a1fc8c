"""``MetricsServer``: Prometheus text on ``/metrics``, readiness on ``/healthz``."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter

from cerfleet.fleet.observability import MetricsServer, listening_port, logged_port


class Switch:
    def __init__(self) -> None:
        self.ok = True
        self.reason = "3 keyed partitions"

    def __call__(self) -> tuple[bool, str]:
        return self.ok, self.reason


@pytest.fixture(scope="module")
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture(scope="module")
def switch() -> Switch:
    return Switch()


@pytest.fixture
def health(switch: Switch) -> Iterator[Switch]:
    yield switch
    switch.ok, switch.reason = True, "3 keyed partitions"


@pytest.fixture(scope="module")
def server(registry: CollectorRegistry, switch: Switch) -> Iterator[MetricsServer]:
    # One server for the module: each close waits up to half a second for its poll loop.
    srv = MetricsServer(registry, switch, "127.0.0.1", 0).start()
    try:
        yield srv
    finally:
        srv.close()


def get(server: MetricsServer, path: str) -> tuple[int, str, str]:
    url = f"http://127.0.0.1:{server.port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return int(r.status), r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as e:
        return int(e.code), e.headers["Content-Type"], e.read().decode()


def test_port_zero_picks_a_free_port(server: MetricsServer) -> None:
    assert server.port > 0


def test_the_log_names_the_port_a_launcher_reads(
    registry: CollectorRegistry, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    assert listening_port("") is None
    assert listening_port("2026-11-30 worker INFO x: starting\n") is None
    with caplog.at_level(logging.INFO, logger="cerfleet.fleet.observability"):
        srv = MetricsServer(registry, lambda: (True, ""), "127.0.0.1", 0).start()
    try:
        assert listening_port(caplog.text) == srv.port > 0
        log = tmp_path / "worker.log"
        log.write_text(caplog.text + "x" * (2 << 20))  # the line first, then 2 MiB more
        assert logged_port(log) == srv.port
        status, _, _ = get(srv, "/healthz")
        assert status == 200
    finally:
        srv.close()


def test_metrics_in_prometheus_text_format(
    server: MetricsServer, registry: CollectorRegistry
) -> None:
    events = Counter("cerfleet_test_events", "Events seen", ["topic"], registry=registry)
    events.labels("stock").inc(3)
    status, ctype, body = get(server, "/metrics")
    assert status == 200
    assert ctype.startswith("text/plain") and "version=" in ctype
    lines = body.splitlines()
    assert "# HELP cerfleet_test_events_total Events seen" in lines
    assert "# TYPE cerfleet_test_events_total counter" in lines
    assert 'cerfleet_test_events_total{topic="stock"} 3.0' in lines
    events.labels("stock").inc()
    # Query strings are ignored; each scrape reads the registry anew.
    _, _, body = get(server, "/metrics?name[]=x")
    assert 'cerfleet_test_events_total{topic="stock"} 4.0' in body.splitlines()


def test_healthz_when_healthy(server: MetricsServer, health: Switch) -> None:
    status, ctype, body = get(server, "/healthz")
    assert status == 200 and ctype == "application/json"
    assert json.loads(body) == {"status": "ok", "reason": "3 keyed partitions"}


def test_healthz_when_not(server: MetricsServer, health: Switch) -> None:
    health.ok, health.reason = False, "delivery failed: broker down"
    status, ctype, body = get(server, "/healthz")
    assert status == 503 and ctype == "application/json"
    assert json.loads(body) == {"status": "unavailable", "reason": "delivery failed: broker down"}
    health.ok = True
    assert get(server, "/healthz")[0] == 200


@pytest.mark.parametrize("path", ["/", "/metricsx", "/health", "/healthz/extra"])
def test_unknown_paths_are_404(server: MetricsServer, path: str) -> None:
    status, _, body = get(server, path)
    assert status == 404
    assert "/metrics" in body and "/healthz" in body


def test_close_frees_the_port() -> None:
    srv = MetricsServer(CollectorRegistry(), Switch(), "127.0.0.1", 0).start()
    port = srv.port
    assert get(srv, "/healthz")[0] == 200
    srv.close()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)

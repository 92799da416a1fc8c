"""``/metrics`` (Prometheus exposition) and ``/healthz`` for every fleet process.

One small HTTP server per process, on a daemon thread. ``/healthz`` answers
200 when the process is live and ready (its ``health`` callable says why not
otherwise, with 503), so the same path serves Kubernetes liveness and
readiness probes.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest

log = logging.getLogger(__name__)

Health = Callable[[], tuple[bool, str]]

_LISTENING = re.compile(r"metrics on :(\d+)/metrics")


def listening_port(log_text: str) -> int | None:
    """The port a process's log says its metrics server took; None before it says so.

    A launcher that runs several services on one host passes ``--metrics-port 0`` and
    reads the port here. A port picked beforehand (bind to 0, close, pass the number)
    can be taken by another socket, an outgoing connection's included, before the
    service binds it, and the service then exits with "Address already in use".
    """
    found = _LISTENING.findall(log_text)
    return int(found[-1]) if found else None


def logged_port(log: Path) -> int | None:
    """:func:`listening_port` of a log file; the line comes early, so its head is read."""
    with open(log, "rb") as f:
        return listening_port(f.read(1 << 20).decode(errors="replace"))


def dead_letters_counter(registry: CollectorRegistry) -> Counter:
    """One metric for both stages, so a dashboard sums coordinators and workers."""
    return Counter(
        "cerfleet_dead_letters",
        "Records sent to the dead-letter topic",
        ["stage", "reason"],
        registry=registry,
    )


class MetricsServer:
    """Serves ``registry`` on ``/metrics`` and ``health()`` on ``/healthz``."""

    def __init__(self, registry: CollectorRegistry, health: Health, host: str, port: int) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    body = generate_latest(outer.registry)
                    self._send(200, CONTENT_TYPE_LATEST, body)
                elif path == "/healthz":
                    ok, reason = outer.health()
                    doc = {"status": "ok" if ok else "unavailable", "reason": reason}
                    self._send(200 if ok else 503, "application/json", json.dumps(doc).encode())
                else:
                    self._send(404, "text/plain", b"not found: try /metrics or /healthz\n")

            def _send(self, status: int, ctype: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return  # scrapes every few seconds would drown the process's own log

        self.registry = registry
        self.health = health
        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="metrics", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> MetricsServer:
        self._thread.start()
        log.info("metrics on :%d/metrics, health on :%d/healthz", self.port, self.port)
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

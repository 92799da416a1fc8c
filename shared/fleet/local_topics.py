"""Topic creation for the clients of a local broker, through the process hosting it.

The mock cluster answers no CreateTopics request, and a topic it auto-creates always
gets 4 partitions. Its C API creates topics with any partition count, but only the
process hosting the cluster holds the handle. ``cerfleet dev`` therefore serves that
one call on a loopback port and tells its coordinator and workers where, in
:data:`ADDRESS_ENV`; :func:`cerfleet.fleet.topics.ensure_topics` asks there before it
falls back to auto-creation. The line protocol is the local broker helper's: ``topic
NAME PARTITIONS`` answered by ``ok`` or ``error <message>``.
"""

from __future__ import annotations

import logging
import os
import socket
import socketserver
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from cerfleet.fleet.local_broker import LocalBroker

__all__ = ["ADDRESS_ENV", "TopicServer", "create_topics", "server_address"]

logger = logging.getLogger(__name__)

# Not a FleetSettings field: only processes started by `cerfleet dev` have it, and
# what it points at lives and dies with that process.
ADDRESS_ENV = "CERFLEET_DEV_TOPIC_SERVER"


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        for raw in self.rfile:
            words = raw.decode(errors="replace").split()
            if len(words) != 3 or words[0] != "topic" or not words[2].isdigit():
                self._reply("error usage: topic NAME PARTITIONS")
                continue
            try:
                self.server.broker.create_topic(words[1], int(words[2]))
            except (ValueError, RuntimeError) as exc:
                self._reply(f"error {exc}")
            else:
                self._reply("ok")

    def _reply(self, line: str) -> None:
        self.wfile.write((line.replace("\n", " ") + "\n").encode())
        self.wfile.flush()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, broker: LocalBroker) -> None:
        self.broker = broker
        super().__init__(("127.0.0.1", 0), _Handler)


class TopicServer:
    """Serves ``broker.create_topic`` on a loopback port until :meth:`close`."""

    def __init__(self, broker: LocalBroker) -> None:
        self._server = _Server(broker)
        host, port = self._server.server_address[:2]
        self.address = f"{host!s}:{port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="local-topic-server", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def server_address() -> str | None:
    """Where this process's local topic server is, if a ``cerfleet dev`` started it."""
    return os.environ.get(ADDRESS_ENV) or None


def create_topics(address: str, topics: Mapping[str, int], timeout: float) -> dict[str, str]:
    """Ask the server at ``address`` to create ``topics`` (name -> partitions); an existing
    topic is left as it is. Returns the topics it could not create, with why."""
    host, _, port = address.rpartition(":")
    failed: dict[str, str] = {}
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as conn:
            stream = conn.makefile("rwb")
            for name, partitions in topics.items():
                stream.write(f"topic {name} {partitions}\n".encode())
                stream.flush()
                reply = stream.readline().decode(errors="replace").strip()
                if reply != "ok":
                    failed[name] = f"local topic server: {reply or 'no answer'}"
    except (OSError, ValueError) as exc:
        reason = f"local topic server {address} unreachable: {exc}"
        logger.warning("%s", reason)
        return {name: reason for name in topics if name not in failed} | failed
    return failed

"""Batches made on the other cores: forked children read and decode the batches ahead
while this process evaluates the current one.

Neither msgspec nor orjson releases the GIL while decoding (two threads decoding the
benchmark's 1M stock lines took as long as one: 0.29 s against 0.26 s for msgspec
structs, 0.91 s against 0.91 s for orjson dicts), so a thread buys nothing; a child
process does. The children are forked once the query is compiled (nothing to import
or compile again) and send each batch pickled through a pipe; the pipe's buffer bounds
how far they read ahead, so memory stays bounded whatever the input's size. Batches
must pickle small: ``RawEvents`` send their records as one bytes object (see there).

Several children may take turns (``CERFLEET_DECODE_PROCESS=N``): child k of n makes
batches k, k + n, … and the parent takes them in order. On 2 cores a second child
(three busy processes) measured 0.95-0.99× the wall clock of one, within the noise,
so one is the default; where decoding bounds a query (one reading many attributes,
whose engine skips most events) and idle cores are there, more may pay.

Only for regular files read to the end: a live pipe must hand each line on at once,
and a small file is done before a child would have paid for itself.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import signal
from collections.abc import Callable, Iterator
from multiprocessing import Pipe
from typing import Any, TypeVar

__all__ = ["ENV", "MAX_PROCESSES", "prefetched", "processes"]

T = TypeVar("T")

# How many decoding processes (0: decode in the evaluating process, to measure what
# the children give).
ENV = "CERFLEET_DECODE_PROCESS"
MAX_PROCESSES = 4

# Message kinds on the pipe.
_ITEM, _END, _ERROR = 0, 1, 2


def processes() -> int:
    """How many decoding processes ``cerfleet run`` forks for a large file (0: decode in
    the evaluating process): ``CERFLEET_DECODE_PROCESS`` if set (at most
    ``MAX_PROCESSES``), else one. More than one was only measured on 2 cores, where it
    gained nothing (see the module docstring): it is the user's choice, not a default
    guessed from the core count."""
    if not hasattr(os, "fork"):
        return 0
    setting = os.environ.get(ENV)
    if setting is None:
        return 1
    try:
        return max(0, min(int(setting), MAX_PROCESSES))
    except ValueError:
        return 1


def prefetched(produce: Callable[[int, int], Iterator[T]], count: int = 1) -> Iterator[T]:
    """The items of a sequence, made in ``count`` forked children: child ``k`` makes
    items ``k``, ``k + count``, ``k + 2·count``, … (``produce(k, count)`` yields them,
    one per item it owns), and they are handed out in sequence order. An exception a
    child raises is raised here, where it would have been raised inline, after the
    items before it. Closing the iterator early stops the children."""
    receivers: list[Any] = []
    pids: list[int] = []
    try:
        for k in range(count):
            receiver, sender = Pipe(duplex=False)
            pid = os.fork()
            if pid == 0:  # pragma: no cover - a child: measured by coverage of the items
                receiver.close()
                for earlier in receivers:
                    earlier.close()
                _child(functools.partial(produce, k, count), sender)
            sender.close()
            receivers.append(receiver)
            pids.append(pid)
        yield from _interleaved(receivers)
    finally:
        for receiver in receivers:
            receiver.close()
        for pid in pids:
            # Stopped early, what a child reads ahead is unwanted; done, it has exited
            # or is about to (SIGKILL then only spares the wait).
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _interleaved(receivers: list[Any]) -> Iterator[Any]:
    """Item ``i`` from child ``i mod count``; the sequence ends at the first end."""
    turn = 0
    while True:
        kind, item = receivers[turn].recv()
        if kind == _END:
            return
        if kind == _ERROR:
            raise item
        yield item
        turn = (turn + 1) % len(receivers)


def _child(produce: Callable[[], Iterator[T]], sender: object) -> None:
    """Runs in the child: send every item, then the end or the error; never returns
    (``os._exit``: the parent's buffered output and exit handlers are not ours)."""
    send = sender.send  # type: ignore[attr-defined]
    try:
        for item in produce():
            send((_ITEM, item))
        send((_END, None))
    except BrokenPipeError:
        pass  # the parent stopped reading
    except BaseException as err:  # every failure goes to the parent, raised there
        with contextlib.suppress(BaseException):  # the parent may be gone
            try:
                send((_ERROR, err))
            except pickle.PicklingError:
                send((_ERROR, RuntimeError(f"decoding failed: {err!r}")))
    os._exit(0)

"""Batches made on the second core: a forked child reads and decodes batch n + 1 while
this process evaluates batch n.

Neither msgspec nor orjson releases the GIL while decoding (two threads decoding the
benchmark's 1M stock lines took as long as one: 0.29 s against 0.26 s for msgspec
structs, 0.91 s against 0.91 s for orjson dicts), so a thread buys nothing; a child
process does. The child is forked once the query is compiled (nothing to import or
compile again) and sends each batch pickled through a pipe; the pipe's buffer bounds
how far it reads ahead, so memory stays bounded whatever the input's size. Batches
must pickle small: ``RawEvents`` send their records as one bytes object (see there).

Only for regular files read to the end: a live pipe must hand each line on at once,
and a small file is done before a child would have paid for itself.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable, Iterator
from multiprocessing import Pipe
from typing import TypeVar

__all__ = ["ENV", "enabled", "prefetched"]

T = TypeVar("T")

# Set to 0 to decode in the evaluating process (to measure what the child gives).
ENV = "CERFLEET_DECODE_PROCESS"

# Message kinds on the pipe.
_ITEM, _END, _ERROR = 0, 1, 2


def enabled() -> bool:
    return hasattr(os, "fork") and os.environ.get(ENV, "1") != "0"


def prefetched(produce: Callable[[], Iterator[T]]) -> Iterator[T]:
    """The items ``produce()`` yields, made in a forked child. An exception the child
    raises is raised here, where it would have been raised inline, after the items
    before it. Closing the iterator early stops the child."""
    receiver, sender = Pipe(duplex=False)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: measured by coverage of the items
        receiver.close()
        _child(produce, sender)
    sender.close()
    done = False
    try:
        while True:
            kind, item = receiver.recv()
            if kind == _END:
                done = True
                return
            if kind == _ERROR:
                done = True
                raise item
            yield item
    finally:
        receiver.close()
        if not done:
            os.kill(pid, signal.SIGKILL)  # stopped early: what it reads ahead is unwanted
        os.waitpid(pid, 0)


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

"""The model lock: one forward step at a time, granted in arrival order, closed while paused.

Every request runs its own decode loop in a worker thread and asks the gate for each forward step.
Because grants are FIFO, two requests interleave token by token instead of one finishing first
(a plain `threading.Lock` lets the releasing thread re-acquire immediately and starve the other).
`pause()` closes the gate for steps: running and new requests wait at their next step boundary.
`exclusive()` (weight swaps) jumps the queue and is granted even while paused.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

# How often a waiting step re-checks its cancel flag (client gone, server stopping).
_POLL_S = 0.1


class StepCancelled(Exception):
    """The waiting request was cancelled before it got its step."""


class StepGate:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()
        self._busy = False
        self._paused = False
        self._exclusive_waiting = 0
        self._active = 0  # requests between begin_request() and end_request()

    # ---- request bookkeeping (for num_paused_requests) ----
    def begin_request(self) -> None:
        with self._cond:
            self._active += 1

    def end_request(self) -> None:
        with self._cond:
            self._active -= 1

    @property
    def active_requests(self) -> int:
        with self._cond:
            return self._active

    # ---- pause gate ----
    @property
    def paused(self) -> bool:
        with self._cond:
            return self._paused

    def pause(self) -> int:
        """Close the gate; return how many requests are now held."""
        with self._cond:
            self._paused = True
            return self._active

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    # ---- the lock ----
    @contextmanager
    def step(self, cancel: threading.Event | None = None) -> Iterator[None]:
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
            try:
                while True:
                    if cancel is not None and cancel.is_set():
                        raise StepCancelled()
                    blocked = self._paused or self._busy or self._exclusive_waiting
                    if not blocked and self._queue[0] is ticket:
                        break
                    self._cond.wait(_POLL_S)
            except BaseException:
                self._queue.remove(ticket)
                self._cond.notify_all()
                raise
            self._queue.popleft()
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Wait for the current step to end, then hold the model alone (ignores pause)."""
        with self._cond:
            self._exclusive_waiting += 1
            try:
                while self._busy:
                    self._cond.wait(_POLL_S)
            finally:
                self._exclusive_waiting -= 1
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

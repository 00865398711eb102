"""A small serving step's layers on one matrix-library thread (CPU); its LM head and the rest on them all.

A decode step of a few sequences multiplies a few rows by each layer's small weights: [8, 256] x [256, 512] on
the tiny model is about 50 microseconds on one thread and 90 on two, because the second thread, asleep between
products (`OMP_WAIT_POLICY=PASSIVE`, which the shared cores need), costs more to wake than it saves
(docs/benchmarks.md). The vocabulary-wide product of the LM head, and prompts and training, gain from every
thread. torch's own `set_num_threads` is no switch for this: it also writes a process-wide count that threads
take when they first run torch, so a training thread starting during a small step would keep one thread for
good. MKL's `mkl_set_num_threads_local` changes the calling thread's count only; it is exported by torch's CPU
library where torch is built with MKL (x86), and where it is not every step runs as before.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

SMALL_STEP_TOKENS = 32  # at most this many packed tokens: the layers' products run on one thread


def _local_thread_setter() -> Callable[[int], int] | None:
    """MKL's C entry point (int by value; the lower-case symbol is the Fortran one, which takes a pointer)."""
    if not torch.backends.mkl.is_available():
        return None
    try:
        library = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        setter = library.MKL_Set_Num_Threads_Local
    except (OSError, AttributeError):
        return None
    setter.argtypes = [ctypes.c_int]
    setter.restype = ctypes.c_int
    return setter


class StepThreads:
    """The scheduler thread's matrix-library thread count around a forward pass (CPU only)."""

    def __init__(self, device: torch.device) -> None:
        self._set = _local_thread_setter() if device.type == "cpu" else None
        self._outer = threading.local()  # the count a small step replaced, while it runs

    @property
    def available(self) -> bool:
        return self._set is not None

    @contextmanager
    def step(self, tokens: int) -> Iterator[None]:
        """Run a forward pass of `tokens` packed tokens: on one thread when it is small."""
        if self._set is None or tokens > SMALL_STEP_TOKENS:
            yield
            return
        outer = self._set(1)  # MKL returns the thread's previous local count (0: the process's)
        self._outer.count = outer
        try:
            yield
        finally:
            self._outer.count = None
            self._set(outer)

    @contextmanager
    def full(self) -> Iterator[None]:
        """Inside a small step, give one product (the LM head's) the count the step replaced."""
        outer = getattr(self._outer, "count", None)
        if self._set is None or outer is None:
            yield
            return
        self._set(outer)
        try:
            yield
        finally:
            self._set(1)

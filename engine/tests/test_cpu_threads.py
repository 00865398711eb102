"""One matrix-library thread for a small serving step, restored after it; other threads are never touched.

Scenario: the engine serves a few conversations on CPU while a training step runs in another thread. A small
decode step runs its layers on one MKL thread and its LM head on the process's count; what could go wrong: the
count leaking past the step (the next prompt or training step on one thread), or into the training thread.
"""

from __future__ import annotations

import ctypes
import platform
import threading
from pathlib import Path

import pytest
import torch

from openclaw_engine.cpu_threads import SMALL_STEP_TOKENS, StepThreads

# MKL (and so its thread-local call) is in torch's x86 builds only; elsewhere `StepThreads` changes nothing.
# On x86 with MKL the tests run, so a torch that stopped exporting the call fails them rather than skipping.
pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not torch.backends.mkl.is_available(),
    reason=f"torch on {platform.machine()} without MKL: no thread-local MKL call to test",
)


def _mkl_threads() -> int:
    library = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
    return int(library.MKL_Get_Max_Threads())


def test_a_small_step_runs_on_one_thread_and_the_head_on_the_count_it_replaced() -> None:
    threads = StepThreads(torch.device("cpu"))
    assert threads.available  # torch's CPU library exports MKL's thread-local call
    outer = _mkl_threads()
    with threads.step(8):
        assert _mkl_threads() == 1
        with threads.full():
            assert _mkl_threads() == outer
        assert _mkl_threads() == 1
    assert _mkl_threads() == outer
    with threads.step(SMALL_STEP_TOKENS + 1):  # a prompt's step keeps every thread
        assert _mkl_threads() == outer
        with threads.full():
            assert _mkl_threads() == outer
    with threads.full():  # outside a step: nothing to change
        assert _mkl_threads() == outer


def test_the_count_is_restored_when_the_step_fails_and_other_threads_keep_theirs() -> None:
    threads = StepThreads(torch.device("cpu"))
    outer = _mkl_threads()
    seen: list[int] = []
    inside, done = threading.Event(), threading.Event()

    def other() -> None:
        seen.append(_mkl_threads())  # before the step
        inside.wait()
        seen.append(_mkl_threads())  # while the step runs
        done.set()

    worker = threading.Thread(target=other)
    worker.start()
    with pytest.raises(RuntimeError), threads.step(4):
        inside.set()
        done.wait(10)
        raise RuntimeError("a device failure")
    worker.join()
    assert _mkl_threads() == outer
    assert seen[1] == seen[0]


def test_a_gpu_runner_changes_nothing() -> None:
    threads = StepThreads(torch.device("cuda"))
    assert not threads.available
    outer = _mkl_threads()
    with threads.step(1), threads.full():
        assert _mkl_threads() == outer

"""How busy the machine was while a benchmark ran: the one-minute load average before and after it, and
whether its figures count as quiet-machine figures (goals are judged on those: under load, orders can flip).
A label, never a gate: no benchmark passes or fails on it. bench/support/machine-load.ts says the same.

    from machine_load import report_load  # bench/ is on sys.path when a bench runs as bench/x.py
    finish = report_load("engine bench")
    ...
    load = finish()  # prints the label; a dict to put in any JSON the bench writes
"""

from __future__ import annotations

import os
from collections.abc import Callable

QUIET_LOAD = 2.0


def machine_load(before: float, after: float) -> dict:
    """`load average before 1.23 / after 1.80: quiet`, or `...: LOADED (above 2): ...` at 2 or more."""
    quiet = before < QUIET_LOAD and after < QUIET_LOAD
    verdict = "quiet" if quiet else "LOADED (above 2): these figures are not the ones goals are judged on"
    label = f"load average before {before:.2f} / after {after:.2f}: {verdict}"
    return {"before": before, "after": after, "quiet": quiet, "label": label}


def report_load(bench: str) -> Callable[[], dict]:
    """Prints the load average now; returns what prints the label at the end and returns it as a record."""
    before = os.getloadavg()[0]
    reading = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"{bench}: {os.cpu_count()} cores, load average before {reading}", flush=True)

    def finish() -> dict:
        load = machine_load(before, os.getloadavg()[0])
        print(load["label"], flush=True)
        return load

    return finish

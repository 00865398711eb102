"""What the conformance checkers share: read the calls and commands from stdin, check each, print verdicts.

Standard library only: sglang_check.py runs in .venv-sglang and vllm_check.py in .venv-vllm.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


def outcome(check: Callable[[Any], str | None], item: Any) -> tuple[bool, str | None]:
    try:
        error = check(item)
    except Exception as exc:  # the engine's own validation error is the answer
        error = f"{type(exc).__name__}: {exc}"
    return error is None, error


def run(check_call: Callable[[Any], str | None], check_command: Callable[[Any], str | None]) -> None:
    given = json.load(sys.stdin)
    calls = []
    for call in given.get("calls", []):
        ok, error = outcome(check_call, call)
        calls.append({"path": call["path"], "ok": ok, "error": error})
    commands = []
    for argv in given.get("commands", []):
        ok, error = outcome(check_command, argv)
        commands.append({"argv": argv, "ok": ok, "error": error})
    json.dump({"calls": calls, "commands": commands}, sys.stdout)

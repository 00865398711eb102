"""Parses slime command lines with an argparse parser rebuilt from a manifest of slime's own option
definitions (scripts/slime-argument-manifest.py). Standard library only; runs in .venv.

stdin: {"manifest": PATH, "commands": [[argv]]}
stdout: {"commands": [{"argv", "ok", "error", "undefined": [flags the manifest does not define]}]}
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from typing import Any

TYPES = {"int": int, "float": float, "str": str}
ACTIONS = {"store_true", "store_false", "append", "store_const", "count"}


def build(manifest: dict[str, Any]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="slime", allow_abbrev=False, add_help=False)
    seen: set[str] = set()
    for option in manifest["options"]:
        flags = [f for f in option["flags"] if f not in seen]
        if not flags:
            continue  # reset_arg of an option already defined
        seen.update(flags)
        kwargs: dict[str, Any] = {}
        action = option.get("action")
        if isinstance(action, str) and action in ACTIONS:
            kwargs["action"] = action
        if "action" not in kwargs or kwargs["action"] == "append":
            kind = option.get("type")
            if isinstance(kind, dict) and kind.get("name") in TYPES:
                kwargs["type"] = TYPES[kind["name"]]
            choices = option.get("choices")
            if isinstance(choices, list):
                kwargs["choices"] = choices
            nargs = option.get("nargs")
            if isinstance(nargs, (int, str)) and not isinstance(nargs, bool):
                kwargs["nargs"] = nargs
        try:
            parser.add_argument(*flags, **kwargs)
        except (ValueError, TypeError, argparse.ArgumentError):
            parser.add_argument(*flags)
    return parser


def check(parser: argparse.ArgumentParser, defined: set[str], argv: list[str]) -> dict[str, Any]:
    undefined = sorted({a for a in argv if a.startswith("--") and a not in defined})
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(argv)
    except SystemExit:
        return {
            "argv": argv,
            "ok": False,
            "error": err.getvalue().strip().splitlines()[-1],
            "undefined": undefined,
        }
    return {"argv": argv, "ok": True, "error": None, "undefined": undefined}


def main() -> None:
    given = json.load(sys.stdin)
    with open(given["manifest"]) as f:
        manifest = json.load(f)
    parser = build(manifest)
    defined = {flag for option in manifest["options"] for flag in option["flags"]}
    json.dump({"commands": [check(parser, defined, argv) for argv in given["commands"]]}, sys.stdout)


if __name__ == "__main__":
    main()

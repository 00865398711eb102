"""Writes the manifest of slime's command-line options at one commit, read from its source without importing
it (slime imports Megatron, Ray, wandb and SGLang's router): every `add_argument` / `reset_arg` call in the
tree's `slime/` (and in a vendored `Megatron-LM/megatron/training/`, whose parser slime extends), plus the
FSDP backend's options, which slime generates from the `FSDPArgs` dataclass (`--field-name`, a flag for a
bool). Each option has its flags and, where they are literals, `type`, `choices`, `action` and `nargs`.

    python3 scripts/slime-argument-manifest.py TREE REPO COMMIT > test/fixtures/slime-arguments-<name>.json

test/activities/slime-arguments-conformance.test.ts checks the project's slime command line against these
manifests; regenerate them when docs/slime.md names other commits (`git archive <commit> slime Megatron-LM`).
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path


def literal(node: ast.AST) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError):
        if isinstance(node, ast.Name):
            return {"name": node.id}
        if isinstance(node, ast.Attribute):
            return {"name": ast.unparse(node)}
        return {"expression": ast.unparse(node)[:120]}


def options_in(path: Path, root: Path) -> list[dict[str, object]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in ("add_argument", "reset_arg"):
            continue
        args = node.args[1:] if name == "reset_arg" else node.args
        flags = [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        flags = [f for f in flags if f.startswith("-")]
        if not flags:
            continue
        entry: dict[str, object] = {"flags": flags, "file": str(path.relative_to(root))}
        for keyword in node.keywords:
            if keyword.arg in ("type", "choices", "action", "nargs"):
                entry[keyword.arg] = literal(keyword.value)
        out.append(entry)
    return out


def dataclass_options(path: Path, root: Path, class_name: str) -> list[dict[str, object]]:
    """slime's parse_fsdp_cli: `--<field-name>`, store_true for a bool, else the annotation's type."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.ClassDef) and node.name == class_name):
            continue
        for item in node.body:
            if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
                continue
            annotation = ast.unparse(item.annotation)
            flag = f"--{item.target.id.replace('_', '-')}"
            entry: dict[str, object] = {"flags": [flag], "file": str(path.relative_to(root))}
            if annotation == "bool":
                entry["action"] = "store_true"
            else:
                base = annotation.split("|")[0].strip()
                entry["type"] = {"name": base if base in ("int", "float", "str") else "str"}
            out.append(entry)
    return out


def main() -> None:
    root, repository, commit = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    options = []
    for path in sorted((root / "slime").rglob("*.py")):
        options.extend(options_in(path, root))
        if path.name == "arguments.py" and "fsdp_utils" in path.parts:
            options.extend(dataclass_options(path, root, "FSDPArgs"))
    for path in sorted((root / "Megatron-LM" / "megatron" / "training").rglob("arguments.py")):
        options.extend(options_in(path, root))
    document = {"repository": repository, "commit": commit, "options": options}
    json.dump(document, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

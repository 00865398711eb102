"""`tool_choice` naming a function: the reply is a call to it, decided before generation.

SGLang and vLLM constrain a named tool choice with a grammar built from the tool's JSON schema and sample the
arguments inside it. The reference engine has no grammar sampler, so it constrains the whole reply: the
Qwen3 tool-call markup with the smallest arguments the schema accepts (required properties only, each at its
simplest valid value), then the end-of-turn token. The tokens are teacher-forced through the model, so their
reported log-probs are still the model's own (a prefill of the same sequence gives the same numbers). Fed,
not sampled: such a reply must not be trained as the policy's choice, so the gateway marks every turn whose
request names a function (or `required`) and scoring excludes it (docs/scoring.md, "Sampling constraints").

An agent sends the same `tool_choice` on every model call of a run (OpenClaw's per-model `extra_body`); a
forced call after the tool already answered would loop forever. So the call is forced once per user turn: when
the latest assistant message already called the tool, the request is served as if the tool were merely offered
(`auto`); a plain reply since then starts the next user turn. This is the reference engine's rule, not
OpenAI's; see engine/README.md.
"""

from __future__ import annotations

import json
from typing import Any


def minimal_arguments(schema: Any) -> Any:
    """The simplest value `schema` accepts (JSON Schema subset that tool definitions use)."""
    if not isinstance(schema, dict):
        return {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for union in ("anyOf", "oneOf", "allOf"):
        if schema.get(union):
            return minimal_arguments(schema[union][0])
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: minimal_arguments(props.get(name, {})) for name in schema.get("required") or []}
    if kind == "array":
        return [minimal_arguments(schema.get("items", {})) for _ in range(int(schema.get("minItems", 0)))]
    if kind == "string":
        return "x" * int(schema.get("minLength", 0))
    if kind in ("number", "integer"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def already_called(messages: list[dict[str, Any]], name: str) -> bool:
    """Whether the latest assistant message called `name` (the client is inside the loop that call started).

    The latest assistant message, not "one since the last user message": OpenClaw appends a user-role runtime
    context message to every model call of a run, after the tool results, so a user message does not mark a
    new user turn.
    """
    for message in reversed(messages):
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and function.get("name") == name:
                    return True
            return False
    return False


def forced_reply(tool: dict[str, Any]) -> str:
    """The reply text (Qwen3 tool-call markup) that calls `tool` with its minimal arguments."""
    function = tool["function"]
    call = {"name": function["name"], "arguments": minimal_arguments(function.get("parameters"))}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"

"""OpenAI chat messages in, Qwen3-style output parsed back out.

Rendering uses the model's own Jinja chat template (tools included), like SGLang's jinja path.
Parsing follows SGLang's `qwen3` reasoning parser and `qwen25` tool-call parser:
`<think>...</think>` becomes `reasoning_content`, and each `<tool_call>{"name", "arguments"}</tool_call>`
becomes an OpenAI tool call whose `arguments` is a JSON string. One simplification: reasoning is
split only when the output opens with `<think>` (no "forced reasoning" mode for templates that put
`<think>` in the prompt), which is what lets the streaming parser decide early and stay exact.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

THINK_START = "<think>"
THINK_END = "</think>"
TOOL_START = "<tool_call>"
TOOL_END = "</tool_call>"
# Image content parts: OpenAI's `image_url` ({"url": ...} or, as SGLang/vLLM accept, the url string) and
# the `image` form. The chat template sees each as {"type": "image"}; only a vision-language model takes them.
IMAGE_PART_TYPES = ("image_url", "image")


# ---------------------------------------------------------------------------------------- rendering
def normalize_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Make OpenAI messages template-friendly without changing what they say.

    `developer` is a `system` turn; assistant tool-call arguments given as JSON strings are parsed
    to objects (SGLang does the same) so templates can `tojson` them; `None` content becomes "";
    image content parts become {"type": "image"} (their bytes are `image_urls`', in the same order).
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        msg = {k: v for k, v in message.items() if v is not None}
        if msg.get("role") == "developer":
            msg["role"] = "system"
        if msg.get("content") is None:
            msg["content"] = ""
        elif isinstance(msg["content"], list):
            msg["content"] = [_image_as_marker(part) for part in msg["content"]]
        if msg.get("role") == "assistant" and isinstance(msg.get("tool_calls"), list):
            msg["tool_calls"] = [_parse_arguments(call) for call in msg["tool_calls"]]
        out.append(msg)
    return out


def _image_as_marker(part: Any) -> Any:
    if isinstance(part, dict) and part.get("type") in IMAGE_PART_TYPES:
        return {"type": "image"}
    return part


def image_urls(messages: list[dict[str, Any]]) -> list[str]:
    """The URLs of the messages' image parts, in prompt order (a part without one gives "")."""
    urls: list[str] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if isinstance(part, dict) and part.get("type") in IMAGE_PART_TYPES:
                urls.append(_url_of(part))
    return urls


def _url_of(part: dict[str, Any]) -> str:
    value = part.get("image_url") if part.get("type") == "image_url" else part.get("image")
    if isinstance(value, dict):
        value = value.get("url")
    return value if isinstance(value, str) else ""


def _parse_arguments(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    try:
        parsed = json.loads(function["arguments"])
    except json.JSONDecodeError:
        return call  # leave it as the string the client sent; the template prints strings verbatim
    return {**call, "function": {**function, "arguments": parsed}}


# ---------------------------------------------------------------------------------------- parsing
@dataclass
class ParsedOutput:
    content: str
    reasoning_content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def split_reasoning(text: str) -> tuple[str | None, str]:
    """(reasoning, content) for output that opens with `<think>`; other output is all content.

    An unclosed `<think>` (generation cut off while thinking) is all reasoning. Newlines hugging the
    markers are dropped, as the chat template adds them back when the turn is re-rendered.
    """
    stripped = text.lstrip()
    if not stripped.startswith(THINK_START):
        return None, text
    rest = stripped[len(THINK_START) :]
    reasoning, closed, content = rest.partition(THINK_END)
    return reasoning.strip("\n") or None, content.lstrip("\n") if closed else ""


def new_tool_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def parse_tool_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """(content, tool_calls). Content is the text before the first tool call; bad JSON stays content."""
    start = text.find(TOOL_START)
    if start < 0:
        return text, []
    calls: list[dict[str, Any]] = []
    cursor = start
    while cursor >= 0:
        end = text.find(TOOL_END, cursor)
        body = text[cursor + len(TOOL_START) : end if end >= 0 else len(text)]
        call = _tool_call_from_json(body, index=len(calls))
        if call is None:
            return text, []  # not a well-formed call: do not pretend, hand the text back
        calls.append(call)
        if end < 0:
            break
        cursor = text.find(TOOL_START, end + len(TOOL_END))
    return text[:start].rstrip(), calls


def _tool_call_from_json(body: str, *, index: int) -> dict[str, Any] | None:
    try:
        obj = json.loads(body.strip())
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    arguments = obj.get("arguments", obj.get("parameters", {}))
    return {
        "id": new_tool_call_id(),
        "index": index,
        "type": "function",
        "function": {"name": obj["name"], "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


def parse_output(text: str, *, separate_reasoning: bool, parse_tools: bool) -> ParsedOutput:
    reasoning: str | None = None
    if separate_reasoning:
        reasoning, text = split_reasoning(text)
    calls: list[dict[str, Any]] = []
    if parse_tools:
        text, calls = parse_tool_calls(text)
    return ParsedOutput(content=text, reasoning_content=reasoning, tool_calls=calls)


# ---------------------------------------------------------------------------------------- streaming
@dataclass
class StreamDelta:
    reasoning_content: str = ""
    content: str = ""


class StreamParser:
    """Incremental `parse_output` for SSE: the deltas concatenate to exactly what it returns.

    Reasoning and content stream as they arrive; text that might be the start of a marker (or
    newlines/whitespace that `parse_output` would strip) is held back until it is decided. Once
    `<tool_call>` appears (and tools were given) the rest is buffered and parsed by `finish()`,
    which returns the tool calls, or hands the buffered text back as content if it is not a call.
    """

    def __init__(self, *, separate_reasoning: bool, parse_tools: bool) -> None:
        self._parse_tools = parse_tools
        self._state = "start" if separate_reasoning else "content"
        self._pending = ""
        self._held_ws = ""  # whitespace before a possible tool call (rstripped from content if one comes)
        self._tool_buffer: str | None = None

    def feed(self, text: str) -> StreamDelta:
        self._pending += text
        out = StreamDelta()
        self._drain(out, final=False)
        return out

    def finish(self) -> tuple[StreamDelta, list[dict[str, Any]]]:
        out = StreamDelta()
        self._drain(out, final=True)
        if self._tool_buffer is None:
            out.content += self._held_ws
            return out, []
        _, calls = parse_tool_calls(self._tool_buffer)
        if not calls:  # not a well-formed call: it was content after all
            out.content += self._held_ws + self._tool_buffer
        return out, calls

    def _drain(self, out: StreamDelta, *, final: bool) -> None:
        progressed = True
        while progressed:
            progressed = False
            if self._state == "start":
                head = self._pending.lstrip()
                if head.startswith(THINK_START):
                    self._pending = head[len(THINK_START) :]
                    self._state = "reasoning_start"
                    progressed = True
                elif final or (head and not THINK_START.startswith(head)):
                    self._state = "content"
                    progressed = True
            elif self._state == "reasoning_start":
                self._pending = self._pending.lstrip("\n")
                if self._pending:
                    self._state = "reasoning"
                    progressed = True
                elif final:
                    self._state = "reasoning"
            elif self._state == "reasoning":
                before, found, after = self._pending.partition(THINK_END)
                if found:
                    out.reasoning_content += before.rstrip("\n")
                    self._pending = after
                    self._state = "content_start"
                    progressed = True
                elif final:
                    out.reasoning_content += self._pending.rstrip("\n")
                    self._pending = ""
                else:
                    hold = _hold(self._pending, THINK_END, "\n")
                    out.reasoning_content += self._pending[: len(self._pending) - hold]
                    self._pending = self._pending[len(self._pending) - hold :]
            elif self._state == "content_start":
                self._pending = self._pending.lstrip("\n")
                if self._pending:
                    self._state = "content"
                    progressed = True
            elif self._state == "content":
                self._drain_content(out, final)
            else:  # "tools": everything goes to the buffer
                assert self._tool_buffer is not None
                self._tool_buffer += self._pending
                self._pending = ""

    def _drain_content(self, out: StreamDelta, final: bool) -> None:
        if not self._parse_tools:
            out.content += self._pending
            self._pending = ""
            return
        text = self._held_ws + self._pending
        self._held_ws, self._pending = "", ""
        before, found, after = text.partition(TOOL_START)
        if found:
            kept = before.rstrip()
            out.content += kept
            self._held_ws = before[len(kept) :]
            self._tool_buffer = TOOL_START + after
            self._state = "tools"
            return
        hold = 0 if final else _hold(text, TOOL_START, " \t\r\n")
        out.content += text[: len(text) - hold]
        rest = text[len(text) - hold :]
        # Whitespace is held separately so finish() can drop it before a tool call.
        ws_len = len(rest) - len(rest.lstrip())
        self._held_ws, self._pending = rest[:ws_len], rest[ws_len:]


def _hold(text: str, marker: str, strip_chars: str) -> int:
    """Chars to hold back: a trailing partial `marker` plus the `strip_chars` run just before it."""
    partial = 0
    for n in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:n]):
            partial = n
            break
    body = text[: len(text) - partial]
    return partial + (len(body) - len(body.rstrip(strip_chars)))

"""chat.py on synthetic text (a random model never emits markup): reasoning split, tool calls, streaming."""

from __future__ import annotations

import json
import random
import zlib
from typing import Any

import pytest

from openclaw_engine.chat import (
    StreamParser,
    normalize_messages,
    parse_output,
    parse_tool_calls,
    split_reasoning,
)

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}\n</tool_call>'


def test_split_reasoning() -> None:
    assert split_reasoning("<think>\nplan it\n</think>\n\nThe answer.") == ("plan it", "The answer.")
    assert split_reasoning("no thinking here") == (None, "no thinking here")
    assert split_reasoning("<think>\ncut off while thin") == ("cut off while thin", "")
    assert split_reasoning("<think>\n\n</think>\n\nHi") == (None, "Hi")
    # A late <think> is not reasoning: only output that opens with it is split.
    assert split_reasoning("Hi <think>x</think> y") == (None, "Hi <think>x</think> y")


def test_tool_calls_are_openai_shaped() -> None:
    content, calls = parse_tool_calls("Let me check.\n" + CALL)
    assert content == "Let me check."
    assert len(calls) == 1
    call = calls[0]
    assert call["type"] == "function" and call["id"].startswith("call_") and call["index"] == 0
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris", "unit": "C"}


def test_several_tool_calls_and_unique_ids() -> None:
    second = CALL.replace("Paris", "Oslo")
    _, calls = parse_tool_calls(CALL + "\n" + second)
    assert [json.loads(c["function"]["arguments"])["city"] for c in calls] == ["Paris", "Oslo"]
    assert [c["index"] for c in calls] == [0, 1]
    assert calls[0]["id"] != calls[1]["id"]


def test_malformed_tool_call_stays_content() -> None:
    text = "Sure <tool_call>\n{not json}\n</tool_call>"
    assert parse_tool_calls(text) == (text, [])
    assert parse_tool_calls('<tool_call>{"arguments": {}}</tool_call>')[1] == []  # no name


def test_parse_output_combines_reasoning_and_tools() -> None:
    parsed = parse_output(
        "<think>\nneed weather\n</think>\n\n" + CALL, separate_reasoning=True, parse_tools=True
    )
    assert parsed.reasoning_content == "need weather"
    assert parsed.content == ""
    assert parsed.tool_calls[0]["function"]["name"] == "get_weather"
    plain = parse_output("<think>x</think>" + CALL, separate_reasoning=False, parse_tools=False)
    assert (
        plain.content == "<think>x</think>" + CALL
        and plain.reasoning_content is None
        and not plain.tool_calls
    )


def test_normalize_messages() -> None:
    messages = [
        {"role": "developer", "content": "rules"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"function": {"name": "f", "arguments": '{"a": 1}'}}],
        },
    ]
    out = normalize_messages(messages)
    assert out[0] == {"role": "system", "content": "rules"}
    assert out[1]["content"] == ""
    assert out[1]["tool_calls"][0]["function"]["arguments"] == {"a": 1}
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == '{"a": 1}', "input must not be mutated"


STREAM_CASES = [
    "plain answer without markup",
    "  leading spaces and <thin but not think",
    "<think>\nstep one\nstep two\n\n</think>\n\nFinal answer.",
    "<think>\nunfinished reasoning\n\n",
    "<think></think>content right away",
    "Calling now.  \n" + CALL,
    "<think>\nI should call\n</think>\n\n" + CALL + "\n" + CALL.replace("Paris", "Rome"),
    "text then <tool_call>\n{broken\n</tool_call> trailing",
    "whitespace at the end  \n\n",
    "<tool_ca is not a call",
    "",
]


def _stream(
    text: str, cuts: list[int], *, separate_reasoning: bool, parse_tools: bool
) -> tuple[str, str, list[dict[str, Any]]]:
    parser = StreamParser(separate_reasoning=separate_reasoning, parse_tools=parse_tools)
    reasoning, content = "", ""
    bounds = [0, *cuts, len(text)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        delta = parser.feed(text[a:b])
        reasoning += delta.reasoning_content
        content += delta.content
    tail, calls = parser.finish()
    return reasoning + tail.reasoning_content, content + tail.content, calls


@pytest.mark.parametrize("text", STREAM_CASES)
@pytest.mark.parametrize("flags", [(True, True), (True, False), (False, True), (False, False)])
def test_stream_parser_matches_parse_output(text: str, flags: tuple[bool, bool]) -> None:
    separate_reasoning, parse_tools = flags
    expected = parse_output(text, separate_reasoning=separate_reasoning, parse_tools=parse_tools)
    rng = random.Random(zlib.crc32(f"{text}{flags}".encode()))  # stable across processes
    chunkings = [list(range(1, len(text)))]  # one character at a time
    for _ in range(20):
        chunkings.append(
            sorted(rng.sample(range(1, len(text)), k=max(0, min(len(text) - 1, rng.randint(0, 6)))))
        )
    for cuts in chunkings:
        reasoning, content, calls = _stream(
            text, cuts, separate_reasoning=separate_reasoning, parse_tools=parse_tools
        )
        assert (reasoning or None) == expected.reasoning_content, cuts
        assert content == expected.content, cuts
        strip = [{**c, "id": None} for c in calls]
        assert strip == [{**c, "id": None} for c in expected.tool_calls], cuts


def test_stream_parser_releases_reasoning_and_content_incrementally() -> None:
    parser = StreamParser(separate_reasoning=True, parse_tools=True)
    assert parser.feed("<think>\nfirst ").reasoning_content == "first "
    delta = parser.feed("thought\n</think>\n\nHel")
    assert (delta.reasoning_content, delta.content) == ("thought", "Hel")
    assert parser.feed("lo <tool").content == "lo"  # " <tool" might open a tool call: held back
    assert parser.feed("s> are").content == " <tools> are"

"""Incremental detokenisation with stop-string handling, so streamed text equals the final text.

Text is released only when it is final: a byte-level token may end inside a multi-byte UTF-8
character (the decode then ends in U+FFFD and is held back), and text that could be the start of a
stop string is held back until it is known not to be one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

_REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    """vLLM-style prefix/read offsets: decode a short window, emit only the new, complete suffix."""

    def __init__(self, decode: Callable[[list[int]], str]) -> None:
        self._decode = decode  # ids -> text, with the request's skip_special_tokens already bound
        self._ids: list[int] = []
        self._prefix_offset = 0
        self._read_offset = 0

    def add(self, token_id: int) -> str:
        self._ids.append(token_id)
        prefix_text = self._decode(self._ids[self._prefix_offset : self._read_offset])
        new_text = self._decode(self._ids[self._prefix_offset :])
        if len(new_text) > len(prefix_text) and not new_text.endswith(_REPLACEMENT):
            self._prefix_offset = self._read_offset
            self._read_offset = len(self._ids)
            return new_text[len(prefix_text) :]
        return ""

    def flush(self) -> str:
        """At the end of generation, release whatever is held (incomplete bytes become U+FFFD)."""
        prefix_text = self._decode(self._ids[self._prefix_offset : self._read_offset])
        new_text = self._decode(self._ids[self._prefix_offset :])
        self._prefix_offset = self._read_offset = len(self._ids)
        return new_text[len(prefix_text) :]


@dataclass
class StopMatch:
    text: str  # text to release now
    matched: str | None  # the stop string that ended generation, if any


class StopStringFilter:
    """Holds back possible stop-string prefixes; trims output at the first complete stop string."""

    def __init__(self, stops: tuple[str, ...], *, no_stop_trim: bool) -> None:
        self._stops = tuple(s for s in stops if s)
        self._no_stop_trim = no_stop_trim
        self._pending = ""

    def feed(self, delta: str) -> StopMatch:
        if not self._stops:
            return StopMatch(delta, None)
        self._pending += delta
        first: tuple[int, str] | None = None
        for stop in self._stops:
            at = self._pending.find(stop)
            if at >= 0 and (first is None or at < first[0]):
                first = (at, stop)
        if first is not None:
            at, stop = first
            end = at + len(stop) if self._no_stop_trim else at
            out, self._pending = self._pending[:end], ""
            return StopMatch(out, stop)
        hold = self._longest_stop_prefix_suffix()
        out = self._pending[: len(self._pending) - hold]
        self._pending = self._pending[len(out) :]
        return StopMatch(out, None)

    def flush(self) -> str:
        out, self._pending = self._pending, ""
        return out

    def _longest_stop_prefix_suffix(self) -> int:
        best = 0
        for stop in self._stops:
            for n in range(min(len(stop) - 1, len(self._pending)), best, -1):
                if self._pending.endswith(stop[:n]):
                    best = n
                    break
        return best

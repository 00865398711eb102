"""Accumulates a request's events into the state both HTTP APIs render (finished or in flight)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from .generation_events import Event, Finished, LogprobEntry, PromptLogprobs, TokenStep, TopEntry


@dataclass
class GenerationResult:
    prompt_ids: list[int]
    output_ids: list[int] = field(default_factory=list)
    text: str = ""
    output_logprobs: list[float] = field(default_factory=list)
    output_top: list[TopEntry] = field(default_factory=list)
    prompt_logprobs: PromptLogprobs | None = None
    finish_reason: dict[str, Any] | None = None
    weight_version: str | None = None
    cached_tokens: int = 0

    def add(self, event: Event) -> str:
        """Fold one event in; return the text it released."""
        if isinstance(event, PromptLogprobs):
            self.prompt_logprobs = event
            return ""
        if isinstance(event, TokenStep):
            self.output_ids.append(event.token_id)
            self.output_logprobs.append(event.logprob)
            self.output_top.append(event.top)
            self.text += event.text
            return event.text
        assert isinstance(event, Finished)
        self.finish_reason = event.reason
        self.weight_version = event.weight_version
        self.cached_tokens = event.cached_tokens
        self.text += event.text
        return event.text

    @property
    def input_token_logprobs(self) -> list[LogprobEntry]:
        return self.prompt_logprobs.token_logprobs if self.prompt_logprobs else []


async def collect(events: AsyncIterator[Event], prompt_ids: list[int]) -> GenerationResult:
    result = GenerationResult(prompt_ids=prompt_ids)
    async for event in events:
        result.add(event)
    return result

"""Next-token sampling and the log-probabilities reported for it.

Log-prob semantics (SGLang's default, i.e. `SGLANG_RETURN_ORIGINAL_LOGPROB` unset): every reported
log-prob -- sampled tokens, prompt tokens, top-k alternatives -- is `log_softmax(logits / T)` for the
request's temperature T, computed *before* top-k / top-p / min-p filtering (those only restrict what
may be drawn; they do not renormalise the reported numbers). Greedy (T == 0) reports T = 1, as SGLang
does. With `original_logprobs=True` the engine reports `log_softmax(logits)` regardless of T. Either
way a prefill of the same sequence at the same temperature returns the same numbers as decoding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

# Below this a temperature is greedy decoding (SGLang uses the same cut-off).
GREEDY_EPS = 1e-6


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1  # -1 or 0: no top-k restriction
    min_p: float = 0.0
    stop: tuple[str, ...] = ()
    stop_token_ids: frozenset[int] = field(default_factory=frozenset)
    seed: int | None = None
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    no_stop_trim: bool = False

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_EPS

    def logprob_temperature(self, original_logprobs: bool) -> float:
        # Greedy reports the untempered distribution (T = 1), like SGLang.
        return 1.0 if (self.greedy or original_logprobs) else self.temperature


def make_generator(seed: int | None, device: torch.device) -> torch.Generator:
    """A private RNG per request: the draw sequence depends only on the seed, not on other traffic."""
    gen = torch.Generator(device=device)
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(seed)
    return gen


def sample_token(
    logits: torch.Tensor, params: SamplingParams, generator: torch.Generator, *, original_logprobs: bool
) -> tuple[int, torch.Tensor]:
    """Draw one token from a 1-D float32 logits row; return it and the reported log-prob vector."""
    return sample_tokens(logits[None], [params], [generator], original_logprobs=original_logprobs)[0]


def sample_tokens(
    logits: torch.Tensor,
    params: list[SamplingParams],
    generators: list[torch.Generator],
    *,
    original_logprobs: bool,
) -> list[tuple[int, torch.Tensor]]:
    """Draw one token per row of `[rows, vocab]` float32 logits, row i with params[i] and its own RNG.

    The softmax arithmetic is done for all rows at once (one kernel each, not one per request); only the draw
    is per row, from the request's own generator, so a request's token never depends on its neighbours.
    """
    temperatures = torch.tensor(
        [p.logprob_temperature(original_logprobs) for p in params], dtype=logits.dtype, device=logits.device
    )
    logprobs = torch.log_softmax(logits / temperatures[:, None], dim=-1)
    logprobs = logprobs.clamp(min=torch.finfo(logprobs.dtype).min)  # -inf (masked logits) is not valid JSON
    probs = logprobs.exp()
    drawn: list[tuple[int, torch.Tensor]] = []
    for row, (p, generator) in enumerate(zip(params, generators, strict=True)):
        if p.greedy:
            drawn.append((int(torch.argmax(logits[row]).item()), logprobs[row]))
            continue
        row_probs = probs[row]
        if original_logprobs and p.temperature != 1.0:
            row_probs = torch.softmax(logits[row] / p.temperature, dim=-1)
        row_probs = _filter(row_probs, p)
        token = torch.multinomial(row_probs, num_samples=1, generator=generator)
        drawn.append((int(token.item()), logprobs[row]))
    return drawn


def _filter(probs: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Zero out tokens excluded by top-k, top-p and min-p (the sampler renormalises implicitly)."""
    if params.top_k > 0 and params.top_k < probs.numel():
        kth = torch.topk(probs, params.top_k).values[-1]
        probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
    if params.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        cumulative = torch.cumsum(sorted_probs, dim=-1)
        # Keep the smallest prefix whose mass reaches top_p (the first token always survives).
        drop_sorted = (cumulative - sorted_probs) > params.top_p * cumulative[-1]
        drop = torch.zeros_like(drop_sorted).scatter(0, order, drop_sorted)
        probs = probs.masked_fill(drop, 0.0)
    if params.min_p > 0.0:
        probs = probs.masked_fill(probs < params.min_p * probs.max(), 0.0)
    return probs


def top_logprobs(logprobs: torch.Tensor, k: int) -> list[tuple[float, int]]:
    """The k most likely tokens of a log-prob vector as (logprob, token_id), best first."""
    if k <= 0:
        return []
    values, ids = torch.topk(logprobs, min(k, logprobs.numel()))
    return list(zip(values.tolist(), ids.tolist(), strict=True))

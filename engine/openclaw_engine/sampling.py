"""Next-token sampling and the log-probabilities reported for it.

Log-prob semantics (SGLang's default, i.e. `SGLANG_RETURN_ORIGINAL_LOGPROB` unset): every reported
log-prob -- sampled tokens, prompt tokens, top-k alternatives -- is `log_softmax(logits / T)` for the
request's temperature T, computed *before* top-k / top-p / min-p filtering (those only restrict what
may be drawn; they do not renormalise the reported numbers). Greedy (T == 0) reports T = 1, as SGLang
does. With `original_logprobs=True` the engine reports `log_softmax(logits)` regardless of T. Either
way a prefill of the same sequence at the same temperature returns the same numbers as decoding.
"""

from __future__ import annotations

import threading
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

    The softmax arithmetic and the draw are done for all rows at once: each sampled row takes one uniform from
    its request's own generator, and its token is where that uniform falls in the row's cumulative
    distribution (inverse CDF), so a request's token never depends on its neighbours. One uniform per row,
    not one exponential per vocabulary entry as `torch.multinomial` draws: that draw was a third of a c8
    decode step (docs/benchmarks.md).
    """
    temperatures = torch.tensor(
        [p.logprob_temperature(original_logprobs) for p in params], dtype=logits.dtype, device=logits.device
    )
    # The scaled logits, then the probabilities and their cumulative sums, live in this thread's scratch
    # tensor; only the log-probs (returned) are new memory. Each new 2 MiB tensor of a c32 step was faulted in
    # from the kernel again at every step (glibc hands back freed memory above 4 MiB at the top of its heap):
    # five of them made sampling 6 ms instead of 1.6 (docs/benchmarks.md).
    scratch = _scratch(logits)
    logprobs = torch.log_softmax(torch.div(logits, temperatures[:, None], out=scratch), dim=-1)
    logprobs.clamp_(min=torch.finfo(logprobs.dtype).min)  # -inf (masked logits) is not valid JSON
    probs = torch.exp(logprobs, out=scratch)
    tokens: list[int] = [0] * len(params)
    rows: list[int] = []
    weights: list[torch.Tensor] = []
    reshaped = False  # some row's weights are not its row of `probs` (another temperature, a filter)
    for row, p in enumerate(params):
        if p.greedy:
            tokens[row] = int(torch.argmax(logits[row]).item())
            continue
        own = probs[row]
        row_probs = own
        if original_logprobs and p.temperature != 1.0:
            row_probs = torch.softmax(logits[row] / p.temperature, dim=-1)
        filtered = _filter(row_probs, p)  # the same tensor back when nothing is filtered
        reshaped = reshaped or filtered is not own
        rows.append(row)
        weights.append(filtered)
    if rows:
        if reshaped:
            stacked = torch.stack(weights)
        else:  # the common case: every sampled row draws from its own softmax row, no copy needed
            stacked = probs if len(rows) == len(params) else probs[rows]
        for row, token in zip(rows, _inverse_cdf(stacked, [generators[r] for r in rows]), strict=True):
            tokens[row] = token
    return [(token, logprobs[row]) for row, token in enumerate(tokens)]


def _inverse_cdf(stacked: torch.Tensor, generators: list[torch.Generator]) -> list[int]:
    """One index per row of non-negative weights, drawn in proportion to them with the row's generator.

    The weights are summed in place: `stacked` holds their cumulative sums afterwards.
    """
    # float32: a float64 cumulative sum is ten times slower on CPU, and float32's rounding over a vocabulary
    # moves no token's probability by more than about 1e-6 of the total.
    cdf = stacked.cumsum_(dim=-1)
    uniforms = torch.cat([torch.rand(1, generator=g, dtype=cdf.dtype, device=cdf.device) for g in generators])
    # The first index whose cumulative weight exceeds u · total: index i with probability w_i / total. The
    # target stays below the total even where u · total rounds up to it, so the index found has
    # cdf[i] > cdf[i - 1], that is a weight above zero, and is never past the last token with weight.
    totals = cdf[:, -1:]
    targets = torch.minimum(uniforms[:, None] * totals, torch.nextafter(totals, torch.zeros_like(totals)))
    return torch.searchsorted(cdf, targets, right=True).squeeze(-1).tolist()


_local = threading.local()


def _scratch(like: torch.Tensor) -> torch.Tensor:
    """A tensor of `like`'s shape that this thread's later calls reuse (grown when a batch needs more)."""
    buffer: torch.Tensor | None = getattr(_local, "buffer", None)
    if (
        buffer is None
        or buffer.numel() < like.numel()
        or buffer.dtype != like.dtype
        or buffer.device != like.device
    ):
        buffer = torch.empty(like.numel(), dtype=like.dtype, device=like.device)
        _local.buffer = buffer
    return buffer[: like.numel()].view(like.shape)


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

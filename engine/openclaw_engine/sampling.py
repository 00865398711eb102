"""Next-token sampling and the log-probabilities reported for it.

Log-prob semantics (SGLang's default, i.e. `SGLANG_RETURN_ORIGINAL_LOGPROB` unset): every reported
log-prob -- sampled tokens, prompt tokens, top-k alternatives -- is `log_softmax(logits / T)` for the
request's temperature T, computed *before* top-k / top-p / min-p filtering (those only restrict what
may be drawn; they do not renormalise the reported numbers). Greedy (T == 0) reports T = 1, as SGLang
does. With `original_logprobs=True` the engine reports `log_softmax(logits)` regardless of T. Either
way a prefill of the same sequence at the same temperature returns the same numbers as decoding.
"""

from __future__ import annotations

import math
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

    The softmax arithmetic and the draws are done for all rows at once; each row's randomness comes from its
    request's own generator, so a request's token never depends on its neighbours. A seeded request's token is
    the one `torch.multinomial(weights, 1, generator=g)` draws (`_exponential_race`), so a seed gives the same
    reply it gave when each row was drawn alone. A request without a seed has no reply to reproduce: its row
    takes one uniform and draws by inverse CDF (`_inverse_cdf`), from the same distribution, where the race
    needs a uniform for every vocabulary entry.
    """
    temperatures = torch.tensor(
        [p.logprob_temperature(original_logprobs) for p in params], dtype=logits.dtype, device=logits.device
    )
    scratch = _scratch()
    # The scaled logits, then the probabilities, live in this thread's scratch memory; only the log-probs
    # (returned) are new. Each fresh 2 MiB tensor of a c32 step was faulted in from the kernel again at every
    # step (glibc hands freed memory above 4 MiB at the top of its heap back): docs/benchmarks.md.
    scaled = torch.div(
        logits, temperatures[:, None], out=scratch.get("scaled", logits.shape, logits.dtype, logits.device)
    )
    logprobs = torch.log_softmax(scaled, dim=-1)
    logprobs.clamp_(min=torch.finfo(logprobs.dtype).min)  # -inf (masked logits) is not valid JSON
    probs = torch.exp(logprobs, out=scaled)
    tokens: list[int] = [0] * len(params)
    seeded = _Draws()  # rows that must draw what torch.multinomial drew
    unseeded = _Draws()
    for row, p in enumerate(params):
        if p.greedy:
            tokens[row] = int(torch.argmax(logits[row]).item())
            continue
        own = probs[row]
        row_probs = own
        if original_logprobs and p.temperature != 1.0:
            row_probs = torch.softmax(logits[row] / p.temperature, dim=-1)
        filtered = _filter(row_probs, p)  # the same tensor back when nothing is filtered
        (unseeded if p.seed is None else seeded).add(row, filtered, filtered is not own)
    # The race reads its rows' weights; the inverse CDF sums its rows in place, so it goes second.
    if seeded.rows:
        picked = _exponential_race(
            seeded.stacked(probs, scratch, "seeded"), seeded.generators(generators), scratch
        )
        seeded.take(picked, tokens)
    if unseeded.rows:
        unseeded.take(
            _inverse_cdf(unseeded.stacked(probs, scratch, "unseeded"), unseeded.generators(generators)),
            tokens,
        )
    return [(token, logprobs[row]) for row, token in enumerate(tokens)]


class _Draws:
    """The sampled rows that draw one way, and their weights."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self._weights: list[torch.Tensor] = []
        # Some row's weights are not its row of `probs` (another temperature, a filter).
        self._reshaped = False

    def add(self, row: int, weights: torch.Tensor, reshaped: bool) -> None:
        self.rows.append(row)
        self._weights.append(weights)
        self._reshaped = self._reshaped or reshaped

    def generators(self, generators: list[torch.Generator]) -> list[torch.Generator]:
        return [generators[row] for row in self.rows]

    def take(self, picked: list[int], tokens: list[int]) -> None:
        for row, token in zip(self.rows, picked, strict=True):
            tokens[row] = token

    def stacked(self, probs: torch.Tensor, scratch: _Scratch, name: str) -> torch.Tensor:
        """`[len(rows), vocab]` weights: `probs` itself in the common case (every row, nothing filtered), else
        copied into scratch memory under `name`."""
        if not self._reshaped and len(self.rows) == probs.shape[0]:
            return probs
        out = scratch.get(name, (len(self.rows), probs.shape[1]), probs.dtype, probs.device)
        if self._reshaped:
            return torch.stack(self._weights, out=out)
        return torch.index_select(probs, 0, torch.tensor(self.rows, device=probs.device), out=out)


def _inverse_cdf(weights: torch.Tensor, generators: list[torch.Generator]) -> list[int]:
    """One index per row of non-negative weights, drawn in proportion to them with one uniform of the row's
    generator. The weights are summed in place: `weights` holds their cumulative sums afterwards.
    """
    # float32: a float64 cumulative sum is ten times slower on CPU, and float32's rounding over a vocabulary
    # moves no token's probability by more than about 1e-6 of the total.
    cdf = weights.cumsum_(dim=-1)
    uniforms = torch.cat([torch.rand(1, generator=g, dtype=cdf.dtype, device=cdf.device) for g in generators])
    # The first index whose cumulative weight exceeds u * total: index i with probability w_i / total. The
    # target stays below the total where u * total rounds up to it, so the index found has
    # cdf[i] > cdf[i - 1], a weight above zero, and is never past the last token with weight.
    totals = cdf[:, -1:]
    targets = torch.minimum(uniforms[:, None] * totals, torch.nextafter(totals, torch.zeros_like(totals)))
    return torch.searchsorted(cdf, targets, right=True).squeeze(-1).tolist()


def _exponential_race(
    weights: torch.Tensor, generators: list[torch.Generator], scratch: _Scratch
) -> list[int]:
    """Per row of non-negative float32 weights, the index `torch.multinomial(row, 1, generator=g)` returns.

    PyTorch draws one sample by an exponential race: E_i = -log1p(-u_i) from one double uniform per vocabulary
    entry (the generator advanced exactly as here), then the first argmax of float32(w_i / float32(E_i)).
    Drawing that one row at a time cost a third of a c8 decode step (docs/benchmarks.md). Here each row still
    takes its uniforms from its own generator, but the arithmetic is batched, and the exact race value is
    computed only where it can win: E >= u for every u in [0, 1), and float32 rounding keeps that order, so
    float32(w / float32(u)) bounds the race value from above, and only entries whose bound reaches the race
    value of the bound's own leader can hold the maximum (about one or two per row).
    """
    n, vocab = weights.shape
    uniforms = scratch.get("uniforms", (n, vocab), torch.float64, weights.device)
    for row, generator in enumerate(generators):
        uniforms[row].uniform_(generator=generator)
    bounds = scratch.get("bounds", (n, vocab), weights.dtype, weights.device)
    bounds.copy_(uniforms)
    torch.div(weights, bounds, out=bounds)
    lead = bounds.argmax(dim=-1, keepdim=True)
    lead_value = _race_value(weights.gather(1, lead), uniforms.gather(1, lead))
    # "Not below" rather than "at least": a NaN bound (a zero weight meeting a uniform of exactly 0) stays in
    # the race, as PyTorch's argmax takes a NaN first.
    contenders = torch.lt(bounds, lead_value, out=scratch.get("mask", (n, vocab), torch.bool, weights.device))
    contenders.logical_not_()
    row_ids, column_ids = contenders.nonzero(as_tuple=True)
    values = _race_value(weights[row_ids, column_ids], uniforms[row_ids, column_ids])
    race = bounds.fill_(float("-inf"))
    race[row_ids, column_ids] = values
    return race.argmax(dim=-1).tolist()


def _race_value(weights: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """float32(w / float32(-log1p(-u))), rounded as `torch.multinomial` rounds it."""
    exponentials = torch.log1p(-uniforms).neg_().to(weights.dtype)
    return weights / exponentials


class _Scratch:
    """Tensors a thread's sampling reuses from step to step, by name, grown when a batch needs more."""

    def __init__(self) -> None:
        self._buffers: dict[str, torch.Tensor] = {}

    def get(
        self, name: str, shape: tuple[int, ...] | torch.Size, dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor:
        numel = math.prod(shape)
        buffer = self._buffers.get(name)
        if buffer is None or buffer.numel() < numel or buffer.dtype != dtype or buffer.device != device:
            buffer = torch.empty(numel, dtype=dtype, device=device)
            self._buffers[name] = buffer
        return buffer[:numel].view(shape)


_local = threading.local()


def _scratch() -> _Scratch:
    scratch: _Scratch | None = getattr(_local, "scratch", None)
    if scratch is None:
        scratch = _local.scratch = _Scratch()
    return scratch


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

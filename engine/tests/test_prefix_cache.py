"""The radix prefix cache alone: longest-prefix matches, edge splits, LRU eviction within a token budget."""

from __future__ import annotations

import torch

from openclaw_engine.packed_attention import SequenceKV
from openclaw_engine.prefix_cache import PrefixCache

LAYERS = 2


def kv_for(ids: list[int]) -> SequenceKV:
    """A KV cache whose entries encode their token id (k) and position (v), so copies can be checked."""
    kv = SequenceKV(LAYERS)
    n = len(ids)
    k = torch.tensor(ids, dtype=torch.float32).repeat(2, 1)[:, :, None].expand(2, n, 4).clone()
    v = torch.arange(n, dtype=torch.float32).repeat(2, 1)[:, :, None].expand(2, n, 4).clone()
    for layer in range(LAYERS):
        kv.write(layer, 0, k + layer, v)
    kv.length = n
    return kv


def loaded(segments: list) -> SequenceKV:
    kv = SequenceKV(LAYERS)
    kv.load(segments)
    return kv


def test_longest_prefix_is_found_and_copied_exactly() -> None:
    cache = PrefixCache(budget_tokens=1000)
    a = [1, 2, 3, 4, 5, 6]
    cache.insert(a, kv_for(a), len(a))
    assert cache.tokens == 6
    n, segments = cache.match([1, 2, 3, 9, 9], limit=5)
    assert n == 3
    got = loaded(segments)
    k, v = got.layer(1)
    assert k[0, :, 0].tolist() == [2.0, 3.0, 4.0] and v[0, :, 0].tolist() == [0.0, 1.0, 2.0]
    assert cache.match([7, 1, 2], limit=3)[0] == 0
    assert cache.match(a, limit=4)[0] == 4  # never beyond the limit (rows whose logits are needed)


def test_a_diverging_insert_splits_the_edge_and_copies_only_new_tokens() -> None:
    cache = PrefixCache(budget_tokens=1000)
    a = [1, 2, 3, 4, 5, 6]
    b = [1, 2, 3, 7, 8]
    cache.insert(a, kv_for(a), len(a))
    cache.insert(b, kv_for(b), len(b))
    assert cache.tokens == 8  # 1 2 3 shared, then 4 5 6 and 7 8
    for ids in (a, b):
        n, segments = cache.match(ids + [0], limit=len(ids))
        assert n == len(ids)
        k, v = loaded(segments).layer(0)
        assert k[0, :, 0].tolist() == [float(t) for t in ids] and v[0, :, 0].tolist() == list(
            map(float, range(n))
        )
    cache.insert(a[:4], kv_for(a[:4]), 4)  # already cached: nothing added
    assert cache.tokens == 8


def test_least_recently_used_leaves_are_evicted_to_the_budget() -> None:
    cache = PrefixCache(budget_tokens=10)
    shared = [1, 2, 3, 4]
    a, b, c = shared + [10, 11, 12], shared + [20, 21, 22], shared + [30, 31, 32]
    cache.insert(a, kv_for(a), len(a))
    cache.insert(b, kv_for(b), len(b))  # 4 + 3 + 3 = 10 tokens
    cache.match(a, limit=len(a))  # a is now more recent than b
    cache.insert(c, kv_for(c), len(c))  # 13 > 10: b's leaf goes
    assert cache.tokens == 10
    assert cache.match(a, limit=len(a))[0] == len(a)
    assert cache.match(b, limit=len(b))[0] == len(shared)
    assert cache.match(c, limit=len(c))[0] == len(c)
    cache.clear()
    assert cache.tokens == 0 and cache.match(a, limit=len(a))[0] == 0


def test_a_zero_budget_disables_the_cache() -> None:
    cache = PrefixCache(budget_tokens=0)
    cache.insert([1, 2, 3], kv_for([1, 2, 3]), 3)
    assert cache.tokens == 0 and cache.match([1, 2, 3], limit=3)[0] == 0

"""Prefix cache: a radix tree over token ids whose edges hold the keys and values of their tokens.

SGLang's RadixAttention idea at token granularity: a finished prompt (and a finished sequence) is inserted
once; a new request copies the KV of its longest cached prefix into its own cache and prefills only the rest.
Each LoRA adapter load has its own tree (`key`: (adapter name, load epoch); None for the base), so KV built
under one adapter is never reused under another.
OpenClaw's system prompt and tools are the same every turn, and a conversation's next prompt extends its last
one, so most of a turn's prompt is found here. Entries hold KV computed under one set of weights: the runner
clears the cache whenever the weights change. Least-recently-used leaves are evicted to stay within a budget
of tokens. Not thread-safe by itself: the batch scheduler's thread is its only user, other threads go through
its lock (`flush`).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Hashable

import torch

from .packed_attention import SequenceKV

LayerKV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: (k, v), each [kv_heads, tokens, head_dim]


class _Node:
    __slots__ = ("key", "kv", "children", "parent", "last_used")

    def __init__(self, key: list[int], kv: LayerKV, parent: _Node | None) -> None:
        self.key = key
        self.kv = kv
        self.children: dict[int, _Node] = {}
        self.parent = parent
        self.last_used = 0

    def split(self, at: int) -> _Node:
        """Keep key[:at] here; move the rest (and the children) into a new child."""
        tail = _Node(self.key[at:], [(k[:, at:].clone(), v[:, at:].clone()) for k, v in self.kv], self)
        tail.children, tail.last_used = self.children, self.last_used
        for child in tail.children.values():
            child.parent = tail
        self.key = self.key[:at]
        self.kv = [(k[:, :at].clone(), v[:, :at].clone()) for k, v in self.kv]
        self.children = {tail.key[0]: tail}
        return tail


class PrefixCache:
    def __init__(self, budget_tokens: int) -> None:
        self.budget_tokens = max(0, budget_tokens)
        self.lock = threading.Lock()
        self._roots: dict[Hashable, _Node] = {}
        self._tokens = 0
        self._clock = itertools.count(1)

    @property
    def tokens(self) -> int:
        return self._tokens

    def clear(self) -> None:
        with self.lock:
            self._roots = {}
            self._tokens = 0

    def drop(self, key: Hashable) -> None:
        """Forget every prefix cached under `key` (an unloaded or replaced adapter)."""
        with self.lock:
            root = self._roots.pop(key, None)
            if root is not None:
                self._tokens -= sum(len(n.key) for n in _walk(root) if n is not root)

    def match(self, ids: list[int], limit: int, key: Hashable = None) -> tuple[int, list[LayerKV]]:
        """The longest cached prefix of ids[:limit] under `key`: its length and its KV segments, in order."""
        with self.lock:
            now = next(self._clock)
            node, pos, segments = self._roots.get(key), 0, []
            if node is None:
                return 0, []
            while pos < limit:
                child = node.children.get(ids[pos])
                if child is None:
                    break
                common = _common_length(child.key, ids, pos, limit)
                child.last_used = now
                if common < len(child.key):
                    segments.append([(k[:, :common], v[:, :common]) for k, v in child.kv])
                    pos += common
                    break
                segments.append(child.kv)
                pos += common
                node = child
            return pos, segments

    def insert(self, ids: list[int], kv: SequenceKV, length: int, key: Hashable = None) -> None:
        """Cache ids[:length] under `key`; its KV is positions [0, length) of `kv` (copied if new)."""
        if self.budget_tokens <= 0 or length <= 0:
            return
        with self.lock:
            now = next(self._clock)
            node, pos = self._roots.setdefault(key, _Node([], [], None)), 0
            while pos < length:
                child = node.children.get(ids[pos])
                if child is None:
                    leaf = _Node(list(ids[pos:length]), kv.copy_range(pos, length), node)
                    leaf.last_used = now
                    node.children[ids[pos]] = leaf
                    self._tokens += length - pos
                    break
                common = _common_length(child.key, ids, pos, length)
                child.last_used = now
                if pos + common == length:
                    break  # already cached
                if common < len(child.key):
                    child.split(common)
                pos += common
                node = child
            self._evict()

    def _evict(self) -> None:
        while self._tokens > self.budget_tokens:
            roots = list(self._roots.values())
            leaves = [n for r in roots for n in _walk(r) if not n.children and n is not r]
            if not leaves:
                return
            victim = min(leaves, key=lambda n: n.last_used)
            assert victim.parent is not None
            del victim.parent.children[victim.key[0]]
            self._tokens -= len(victim.key)


def _common_length(key: list[int], ids: list[int], pos: int, limit: int) -> int:
    n = min(len(key), limit - pos)
    if key[:n] == ids[pos : pos + n]:
        return n
    i = 0
    while i < n and key[i] == ids[pos + i]:
        i += 1
    return i


def _walk(node: _Node) -> list[_Node]:
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(current.children.values())
    return out

"""Brute-force oracles for the PCFG chart: enumerate every tree of a tiny grammar and sentence (test references).

Exponential in the sentence length; meant for sentences of at most ~6 words and a few
nonterminals.  Trees use the node-row format of :func:`samplers.models.chart.sample_trees`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .chart import Expectations, _as_mask
from .pcfg import Grammar


def enumerate_trees(grammar: Grammar, words, mask=None) -> list[tuple[tuple, float]]:
    """All trees with positive weight whose constituents the mask keeps.

    Returns
    -------
    list of (tree, log_weight)
        ``tree`` is a tuple of ``(i, k, label, rule)`` rows in pre-order (hashable).
    """
    ids = grammar.encode(words)
    n = len(ids)
    keep = _as_mask(mask, n)
    lex = grammar.lexical_log_weights
    rules, logw, offsets = grammar.binary_rules, grammar.binary_log_weights, grammar.rule_offsets

    @lru_cache(maxsize=None)
    def trees(i: int, k: int, a: int) -> tuple:
        if not keep[i, k]:
            return ()
        if k - i == 1:
            w = lex[a, ids[i]]
            return (((i, k, a, -1),), w) if np.isfinite(w) else ()
        out = []
        for r in range(offsets[a], offsets[a + 1]):
            b, c = int(rules[r, 1]), int(rules[r, 2])
            for j in range(i + 1, k):
                left, right = trees(i, j, b), trees(j, k, c)
                for lt, lw in _pairs(left):
                    for rt, rw in _pairs(right):
                        out.append((((i, k, a, r),) + lt + rt, logw[r] + lw + rw))
        return tuple(out)

    return [(t, float(w)) for t, w in _pairs(trees(0, n, grammar.start))]


def _pairs(entry: tuple):
    """Normalise the cache's two shapes (a single leaf pair or a tuple of pairs) to pairs."""
    if len(entry) == 2 and isinstance(entry[1], (float, np.floating)):
        return [entry]
    return list(entry)


def enumerated_expectations(grammar: Grammar, words, mask=None) -> Expectations:
    """Exact expectations by summing over :func:`enumerate_trees` (the brute-force oracle)."""
    ids = grammar.encode(words)
    n = len(ids)
    found = enumerate_trees(grammar, ids, mask)
    spans = np.zeros((n + 1, n + 1))
    counts = np.zeros(grammar.n_binary)
    lexc = np.zeros_like(grammar.lexical_log_weights)
    if not found:
        return Expectations(-np.inf, spans, counts, lexc)
    logws = np.array([w for _, w in found])
    log_z = float(np.logaddexp.reduce(logws))
    for (tree, _), p in zip(found, np.exp(logws - log_z)):
        for i, k, a, r in tree:
            spans[i, k] += p
            if r >= 0:
                counts[r] += p
            else:
                lexc[a, ids[i]] += p
    return Expectations(log_z, spans, counts, lexc)

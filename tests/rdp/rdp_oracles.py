"""Brute-force enumeration oracles for tiny chains, span-labelled trees and CNF PCFGs (tests only)."""

from __future__ import annotations

import itertools
from functools import lru_cache

import torch


def chain_scores(emissions: torch.Tensor, transitions: torch.Tensor, length: int):
    """All N^L state sequences of batch item 0 of length ``length`` and their log potentials."""
    n = emissions.shape[-1]
    paths = list(itertools.product(range(n), repeat=length))
    scores = []
    for path in paths:
        s = emissions[0, 0, path[0]]
        for t in range(1, length):
            tr = transitions if transitions.dim() == 2 else transitions[0, t - 1]
            s = s + tr[path[t - 1], path[t]] + emissions[0, t, path[t]]
        scores.append(s)
    return paths, torch.stack(scores)


def chain_truth(emissions, transitions, length):
    """log Z, node marginals (T, N) and entropy of item 0 by enumeration."""
    paths, scores = chain_scores(emissions, transitions, length)
    log_z = torch.logsumexp(scores, 0)
    p = torch.exp(scores - log_z)
    marg = torch.zeros(emissions.shape[1], emissions.shape[2], dtype=emissions.dtype)
    for path, pk in zip(paths, p):
        for t, s in enumerate(path):
            marg[t, s] += pk
    return log_z, marg, -(p * p.log()).sum(), paths, p


@lru_cache(maxsize=None)
def bracketings(i: int, j: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """All binary trees over positions i..j, each as its tuple of spans."""
    if i == j:
        return (((i, i),),)
    out = []
    for m in range(i, j):
        for left in bracketings(i, m):
            for right in bracketings(m + 1, j):
                out.append(((i, j),) + left + right)
    return tuple(out)


def tree_truth(spans: torch.Tensor):
    """log Z, span-label marginals (T, T, N) and entropy of item 0 of a span-labelled tree CRF."""
    length, n = spans.shape[1], spans.shape[-1]
    scores, structures = [], []
    for tree in bracketings(0, length - 1):
        for labels in itertools.product(range(n), repeat=len(tree)):
            scores.append(sum(spans[0, i, j, k] for (i, j), k in zip(tree, labels)))
            structures.append(list(zip(tree, labels)))
    scores = torch.stack(scores)
    log_z = torch.logsumexp(scores, 0)
    p = torch.exp(scores - log_z)
    marg = torch.zeros(length, length, n, dtype=spans.dtype)
    for st, pk in zip(structures, p):
        for (i, j), k in st:
            marg[i, j, k] += pk
    return log_z, marg, -(p * p.log()).sum()


def pcfg_truth(rules, terminal, root):
    """log Z and entropy of item 0 of a CNF PCFG by enumerating labelled binary trees."""
    length, nt = terminal.shape[1], terminal.shape[2]
    scores = []
    for tree in bracketings(0, length - 1):
        # children of each internal span, to score rules A -> B C
        for labels in itertools.product(range(nt), repeat=len(tree)):
            lab = dict(zip(tree, labels))
            s = root[lab[(0, length - 1)]]
            for (i, j), a in lab.items():
                if i == j:
                    s = s + terminal[0, i, a]
                    continue
                m = next(m for m in range(i, j) if (i, m) in lab and (m + 1, j) in lab)
                s = s + rules[a, lab[(i, m)], lab[(m + 1, j)]]
            scores.append(s)
    scores = torch.stack(scores)
    log_z = torch.logsumexp(scores, 0)
    p = torch.exp(scores - log_z)
    return log_z, -(p * p.log()).sum()

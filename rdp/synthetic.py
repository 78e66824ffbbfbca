"""Synthetic chains and trees with controlled entropy (the dense / intermediate / long-tail cases of
Sec. 5.1 of the RDP paper), reproducible from a seed.

Construction (chains).  Draw state embeddings S (N, D) and step queries W (T, D) with i.i.d.
N(0, 1 / D) entries (``torch.Generator`` seeded with ``seed``, float64).  With a scale a > 0,

    emissions[t, i]   = a * W_t . S_i                  (B = 1, T, N),
    transitions(i, j) = a * rho * S_i . S_j = e_i . e_j with e_i = sqrt(a * rho) S_i,

so transitions are factorised (``state_embeddings`` = sqrt(a rho) S, never an N x N matrix).  The
scale a is found by bisection so that the mean per-step entropy of softmax(emissions[t]) equals
``fraction * log N``; ``fraction`` is 0.9 (dense), 0.6 (intermediate) or 0.3 (long-tail) or any
value in (0, 1).  The chain's own per-step entropy (exact entropy DP / T) is lower than the emission
entropy because transitions couple the steps; :func:`describe` reports both.

Construction (trees).  Span queries W (T, T, D) instead of step queries; span potentials
``a * W_ij . S_k`` (B = 1, T, T, N), with a set the same way from the mean per-span label entropy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from samplers.validation import check_float, check_int

from ._torch import torch

REGIMES = {"dense": 0.9, "intermediate": 0.6, "long-tail": 0.3}


def regime_fraction(regime: "str | float") -> float:
    """The entropy fraction of a named regime, or a float in (0, 1) as given."""
    if isinstance(regime, str):
        if regime not in REGIMES:
            raise ValueError(f"regime must be one of {sorted(REGIMES)} or a fraction in (0, 1); got {regime!r}")
        return REGIMES[regime]
    return check_float(regime, "regime", low=0.0, high=1.0, low_open=True, high_open=True)


def _mean_entropy(logits: "torch.Tensor") -> float:
    logp = torch.log_softmax(logits, dim=-1)
    return float(-(logp.exp() * logp).sum(-1).mean())


def calibrate_scale(base: "torch.Tensor", target: float, *, iters: int = 60) -> float:
    """Bisection for a > 0 with mean row entropy of softmax(a * base) equal to ``target`` (nats)."""
    lo, hi = 0.0, 1.0
    while _mean_entropy(hi * base) > target and hi < 1e6:
        hi *= 2.0
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if _mean_entropy(mid * base) > target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@dataclass
class SyntheticChain:
    """A synthetic chain: emissions (1, T, N), state embeddings (N, D) and how it was built."""

    emissions: "torch.Tensor"
    state_embeddings: "torch.Tensor"
    regime: str
    fraction: float
    scale: float
    emission_entropy: float  # achieved mean per-step entropy of softmax(emissions), nats
    seed: int

    @property
    def n_states(self) -> int:
        """Number of states N (the last axis of ``emissions``)."""
        return int(self.emissions.shape[-1])


@dataclass
class SyntheticTree:
    """A synthetic span-labelled tree CRF: span potentials (1, T, T, N) and how it was built."""

    span_potentials: "torch.Tensor"
    regime: str
    fraction: float
    scale: float
    label_entropy: float  # achieved mean per-span entropy of softmax over labels, nats
    seed: int


def _draw(n_states, length, regime, dim, seed, query_shape):
    """Check the common arguments; draw states S (N, D) and queries (*query_shape, D), N(0, 1/D)."""
    n_states = check_int(n_states, "n_states", low=2)
    check_int(length, "length", low=1)
    dim = check_int(dim, "dim", low=1)
    fraction = regime_fraction(regime)
    gen = torch.Generator().manual_seed(check_int(seed, "seed", low=0))
    states = torch.randn((n_states, dim), generator=gen, dtype=torch.float64) / math.sqrt(dim)
    queries = torch.randn((*query_shape, dim), generator=gen, dtype=torch.float64) / math.sqrt(dim)
    return n_states, fraction, states, queries


def make_chain(n_states: int, length: int, regime: "str | float" = "dense", *, dim: int = 32,
               coupling: float = 0.15, seed: int = 0) -> SyntheticChain:
    """A reproducible synthetic chain with controlled emission entropy (see the module docstring).

    Parameters
    ----------
    n_states, length : int
        N >= 2 states, T >= 1 steps.
    regime : {"dense", "intermediate", "long-tail"} or float
        Target mean emission entropy as a fraction of log N.
    dim : int
        Embedding dimension D.
    coupling : float
        rho >= 0, strength of the transitions relative to the emissions.
    seed : int
        Seed of the torch generator.
    """
    coupling = check_float(coupling, "coupling", low=0.0)
    n_states, fraction, states, queries = _draw(n_states, length, regime, dim, seed, (length,))
    base = queries @ states.T
    scale = calibrate_scale(base, fraction * math.log(n_states))
    emissions = (scale * base).unsqueeze(0)
    return SyntheticChain(emissions, math.sqrt(scale * coupling) * states, str(regime), fraction, scale,
                          _mean_entropy(emissions[0]), seed)


def make_tree(n_states: int, length: int, regime: "str | float" = "dense", *, dim: int = 32,
              seed: int = 0) -> SyntheticTree:
    """A reproducible synthetic tree CRF with controlled per-span label entropy (module docstring)."""
    n_states, fraction, states, queries = _draw(n_states, length, regime, dim, seed, (length, length))
    base = queries @ states.T
    upper = torch.triu(torch.ones(length, length, dtype=torch.bool))
    scale = calibrate_scale(base[upper], fraction * math.log(n_states))
    spans = (scale * base).unsqueeze(0)
    return SyntheticTree(spans, str(regime), fraction, scale, _mean_entropy(spans[0][upper]), seed)


def describe(problem: "SyntheticChain | SyntheticTree") -> str:
    """One line with the achieved entropies (emission/label entropy, and the chain's entropy per step)."""
    if isinstance(problem, SyntheticChain):
        from .chain import chain_exact_reference

        n, t = problem.n_states, problem.emissions.shape[1]
        ref = chain_exact_reference(problem.emissions, state_embeddings=problem.state_embeddings)
        per_step = float(ref["entropy"][0]) / t
        return (f"chain {problem.regime}: N={n} T={t} scale={problem.scale:.3f} emission entropy "
                f"{problem.emission_entropy:.3f} nats = {problem.emission_entropy / math.log(n):.2f} log N "
                f"(target {problem.fraction:.2f}); chain entropy per step {per_step:.3f} = "
                f"{per_step / math.log(n):.2f} log N; log Z = {float(ref['log_partition'][0]):.3f}")
    n = problem.span_potentials.shape[-1]
    return (f"tree {problem.regime}: N={n} T={problem.span_potentials.shape[1]} scale={problem.scale:.3f} "
            f"label entropy {problem.label_entropy:.3f} nats = {problem.label_entropy / math.log(n):.2f} log N "
            f"(target {problem.fraction:.2f})")


if __name__ == "__main__":  # python -m rdp.synthetic: print the achieved entropies of the Table-2 problems
    for regime in REGIMES:
        print(describe(make_chain(2000, 50, regime, seed=0)))
        print(describe(make_tree(2000, 20, regime, seed=0)))

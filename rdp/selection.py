"""Randomized index selection (Eq. 5-7 of the RDP paper), shared by every randomized DP.

At every DP site s (a chain step t, or a tree span (i, j)) the proposal q_s over the N states gives
the index set Omega_s = Omega_s^{K1} + Omega_s^{K2}: the K1 states with the largest q_s (Eq. 5, 7)
and K2 states drawn **with replacement** from q_s restricted to the other N - K1 states (Eq. 6).
Each chosen state carries a log weight: 0 for the top states, and ``-log(K2 * q~_s(delta))`` for a
sampled state delta, where q~_s is q_s renormalised over the remaining states (the correction
divided out in Eq. 8, 17, 18, 20; Appendix A, Eq. 35).  With these weights every randomized sum
``sum_{c in Omega_s} w(c) f(c)`` is an unbiased estimate of ``sum_{i=1}^N f(i)``.

Selection runs under ``torch.no_grad`` (the paper moves Eq. 5-7 outside the AD engine); gradients
only flow through the potentials gathered at the chosen states.

Special cases
-------------
* ``k2 = 0``: Top-K summation (Sun et al. 2019), no correction, biased downwards.
* ``k1 + k2 = N``: the remainder holds exactly K2 states; it is then enumerated (weight 1) instead
  of sampled, so the randomized DP reproduces the exact one.
* a remainder with zero proposal mass at some site: K2 draws fall back to the uniform distribution
  over the remainder at that site (the estimator needs q > 0 wherever the summands are non-zero).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ._checks import check_budget
from ._torch import torch


class IndexSets(NamedTuple):
    """Chosen states per DP site.

    Attributes
    ----------
    index : LongTensor (..., K1 + K2)
        The top-K1 states followed by the K2 sampled states (with repeats) of each site.
    log_weight : Tensor (..., K1 + K2)
        0 for top states, ``-log(K2 q~(delta))`` for sampled ones; same dtype as the proposal.
    """

    index: "torch.Tensor"
    log_weight: "torch.Tensor"


def select_indices(q: "torch.Tensor", k1: int, k2: int, generator: "torch.Generator | None" = None) -> IndexSets:
    """Top-K1 plus K2 sampled-with-replacement states for every site of the proposal ``q``.

    Parameters
    ----------
    q : Tensor (..., N)
        Proposal probabilities per site (rows sum to 1; see :mod:`rdp.proposals`).
    k1, k2 : int
        Top and sampled states per site, ``k1, k2 >= 0`` and ``1 <= k1 + k2 <= N``.
    generator : torch.Generator, optional
        Source of the K2 draws (on q's device).

    Returns
    -------
    IndexSets
        ``index`` and ``log_weight`` of shape (..., k1 + k2).

    Raises
    ------
    ValueError
        ``k1 + k2`` outside ``[1, N]`` (more states than ``q`` has would repeat states in the top-K1 part
        and leave nothing to sample), or ``q`` without a state axis.
    """
    if not isinstance(q, torch.Tensor) or q.dim() == 0:
        raise ValueError("q must be a tensor of shape (..., N) with the N proposal probabilities last")
    k1, k2 = check_budget(k1, k2, q.shape[-1])
    with torch.no_grad():
        n = q.shape[-1]
        lead = q.shape[:-1]
        flat = q.reshape(-1, n)
        top = flat.topk(k1, dim=-1).indices if k1 > 0 else flat.new_zeros((flat.shape[0], 0), dtype=torch.long)
        zeros = torch.zeros(top.shape, dtype=q.dtype, device=q.device)
        if k2 == 0:
            return IndexSets(top.reshape(*lead, k1), zeros.reshape(*lead, k1))
        rest = flat.scatter(-1, top, 0.0)
        if k1 + k2 == n:  # the remainder is exactly K2 states: enumerate it, weight 1
            in_rest = torch.ones_like(flat, dtype=torch.bool).scatter(-1, top, False)
            others = torch.nonzero(in_rest)[:, 1].reshape(flat.shape[0], k2)
            index = torch.cat([top, others], dim=-1)
            return IndexSets(index.reshape(*lead, n), torch.zeros(index.shape, dtype=q.dtype,
                                                                   device=q.device).reshape(*lead, n))
        mass = rest.sum(-1, keepdim=True)
        empty = mass <= 0
        if bool(empty.any()):
            uniform = torch.ones_like(flat).scatter(-1, top, 0.0)
            rest = torch.where(empty, uniform, rest)
            mass = rest.sum(-1, keepdim=True)
        rest = rest / mass
        sampled = torch.multinomial(rest, k2, replacement=True, generator=generator)
        log_w = -(math.log(k2) + rest.gather(-1, sampled).log())
        index = torch.cat([top, sampled], dim=-1).reshape(*lead, k1 + k2)
        log_weight = torch.cat([zeros, log_w], dim=-1).reshape(*lead, k1 + k2)
        return IndexSets(index, log_weight)


def select_uniform(lead: tuple[int, ...], n: int, k1: int, k2: int, generator: "torch.Generator | None" = None, *,
                   dtype: "torch.dtype" = torch.float64, device=None) -> IndexSets:
    """:func:`select_indices` for the uniform proposal q = 1/N without building q: O(K) per site, not O(N).

    Every state ties under q, so the top-K1 are states 0..K1-1 (a valid arg max, as any other) and the
    K2 draws are uniform over the other N - K1 states, each with log weight ``log((N - K1) / K2)``
    (Eq. 6-8); with ``k1 + k2 = N`` the remainder is enumerated with weight 1, as in :func:`select_indices`.

    Parameters
    ----------
    lead : tuple of int
        The site shape (e.g. (B, T, T) for tree spans).
    n, k1, k2 : int
        Number of states and budget, already checked (``1 <= k1 + k2 <= n``).
    generator : torch.Generator, optional
        Source of the K2 draws (on ``device``).
    dtype : torch.dtype
        Floating dtype of the log weights.
    device : torch.device or str, optional
        Device of the index sets and weights (None: torch's default device).

    Returns
    -------
    IndexSets
        As :func:`select_indices` returns them.
    """
    with torch.no_grad():
        top = torch.arange(k1, device=device).expand(*lead, k1)
        if k1 + k2 == n or k2 == 0:
            index = torch.arange(k1 + k2, device=device).expand(*lead, k1 + k2)
            return IndexSets(index, torch.zeros(index.shape, dtype=dtype, device=device))
        sampled = k1 + torch.randint(n - k1, (*lead, k2), generator=generator, device=device)
        index = torch.cat([top, sampled], dim=-1)
        log_weight = torch.cat([torch.zeros((*lead, k1), dtype=dtype, device=device),
                                torch.full((*lead, k2), math.log((n - k1) / k2), dtype=dtype, device=device)], dim=-1)
        return IndexSets(index, log_weight)

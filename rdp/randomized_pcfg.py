"""Randomized Inside and entropy for a PCFG in Chomsky normal form (Alg. 2, Eq. 18 of the RDP paper).

Every span (i, j), leaves included, gets its own nonterminal index set Omega_ij (top-K1 of the
proposal plus K2 draws with replacement from the rest, :func:`rdp.selection.select_indices`, chosen
under ``torch.no_grad``), each chosen nonterminal carrying the weight ``w = 1`` (top) or
``1 / (K2 q~)`` (sampled).  The recursion is Eq. 18 with rule scores in place of span potentials:

    beta-hat(i, i, A)  = t(i, A),                                              A in Omega_ii,
    beta-hat(i, j, A)  = sum_{m=i}^{j-1} sum_{B in Omega_im} sum_{C in Omega_(m+1)j}
                         r(A, B, C) w_B beta-hat(i, m, B) w_C beta-hat(m+1, j, C),   A in Omega_ij,
    Z-hat              = sum_{A in Omega_0(T-1)} w_A rho(A) beta-hat(0, T-1, A),

two randomized sums per split (one per child).  The two children of a split are disjoint spans whose
sets are drawn independently of each other and of the parent's, so by induction ``beta-hat`` is
unbiased for ``beta`` and Z-hat for Z (``space="linear"``); log Z-hat is a lower bound in expectation.
The recursion is :func:`rdp.pcfg.pcfg_inside_on_sets`, the one the exact inside runs with all
nonterminals (re-exported here).  Cost O(T^3 K^3) and memory O(T^3 K^3) under autograd instead of
O(T^3 NT^2 + T^2 NT^3).  :func:`randomized_pcfg_gumbel_sample` draws trees top-down from its chart.

The entropy estimate is ``log Z-hat - E_pi[s(y)]`` over the parse trees on the chosen sets weighted by
their ``w`` (the tree analogue of Alg. 3), computed like the exact :func:`rdp.tree.pcfg_entropy` from
the gradient of the randomized log Z-hat (see :mod:`rdp.randomized_tree`).

Proposals
---------
A PCFG has no per-span potentials, so the proposal's "local" scores of span (i, j) are defined as
the preterminal scores ``t(i, .)`` on the leaves and each nonterminal's total binary-rule mass
``logsumexp_{B, C} r(., B, C)`` on wider spans (:func:`pcfg_site_scores`).  ``"uniform"`` (default,
as for the paper's trees), ``"local"`` (softmax of those scores), a (B, T, T, NT) weight tensor, or a
callable mapping the (B, T, T, NT) site scores to weights are accepted (see :mod:`rdp.proposals`).
"""

from __future__ import annotations

from typing import Any

from ._checks import check_budget, check_generator, check_space, in_space
from ._torch import torch
from .pcfg import batched_leaves, check_pcfg, entropy_from_log_partition, pcfg_inside_on_sets, pcfg_topdown
from .randomized_tree import choose_sets

__all__ = ["pcfg_inside_on_sets", "pcfg_site_scores", "randomized_pcfg_entropy", "randomized_pcfg_gumbel_sample",
           "randomized_pcfg_log_partition"]


def pcfg_site_scores(rules: "torch.Tensor", terminal: "torch.Tensor") -> "torch.Tensor":
    """Local proposal scores (B, T, T, NT) of a PCFG's spans: preterminal scores on the leaves, the
    nonterminal's binary-rule mass ``logsumexp_{B,C} r(A, B, C)`` elsewhere (no gradient)."""
    with torch.no_grad():
        batch, length, nt = terminal.shape
        mass = torch.logsumexp(rules.reshape(*rules.shape[:-2], -1), dim=-1)  # (NT,) or (B, NT)
        site = mass.reshape(-1, 1, 1, nt).expand(batch, length, length, nt).clone()
        diag = torch.arange(length, device=terminal.device)
        site[:, diag, diag] = terminal.detach()
        return site


def _randomized_pcfg_inside(rules, terminal, root, k1, k2, proposal, generator, *, lengths, return_chart=False):
    """Validate the budget, choose the sets (Eq. 5-7) from the proposal and run the recursion."""
    k1, k2 = check_budget(k1, k2, terminal.shape[-1])
    generator = check_generator(generator, terminal.device)
    batch, length, nt = terminal.shape
    sets = choose_sets(proposal, lambda: pcfg_site_scores(rules, terminal), (batch, length, length, nt), k1, k2,
                       generator, terminal)
    return pcfg_inside_on_sets(rules, terminal, root, sets, return_chart=return_chart, lengths=lengths)


def randomized_pcfg_log_partition(rule_scores: Any, terminal_scores: Any, root_scores: Any, *, k1: int, k2: int,
                                  proposal: Any = "uniform", space: str = "log",
                                  generator: "torch.Generator | None" = None, log_scale: Any = 0.0,
                                  lengths: Any = None) -> "torch.Tensor":
    """Randomized Inside estimate of a CNF PCFG's partition function (Alg. 2, Eq. 18).

    Parameters
    ----------
    rule_scores : Tensor (NT, NT, NT) or (B, NT, NT, NT)
        ``[A, B, C]``: log score of A -> B C.
    terminal_scores : Tensor (B, T, NT)
        ``[b, i, A]``: log score of A -> word_i.
    root_scores : Tensor (NT,) or (B, NT)
        Log score of the start symbol A.
    k1, k2 : int
        Top and sampled nonterminals per span, ``1 <= k1 + k2 <= NT``; ``k2 = 0`` is Top-K,
        ``k1 + k2 = NT`` is exact (:func:`rdp.tree.pcfg_log_partition`).
    proposal : str, Tensor or callable
        ``"uniform"``, ``"local"`` or user weights over (B, T, T, NT), see the module docstring.
    space : {"log", "linear"}
        log Z-hat (a lower bound of log Z in expectation), or ``Z-hat * exp(-log_scale)`` (unbiased
        for ``Z exp(-log_scale)``).
    generator : torch.Generator, optional
        Source of the K2 draws.
    log_scale : float or Tensor (B,)
        Subtracted from log Z-hat before exponentiating in linear space (avoids overflow).
    lengths : LongTensor (B,), optional
        Sentence lengths in [1, T] (default all T), as in :func:`rdp.pcfg.pcfg_log_partition`.

    Returns
    -------
    Tensor (B,)
        Differentiable with respect to all three score tensors.  Cost O(T^3 K^3), K = k1 + k2.

    Examples
    --------
    >>> import torch, rdp
    >>> g = torch.Generator().manual_seed(0)
    >>> rules, term, root = torch.randn(8, 8, 8), torch.randn(2, 5, 8), torch.randn(8)
    >>> rdp.randomized_pcfg_log_partition(rules, term, root, k1=2, k2=2, generator=g).shape
    torch.Size([2])
    """
    space, log_scale = check_space(space, log_scale)
    rules, terminal, root, lengths = check_pcfg(rule_scores, terminal_scores, root_scores, lengths)
    log_z = _randomized_pcfg_inside(rules, terminal, root, k1, k2, proposal, generator, lengths=lengths)
    return in_space(log_z, space, log_scale)


def randomized_pcfg_entropy(rule_scores: Any, terminal_scores: Any, root_scores: Any, *, k1: int, k2: int,
                            proposal: Any = "uniform", generator: "torch.Generator | None" = None,
                            lengths: Any = None) -> "torch.Tensor":
    """Randomized entropy (B,) of a CNF PCFG's parse-tree distribution (Alg. 3 on the sets of Alg. 2).

    Same arguments as :func:`randomized_pcfg_log_partition` (``lengths`` included); ``log Z-hat - E_pi[s(y)]`` (module
    docstring), biased (the log), exact when ``k1 + k2 = NT``, differentiable.
    """
    rules, terminal, root, lengths = check_pcfg(rule_scores, terminal_scores, root_scores, lengths)
    with torch.enable_grad():
        leaves = batched_leaves(rules, terminal, root)
        log_z = _randomized_pcfg_inside(*leaves, k1, k2, proposal, generator, lengths=lengths)
        return entropy_from_log_partition(log_z, leaves)


def randomized_pcfg_gumbel_sample(rule_scores: Any, terminal_scores: Any, root_scores: Any, *, k1: int, k2: int,
                                  proposal: Any = "uniform", generator: "torch.Generator | None" = None,
                                  lengths: Any = None) -> "torch.Tensor":
    """Top-down Gumbel sampling of parse trees on the randomized Inside chart (Alg. 2 + Alg. 4 for PCFGs).

    The nonterminal sets and their weights are chosen as in :func:`randomized_pcfg_log_partition`; the
    tree is then drawn from ``W(y) exp(s(y)) / Z-hat`` over the trees on the chosen sets
    (:func:`rdp.pcfg.pcfg_topdown`); exact sampling when ``k1 + k2 = NT``.  One generator drives the
    K2 draws and the Gumbel noise.  ``lengths`` as in :func:`randomized_pcfg_log_partition` (each tree
    starts at its root span (0, L_b - 1)).

    Returns
    -------
    LongTensor (B, T, T)
        Sampled trees as in :func:`rdp.pcfg.pcfg_gumbel_sample` (a nonterminal per span, -1 off the tree).

    Examples
    --------
    >>> import torch, rdp
    >>> g = torch.Generator().manual_seed(0)
    >>> rules, term, root = torch.randn(8, 8, 8), torch.randn(2, 5, 8), torch.randn(8)
    >>> trees = rdp.randomized_pcfg_gumbel_sample(rules, term, root, k1=2, k2=2, generator=g)
    >>> (trees >= 0).sum((1, 2)).tolist()
    [9, 9]
    """
    rules, terminal, root, lengths = check_pcfg(rule_scores, terminal_scores, root_scores, lengths)
    with torch.no_grad():
        chart = _randomized_pcfg_inside(rules, terminal, root, k1, k2, proposal, generator, lengths=lengths,
                                        return_chart=True)
        return pcfg_topdown(chart, rules, generator=generator)

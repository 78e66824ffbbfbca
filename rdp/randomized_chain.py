"""Randomized Forward, entropy DP and Gumbel backward sampling on chains (Alg. 1, 3, 4 of the RDP paper).

All three draw one set of indices per step with :func:`rdp.selection.select_indices` (top-K1 of the
proposal plus K2 draws with replacement from the rest) and run the same recursion as the exact DP
(:func:`rdp.chain.chain_sweep`) restricted to those states, so memory is O(T K^2) instead of
O(T N^2).  With state embeddings the transition scores between chosen states are computed as
``E[chosen_{t-1}] @ E[chosen_t]^T``: the randomized path never builds an N x N matrix.

Top-K summation (Sun et al. 2019) is ``k2 = 0``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from samplers.validation import check_float

from ._checks import check_budget, check_generator, check_space, in_space
from ._torch import torch
from .chain import GumbelSample, Sweep, at_lengths, chain_sweep, gumbel_backward, prepare_chain
from .proposals import resolve_proposal
from .selection import IndexSets, select_indices


class RandomizedChain(NamedTuple):
    """A randomized sweep together with the index sets it ran on (for diagnostics and reuse)."""

    sweep: Sweep
    sets: IndexSets
    lengths: "torch.Tensor"
    n_states: int


def randomized_chain_sweep(emissions: Any, transitions: Any = None, *, state_embeddings: Any = None, k1: int,
                           k2: int, proposal: Any = "local+global", generator=None, lengths: Any = None,
                           entropy: bool = False, keep_blocks: bool = False) -> RandomizedChain:
    """Validate, choose the index sets (Eq. 5-7) and run the restricted forward/entropy recursion."""
    emissions, trans, lengths = prepare_chain(emissions, transitions, state_embeddings, lengths)
    k1, k2 = check_budget(k1, k2, emissions.shape[-1])
    generator = check_generator(generator, emissions.device)
    q = resolve_proposal(proposal, emissions, lambda: trans.global_log_weights(emissions.shape[1]))
    sets = select_indices(q, k1, k2, generator)
    chosen = emissions.gather(2, sets.index)
    # all K x K blocks in one gather, split once: the backward pass writes one gradient buffer for the
    # transitions instead of a dense zero-filled (N, N) / (B, T-1, N, N) gradient per step
    blocks = torch.unbind(trans.all_blocks(sets.index), dim=1) if emissions.shape[1] > 1 else ()

    def block(t: int, cols: slice) -> "torch.Tensor":
        return blocks[t - 1][:, :, cols]

    sweep = chain_sweep(chosen, sets.log_weight, block, entropy=entropy, keep_blocks=keep_blocks)
    return RandomizedChain(sweep, sets, lengths, emissions.shape[-1])


def randomized_chain_log_partition(emissions: Any, transitions: Any = None, *, state_embeddings: Any = None,
                                   k1: int, k2: int, proposal: Any = "local+global", space: str = "log",
                                   generator: "torch.Generator | None" = None, lengths: Any = None,
                                   log_scale: Any = 0.0) -> "torch.Tensor":
    """Randomized Forward estimate of the partition function (Alg. 1, Eq. 17).

    Parameters
    ----------
    emissions : Tensor (B, T, N)
        Emission log potentials (initial scores folded into t = 0).
    transitions : Tensor (N, N) or (B, T-1, N, N), optional
        Transition log potentials; or give ``state_embeddings`` (N, D) for ``e_i . e_j``.
    state_embeddings : Tensor (N, D), optional
        Low-rank transitions ``e_i . e_j`` instead of ``transitions``.
    k1, k2 : int
        Top states and sampled states (with replacement) per step; ``1 <= k1 + k2 <= N``.
        ``k2 = 0`` is Top-K summation; ``k1 + k2 = N`` is exact.
    proposal : str, Tensor or callable
        See :mod:`rdp.proposals`; default the local+global proposal of Eq. 34.
    space : {"log", "linear"}
        ``"log"`` returns log Z-hat (a lower bound of log Z in expectation, Jensen); ``"linear"``
        returns ``Z-hat * exp(-log_scale)``, an unbiased estimate of ``Z exp(-log_scale)``
        (Appendix A, Theorem A.1).  The recursion is the same; only the returned quantity differs.
    generator : torch.Generator, optional
        Source of the K2 draws.
    lengths : LongTensor (B,), optional
        Sequence lengths in [1, T].
    log_scale : float or Tensor (B,)
        Subtracted from log Z-hat before exponentiating in linear space (avoids overflow).

    Returns
    -------
    Tensor (B,)
        Differentiable with respect to the potentials (the index selection is not).

    Examples
    --------
    >>> import torch, rdp
    >>> g = torch.Generator().manual_seed(0)
    >>> em, tr = torch.randn(2, 6, 50), torch.randn(50, 50)
    >>> est = rdp.randomized_chain_log_partition(em, tr, k1=9, k2=1, proposal="local", generator=g)
    >>> est.shape
    torch.Size([2])
    """
    space, log_scale = check_space(space, log_scale)
    run = randomized_chain_sweep(emissions, transitions, state_embeddings=state_embeddings, k1=k1, k2=k2,
                                 proposal=proposal, generator=generator, lengths=lengths)
    return in_space(at_lengths(run.sweep.log_z, run.lengths), space, log_scale)


def randomized_chain_entropy(emissions: Any, transitions: Any = None, *, state_embeddings: Any = None, k1: int,
                             k2: int, proposal: Any = "local+global", generator: "torch.Generator | None" = None,
                             lengths: Any = None) -> "torch.Tensor":
    """Randomized entropy DP (Alg. 3, Eq. 19-22) on the index sets of the randomized Forward.

    Same arguments as :func:`randomized_chain_log_partition`.  Biased (the log in Eq. 20), exact
    when ``k1 + k2 = N``.

    Returns
    -------
    Tensor (B,)
        Entropy estimate in nats, differentiable with respect to the potentials.
    """
    run = randomized_chain_sweep(emissions, transitions, state_embeddings=state_embeddings, k1=k1, k2=k2,
                                 proposal=proposal, generator=generator, lengths=lengths, entropy=True)
    return at_lengths(run.sweep.entropy, run.lengths)


def randomized_chain_gumbel_sample(emissions: Any, transitions: Any = None, *, state_embeddings: Any = None,
                                   k1: int, k2: int, proposal: Any = "local+global", tau: float = 1.0,
                                   generator: "torch.Generator | None" = None, lengths: Any = None,
                                   straight_through: bool = False) -> GumbelSample:
    """Randomized Gumbel backward sampling (Alg. 4, Eq. 23-28) on the randomized Forward's index sets.

    One generator drives both the K2 draws and the Gumbel noise.  Returns hard states (B, T) in the
    original state space and relaxed samples (B, T, N) (non-zero only on chosen states), see
    :class:`rdp.chain.GumbelSample`.  Exact Gumbel-FFBS when ``k1 + k2 = N``.
    """
    tau = check_float(tau, "tau", low=0.0, low_open=True)
    run = randomized_chain_sweep(emissions, transitions, state_embeddings=state_embeddings, k1=k1, k2=k2,
                                 proposal=proposal, generator=generator, lengths=lengths, keep_blocks=True)
    return gumbel_backward(run.sweep, run.sets.log_weight, run.sets.index, run.lengths, run.n_states, tau=tau,
                           generator=generator, straight_through=straight_through)

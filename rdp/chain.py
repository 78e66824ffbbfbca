"""Exact inference on linear chains (linear-chain CRF / HMM), batched, with variable lengths.

Conventions: emissions (B, T, N) are log potentials with the initial scores folded into t = 0;
transitions are (N, N), (B, T-1, N, N) or state embeddings (N, D) (see
:class:`rdp.transitions.ChainTransitions`).  A sequence of length L uses steps 0..L-1.

Every chain DP here -- exact or randomized, forward, entropy, Gumbel backward sampling -- runs on
*index sets*: at each step t the DP visits a set of K_t states (all N for the exact DP; top-K1 plus
K2 sampled states for RDP) with log weights (0 for the exact DP).  :func:`chain_sweep` is that one
recursion, stated once:

* Forward (Alg. 1, Eq. 17): ``log a_t(c) = phi_t(c) + logsumexp_{c'} [log a_{t-1}(c') + log w_{t-1}(c')
  + Phi(c', c)]`` and ``log Z_t = logsumexp_c [log a_t(c) + log w_t(c)]``.
* Entropy DP (Alg. 3, Eq. 19-22) with the backward conditionals
  ``pi_t(c' | c) = softmax_{c'}(log a_{t-1}(c') + log w_{t-1}(c') + Phi(c', c))`` (= w * p-hat of Eq. 19):
  ``H_t(c) = sum_{c'} pi_t(c'|c) [H_{t-1}(c') - log pi_t(c'|c) + log w_{t-1}(c')]``, and the same
  with ``pi_T = softmax(log a_T + log w_T)`` at the end (Eq. 21-22).
* Gumbel backward sampling (Alg. 4, Eq. 23-28) with the same conditionals, see :func:`gumbel_backward`.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from samplers.validation import check_float, check_int

from ._checks import as_potentials, check_generator, check_lengths
from ._torch import torch
from .fast_chain import (
    VITERBI_BLOCK_ELEMENTS,
    backward_paths,
    blocked_viterbi,
    gumbel_ffbs,
    log_partition_from_alpha,
    max_safe_range,
    scaled_entropy,
    scaled_log_alpha,
    scaled_shift,
)
from .transitions import ChainTransitions

BlockFn = Callable[[int, slice], "torch.Tensor"]


class Sweep(NamedTuple):
    """What :func:`chain_sweep` returns.

    Attributes
    ----------
    alphas : list of Tensor (B, K_t)
        Log forward variables at the chosen states of each step.
    log_z : Tensor (B, T)
        Log partition (estimate) of every prefix 0..t.
    entropy : Tensor (B, T) or None
        Entropy (estimate) of every prefix, when asked for.
    blocks : list of Tensor or None
        ``blocks[t]`` (B or 1, K_{t-1}, K_t) transition scores used at step t >= 1 (kept for sampling).
    """

    alphas: list
    log_z: "torch.Tensor"
    entropy: "torch.Tensor | None"
    blocks: "list | None"


def _final_entropy(alpha: "torch.Tensor", log_w: "torch.Tensor", h: "torch.Tensor") -> "torch.Tensor":
    """Eq. 21-22: entropy of a prefix from its last forward variables and conditional entropies."""
    log_pi = torch.log_softmax(alpha + log_w, dim=-1)
    return (log_pi.exp() * (h + log_w - log_pi)).sum(-1)


def chain_sweep(emissions: "torch.Tensor", log_weight: "torch.Tensor", block: BlockFn, *, entropy: bool = False,
                keep_blocks: bool = False, chunk_size: int | None = None) -> Sweep:
    """Forward (and optionally entropy) recursion over index sets; the one chain DP of :mod:`rdp`.

    Parameters
    ----------
    emissions : Tensor (B, T, K)
        Emission log potentials at the chosen states of each step.
    log_weight : Tensor (B, T, K)
        Log weights of the chosen states (zeros for the exact DP; see :mod:`rdp.selection`).
    block : callable ``(t, cols) -> Tensor (B or 1, K, C)``
        Transition scores from the chosen states of step t-1 to the chosen states ``cols`` (a slice)
        of step t.
    entropy : bool
        Also run the entropy DP (Alg. 3).
    keep_blocks : bool
        Keep the transition blocks (needed by :func:`gumbel_backward`; not with ``chunk_size``).
    chunk_size : int, optional
        Process the next step's states in chunks of this size (memory-lean, for no-grad references).

    Returns
    -------
    Sweep
    """
    batch, length, k = emissions.shape
    chunk = k if chunk_size is None else max(1, int(chunk_size))
    alpha = emissions[:, 0]
    h = torch.zeros_like(alpha) if entropy else None
    alphas, blocks = [alpha], [None] if keep_blocks else None
    log_z = [torch.logsumexp(alpha + log_weight[:, 0], dim=-1)]
    ents = [_final_entropy(alpha, log_weight[:, 0], h)] if entropy else None
    for t in range(1, length):
        lw_prev = log_weight[:, t - 1]
        prev = (alpha + lw_prev).unsqueeze(-1)
        new_alpha, new_h = [], []
        for start in range(0, k, chunk):
            cols = slice(start, min(k, start + chunk))
            scores = block(t, cols)
            if keep_blocks:
                blocks.append(scores)
            s = prev + scores
            lse = torch.logsumexp(s, dim=1)
            new_alpha.append(emissions[:, t, cols] + lse)
            if entropy:
                log_pi = s - lse.unsqueeze(1)
                new_h.append((log_pi.exp() * ((h + lw_prev).unsqueeze(-1) - log_pi)).sum(1))
        alpha = new_alpha[0] if len(new_alpha) == 1 else torch.cat(new_alpha, dim=-1)
        alphas.append(alpha)
        log_z.append(torch.logsumexp(alpha + log_weight[:, t], dim=-1))
        if entropy:
            h = new_h[0] if len(new_h) == 1 else torch.cat(new_h, dim=-1)
            ents.append(_final_entropy(alpha, log_weight[:, t], h))
    return Sweep(alphas, torch.stack(log_z, dim=1), torch.stack(ents, dim=1) if entropy else None, blocks)


class GumbelSample(NamedTuple):
    """A Gumbel-FFBS draw.

    Attributes
    ----------
    hard : LongTensor (B, T)
        An exact posterior sample (exact DP) of the state sequence; -1 beyond each length.
    relaxed : Tensor (B, T, N)
        The relaxed one-hot sample ``softmax((logits + g) / tau)`` (Eq. 24, 27), or the
        straight-through sample ``one_hot(hard) - relaxed.detach() + relaxed``; zero beyond each length.
    """

    hard: "torch.Tensor"
    relaxed: "torch.Tensor"


def _gumbel_noise(shape, like: "torch.Tensor", generator) -> "torch.Tensor":
    u = torch.rand(shape, dtype=like.dtype, device=like.device, generator=generator)
    tiny = torch.finfo(like.dtype).tiny
    return -torch.log(-torch.log(u.clamp(tiny, 1.0 - 1e-7)))


def straight_through_sample(hard: "torch.Tensor", soft: "torch.Tensor") -> "torch.Tensor":
    """``one_hot(hard) - soft.detach() + soft``: the hard sample's value with the relaxed sample's gradient.

    ``hard`` holds category indices (-1 = no category: the one-hot row is zero), ``soft`` has one more
    trailing axis, the categories.
    """
    one_hot = torch.zeros_like(soft).scatter(-1, hard.clamp_min(0).unsqueeze(-1), 1.0)
    one_hot = one_hot * (hard >= 0).unsqueeze(-1).to(soft.dtype)
    return one_hot - soft.detach() + soft


def gumbel_backward(sweep: Sweep, log_weight: "torch.Tensor", index: "torch.Tensor | None", lengths: "torch.Tensor",
                    n_states: int, *, tau: float, generator=None, straight_through: bool = False) -> GumbelSample:
    """Gumbel backward sampling on the index sets of a forward sweep (Alg. 4, Eq. 23-28).

    At the last step of each sequence the logits are ``log a_L(c) + log w_L(c)``; going back, given
    the hard state chosen at t+1 (position p), the logits are ``log a_t(c) + log w_t(c) + Phi(c, p)``.
    The hard sample is the arg max of logits plus Gumbel noise (an exact draw from the backward
    conditional of the DP); the relaxed sample is the tempered softmax.  With the exact DP this is
    Gumbel-FFBS (Fu et al. 2020).  For RDP the log weights are included, so each step resamples the
    chosen states with importance weights (Eq. 23 and 26 of the paper omit ``w``; with K1 + K2 = N
    both agree).
    """
    batch, length = lengths.shape[0], len(sweep.alphas)
    hard = torch.full((batch, length), -1, dtype=torch.long, device=lengths.device)
    soft = [None] * length
    pos_next = torch.zeros(batch, dtype=torch.long, device=lengths.device)
    for t in range(length - 1, -1, -1):
        logits = sweep.alphas[t] + log_weight[:, t]
        if t < length - 1:
            blk = sweep.blocks[t + 1].expand(batch, -1, -1)
            cond = logits + blk.gather(2, pos_next[:, None, None].expand(-1, blk.shape[1], 1)).squeeze(-1)
            logits = torch.where((lengths - 1 == t).unsqueeze(-1), logits, cond)
        perturbed = logits + _gumbel_noise(logits.shape, logits, generator)
        active = t <= lengths - 1
        pos = perturbed.detach().argmax(-1)
        pos_next = torch.where(active, pos, torch.zeros_like(pos))
        state = pos if index is None else index[:, t].gather(1, pos[:, None]).squeeze(1)
        hard[:, t] = torch.where(active, state, torch.full_like(state, -1))
        soft[t] = torch.softmax(perturbed / tau, dim=-1) * active.unsqueeze(-1).to(logits.dtype)
    soft = torch.stack(soft, dim=1)
    if index is not None:
        soft = torch.zeros(batch, length, n_states, dtype=soft.dtype, device=soft.device).scatter_add(2, index, soft)
    return GumbelSample(hard, straight_through_sample(hard, soft) if straight_through else soft)


def prepare_chain(emissions: Any, transitions: Any, state_embeddings: Any, lengths: Any):
    """Validate chain inputs; return (emissions (B, T, N), ChainTransitions, lengths (B,))."""
    emissions = as_potentials(emissions, "emissions", ndim=3)
    batch, length, n = emissions.shape
    trans = ChainTransitions(transitions, state_embeddings, batch=batch, length=length, n_states=n)
    if trans.device != emissions.device:
        raise ValueError(f"transitions/state_embeddings live on {trans.device} but emissions on {emissions.device}")
    lengths = check_lengths(lengths, batch, length, emissions.device)
    return emissions, trans, lengths


def at_lengths(per_prefix: "torch.Tensor", lengths: "torch.Tensor") -> "torch.Tensor":
    """Pick each sequence's value at its last step from a (B, T) table of prefix values."""
    return per_prefix.gather(1, (lengths - 1).unsqueeze(1)).squeeze(1)


def _exact_sweep(emissions, trans: ChainTransitions, *, entropy=False, keep_blocks=False, chunk_size=None) -> Sweep:
    zeros = torch.zeros((1, 1, 1), dtype=emissions.dtype, device=emissions.device).expand_as(emissions)
    return chain_sweep(emissions, zeros, lambda t, cols: trans.block(t, None, cols), entropy=entropy,
                       keep_blocks=keep_blocks, chunk_size=chunk_size)


METHODS = ("auto", "scaled", "log")


class _Scaled(NamedTuple):
    """Inputs of the scaled-space fast path: promoted emissions, the transition matrix it multiplies
    by ((N, N), also for embeddings, or (B, T-1, N, N)) and its shift."""

    emissions: "torch.Tensor"
    matrix: "torch.Tensor"
    shift: "torch.Tensor"


def _scaled_inputs(emissions, trans: ChainTransitions, method: str) -> "_Scaled | None":
    """The fast path's inputs, or None when ``method="log"`` or (with ``"auto"``) the transition range
    is too wide for scaled space (:func:`rdp.fast_chain.max_safe_range`)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "log":
        return None
    dtype = torch.promote_types(emissions.dtype, trans.dtype)
    matrix = trans.tensor.to(dtype)
    if trans.kind == "embeddings":
        matrix = matrix @ matrix.T
    shift = scaled_shift(matrix, emissions.shape[-1])
    if shift is None:
        if method == "scaled":
            what = "state_embeddings" if trans.kind == "embeddings" else "transitions"
            raise ValueError(f"{what}: the range of one step's transition scores exceeds "
                             f"{max_safe_range(dtype, emissions.shape[-1]):.1f} nats, too wide for "
                             f"method='scaled' in {dtype}; use method='auto' or 'log'")
        return None
    return _Scaled(emissions.to(dtype), matrix, shift)


def chain_log_partition(emissions: Any, transitions: Any = None, lengths: Any = None, *,
                        state_embeddings: Any = None, method: str = "auto") -> "torch.Tensor":
    """Exact log partition function of a linear chain by the forward algorithm (Eq. 17 with all states).

    Parameters
    ----------
    emissions : Tensor (B, T, N)
        Emission log potentials; initial scores folded into t = 0.
    transitions : Tensor (N, N) or (B, T-1, N, N), optional
        Transition log potentials (``[.., i, j]``: state i then state j).
    lengths : LongTensor (B,), optional
        Sequence lengths in [1, T] (default: all T).
    state_embeddings : Tensor (N, D), optional
        Factorised transitions ``e_i . e_j`` instead of ``transitions``.
    method : {"auto", "scaled", "log"}
        ``"scaled"``: matrix products in scaled space with a custom backward recursion
        (:mod:`rdp.fast_chain`; autograd memory O(N^2 + B T N)); ``"log"``: the log-space recursion on
        index sets (:func:`chain_sweep`, saves a (B, N, N) tensor per step); ``"auto"``: scaled unless
        one step's transition scores span more than :func:`rdp.fast_chain.max_safe_range` nats.

    Returns
    -------
    Tensor (B,)
        log Z, differentiable with respect to the potentials.

    Examples
    --------
    >>> import torch, rdp
    >>> rdp.chain_log_partition(torch.zeros(1, 3, 2), torch.zeros(2, 2))  # 2^3 paths
    tensor([2.0794])
    """
    emissions, trans, lengths = prepare_chain(emissions, transitions, state_embeddings, lengths)
    fast = _scaled_inputs(emissions, trans, method)
    if fast is None:
        return at_lengths(_exact_sweep(emissions, trans).log_z, lengths)
    return log_partition_from_alpha(scaled_log_alpha(*fast), lengths)


def chain_forward(emissions: Any, transitions: Any = None, lengths: Any = None, *, state_embeddings: Any = None,
                  chunk_size: int = 512) -> tuple["torch.Tensor", "torch.Tensor"]:
    """Exact log forward variables and log Z without gradient (Eq. 17 with all states), memory-lean.

    Scaled space (:mod:`rdp.fast_chain`, one (B, N) x (N, N) product per step) when one step's transition
    scores span less than :func:`rdp.fast_chain.max_safe_range`; otherwise the log-space recursion
    :func:`chain_sweep` over chunks of ``chunk_size`` next states, so no (B, N, N) tensor is built.  For
    samplers and evaluators that need log a_t itself (forward filtering, backward sampling).

    Returns
    -------
    log_alpha : Tensor (B, T, N)
        ``log a_t(i)``: log total weight of the prefixes ending in state i at step t.
    log_z : Tensor (B,)
        Log partition function at each sequence's length.
    """
    chunk_size = check_int(chunk_size, "chunk_size", low=1)
    emissions, trans, lengths = prepare_chain(emissions, transitions, state_embeddings, lengths)
    return _forward(emissions, trans, lengths, chunk_size)


def _forward(emissions, trans: ChainTransitions, lengths, chunk_size: int) -> tuple["torch.Tensor", "torch.Tensor"]:
    """:func:`chain_forward` on validated inputs."""
    with torch.no_grad():
        fast = _scaled_inputs(emissions, trans, "auto")
        if fast is None:
            log_alpha = torch.stack(_exact_sweep(emissions, trans, chunk_size=chunk_size).alphas, dim=1)
        else:
            log_alpha = scaled_log_alpha(*fast)
        return log_alpha, log_partition_from_alpha(log_alpha, lengths)


class ChainSamples(NamedTuple):
    """Exact posterior samples of a chain (:func:`chain_sample`).

    Attributes
    ----------
    paths : LongTensor (S, B, T)
        S state paths per sequence, -1 beyond each length.
    log_prob : Tensor (S, B)
        ``log p(path)`` = :func:`chain_score` minus log Z, without gradient.
    """

    paths: "torch.Tensor"
    log_prob: "torch.Tensor"


def chain_sample(emissions: Any, transitions: Any = None, lengths: Any = None, *, state_embeddings: Any = None,
                 n_samples: int = 1, generator: "torch.Generator | None" = None, chunk_size: int = 512,
                 block_elements: int = VITERBI_BLOCK_ELEMENTS) -> ChainSamples:
    """Exact forward-filtering backward-sampling: ``n_samples`` posterior paths per sequence from one forward pass.

    One memory-lean forward pass (:func:`chain_forward`: no (B, N, N) tensor) gives log a_t; then each
    sample goes back from the sequence's last step drawing x_t from ``p(x_t | x_{t+1}) ∝ a_t(x_t)
    exp(Phi_{t+1}(x_t, x_{t+1}))`` (:func:`rdp.fast_chain.backward_paths`, a categorical draw per step).
    Memory: the forward tables (B, T, N), the paths (S, B, T), and one step's logits for a block of samples
    (at most ``block_elements`` values), so S is limited by O(S B T) alone.  No gradient (for the relaxed,
    differentiable sample see :func:`chain_gumbel_sample`, the same law for its hard path).

    Parameters
    ----------
    emissions, transitions, lengths, state_embeddings
        The chain, as in :func:`chain_log_partition`.
    n_samples : int
        S >= 1 independent paths per sequence.
    generator : torch.Generator, optional
        Source of the draws (on the potentials' device).
    chunk_size : int
        Next-state chunk of the log-space forward fallback (:func:`chain_forward`).
    block_elements : int
        Most logits (samples x B x N) drawn from at once; more samples are drawn in blocks of samples.

    Returns
    -------
    ChainSamples
        ``paths`` (S, B, T) and their ``log_prob`` (S, B), in the promoted dtype of the potentials.

    Examples
    --------
    >>> import torch, rdp
    >>> draws = rdp.chain_sample(torch.zeros(1, 3, 2), torch.zeros(2, 2), n_samples=5,
    ...                          generator=torch.Generator().manual_seed(0))
    >>> draws.paths.shape, float(draws.log_prob[0, 0].exp())  # 8 equally likely paths
    (torch.Size([5, 1, 3]), 0.125)
    """
    n_samples = check_int(n_samples, "n_samples", low=1)
    chunk_size = check_int(chunk_size, "chunk_size", low=1)
    block_elements = check_int(block_elements, "block_elements", low=1)
    emissions, trans, lengths = prepare_chain(emissions, transitions, state_embeddings, lengths)
    generator = check_generator(generator, emissions.device)
    with torch.no_grad():
        log_alpha, log_z = _forward(emissions, trans, lengths, chunk_size)
        batch, _, n = log_alpha.shape
        tensor = trans.tensor.detach().to(log_alpha.dtype)

        def draw(t: int, logits: "torch.Tensor") -> "torch.Tensor":
            probs = torch.softmax(logits, dim=-1).reshape(-1, n)
            return torch.multinomial(probs, 1, generator=generator).reshape(logits.shape[:2])

        block = max(1, block_elements // (batch * n))
        paths = torch.cat([backward_paths(log_alpha, trans.kind, tensor, lengths, draw, min(block, n_samples - s))
                           for s in range(0, n_samples, block)])
        score = _path_score(paths, emissions.detach().to(log_alpha.dtype), trans.kind, tensor, lengths)
    return ChainSamples(paths, score - log_z)


def chain_score(paths: Any, emissions: Any, transitions: Any = None, lengths: Any = None, *,
                state_embeddings: Any = None) -> "torch.Tensor":
    """Log potential of state paths: ``sum_t phi_t(x_t) + sum_{t >= 1} Phi_t(x_{t-1}, x_t)`` up to each length.

    Parameters
    ----------
    paths : LongTensor (..., B, T)
        State paths (entries beyond each sequence's length are ignored, e.g. -1).
    emissions, transitions, lengths, state_embeddings
        The chain, as in :func:`chain_log_partition`.

    Returns
    -------
    Tensor (..., B)
        The scores, differentiable with respect to the potentials; ``chain_score(...) - chain_log_partition(...)``
        is ``log p(path)``.

    Raises
    ------
    ValueError
        ``paths`` is not an integer tensor of shape (..., B, T) with states in [0, N) within each length.
    """
    emissions, trans, lengths = prepare_chain(emissions, transitions, state_embeddings, lengths)
    batch, length, n = emissions.shape
    paths = torch.as_tensor(paths, device=emissions.device)
    if paths.is_floating_point() or paths.is_complex() or paths.dtype == torch.bool:
        raise ValueError(f"paths must hold integer states, got dtype {paths.dtype}")
    if paths.dim() < 2 or tuple(paths.shape[-2:]) != (batch, length):
        raise ValueError(f"paths must have shape (..., B, T) = (..., {batch}, {length}), got {tuple(paths.shape)}")
    inside = torch.arange(length, device=paths.device) < lengths[:, None]
    if bool(((paths < 0) | (paths >= n))[..., inside].any()):
        raise ValueError(f"paths must hold states in [0, {n}) within each sequence's length")
    return _path_score(paths.long(), emissions, trans.kind, trans.tensor, lengths)


def _path_score(paths: "torch.Tensor", emissions: "torch.Tensor", kind: str, tensor: "torch.Tensor",
                lengths: "torch.Tensor") -> "torch.Tensor":
    """:func:`chain_score` on validated inputs (paths (..., B, T), transitions as ``kind`` and ``tensor``)."""
    batch, length, n = emissions.shape
    inside = torch.arange(length, device=paths.device) < lengths[:, None]  # (B, T)
    idx = torch.where(inside, paths, 0)
    unary = emissions.expand(*paths.shape[:-2], batch, length, n).gather(-1, idx.unsqueeze(-1)).squeeze(-1)
    score = torch.where(inside, unary, 0).sum(-1)
    if length == 1:
        return score
    prev, nxt = idx[..., :-1], idx[..., 1:]
    if kind == "embeddings":
        pair = (tensor[prev] * tensor[nxt]).sum(-1)
    elif kind == "shared":
        pair = tensor[prev, nxt]
    else:
        steps = torch.arange(length - 1, device=paths.device)
        pair = tensor[torch.arange(batch, device=paths.device)[:, None], steps[None, :], prev, nxt]
    return score + torch.where(inside[:, 1:], pair, 0).sum(-1)


def chain_marginals(emissions: Any, transitions: Any = None, lengths: Any = None, *,
                    state_embeddings: Any = None, method: str = "auto") -> "torch.Tensor":
    """Exact node marginals p(x_t = i), the gradient of log Z with respect to the emissions
    (forward-backward; with ``method="scaled"`` the backward recursion of :mod:`rdp.fast_chain`).

    When ``emissions`` requires grad the marginals are returned differentiable; that needs a second
    derivative, which only the log-space recursion provides, so it is used then.

    Returns
    -------
    Tensor (B, T, N)
        Marginals (zero beyond each length); differentiable when grad mode is on.
    """
    emissions, trans, lengths = prepare_chain(emissions, transitions, state_embeddings, lengths)
    create_graph = emissions.requires_grad
    if create_graph and method == "scaled":
        raise ValueError("method: 'scaled' marginals are not twice differentiable; emissions require grad, "
                         "use method='auto' or 'log'")
    with torch.enable_grad():
        leaf = emissions if create_graph else emissions.detach().requires_grad_(True)
        fast = None if create_graph else _scaled_inputs(leaf, trans, method)
        if fast is None:
            log_z = at_lengths(_exact_sweep(leaf, trans).log_z, lengths)
        else:
            log_z = log_partition_from_alpha(scaled_log_alpha(fast.emissions, fast.matrix.detach(), fast.shift),
                                             lengths)
        (grad,) = torch.autograd.grad(log_z.sum(), leaf, create_graph=create_graph)
    return grad


def chain_entropy(emissions: Any, transitions: Any = None, lengths: Any = None, *,
                  state_embeddings: Any = None, method: str = "auto") -> "torch.Tensor":
    """Exact entropy of the chain distribution by the entropy DP (Alg. 3 with all states).

    ``method`` as in :func:`chain_log_partition`; the scaled entropy DP is
    :func:`rdp.fast_chain.scaled_entropy`.

    Returns
    -------
    Tensor (B,)
        H(p) in nats, differentiable with respect to the potentials.
    """
    emissions, trans, lengths = prepare_chain(emissions, transitions, state_embeddings, lengths)
    fast = _scaled_inputs(emissions, trans, method)
    if fast is None:
        return at_lengths(_exact_sweep(emissions, trans, entropy=True).entropy, lengths)
    log_alpha = scaled_log_alpha(*fast)
    return scaled_entropy(fast.emissions, fast.matrix, fast.shift, log_alpha, lengths)


def chain_viterbi(emissions: Any, transitions: Any = None, lengths: Any = None, *,
                  state_embeddings: Any = None,
                  block_elements: int = VITERBI_BLOCK_ELEMENTS) -> tuple["torch.Tensor", "torch.Tensor"]:
    """Most probable state sequence (max-product forward, then backtracking).

    The max over previous states runs on blocks of next states, so at most ``block_elements`` scores
    (B, N, C) exist at once (:func:`rdp.fast_chain.blocked_viterbi`); with state embeddings the N x N
    matrix is never built.

    Returns
    -------
    score : Tensor (B,)
        Log potential of the best sequence.
    path : LongTensor (B, T)
        Best states, -1 beyond each length.
    """
    block_elements = check_int(block_elements, "block_elements", low=1)
    emissions, trans, lengths = prepare_chain(emissions, transitions, state_embeddings, lengths)
    dtype = torch.promote_types(emissions.dtype, trans.dtype)
    emissions = emissions.detach().to(dtype)

    def block(t: int, cols: slice) -> "torch.Tensor":
        return trans.block(t, None, cols).detach().to(dtype)

    return blocked_viterbi(emissions, block, lengths, block_elements)


def chain_gumbel_sample(emissions: Any, transitions: Any = None, lengths: Any = None, *, state_embeddings: Any = None,
                        tau: float = 1.0, generator: "torch.Generator | None" = None,
                        straight_through: bool = False, method: str = "auto") -> GumbelSample:
    """Exact Gumbel forward-filtering backward-sampling (Alg. 4 with all states; Fu et al. 2020).

    Parameters
    ----------
    emissions, transitions, lengths, state_embeddings
        The chain, as in :func:`chain_log_partition` (``lengths`` for a ragged batch).
    tau : float
        Temperature of the relaxed sample, > 0.
    generator : torch.Generator, optional
        Source of the Gumbel noise.
    straight_through : bool
        Return ``one_hot(hard) - relaxed.detach() + relaxed`` as ``relaxed``.
    method : {"auto", "scaled", "log"}
        As in :func:`chain_log_partition`; the scaled path (:func:`rdp.fast_chain.gumbel_ffbs`) reads one
        transition column per sequence and step going back.

    Returns
    -------
    GumbelSample
        ``hard`` (B, T) exact posterior draw, ``relaxed`` (B, T, N).
    """
    tau = check_float(tau, "tau", low=0.0, low_open=True)
    emissions, trans, lengths = prepare_chain(emissions, transitions, state_embeddings, lengths)
    generator = check_generator(generator, emissions.device)
    fast = _scaled_inputs(emissions, trans, method)
    if fast is None:
        sweep = _exact_sweep(emissions, trans, keep_blocks=True)
        zeros = torch.zeros_like(emissions)
        return gumbel_backward(sweep, zeros, None, lengths, emissions.shape[-1], tau=tau, generator=generator,
                               straight_through=straight_through)
    log_alpha = scaled_log_alpha(*fast)
    noise = _gumbel_noise(log_alpha.shape, log_alpha, generator)
    hard, soft = gumbel_ffbs(log_alpha, trans.kind, trans.tensor.to(log_alpha.dtype), lengths, noise, tau)
    return GumbelSample(hard, straight_through_sample(hard, soft) if straight_through else soft)


def chain_exact_reference(emissions: Any, transitions: Any = None, lengths: Any = None, *,
                          state_embeddings: Any = None, chunk_size: int = 512,
                          entropy: bool = True) -> dict[str, "torch.Tensor"]:
    """Memory-lean exact log Z and entropy without autograd, chunked over the next step's states.

    Peak memory is O(B N chunk_size) per step (plus the inputs): with state embeddings the N x N
    transition matrix is never built, so exact references exist at N = 10000 on a 24 GiB machine.

    Returns
    -------
    dict
        ``{"log_partition": (B,), "entropy": (B,)}`` (entropy only when ``entropy=True``).
    """
    chunk_size = check_int(chunk_size, "chunk_size", low=1)
    with torch.no_grad():
        emissions, trans, lengths = prepare_chain(emissions, transitions, state_embeddings, lengths)
        sweep = _exact_sweep(emissions, trans, entropy=entropy, chunk_size=chunk_size)
        out = {"log_partition": at_lengths(sweep.log_z, lengths)}
        if entropy:
            out["entropy"] = at_lengths(sweep.entropy, lengths)
    return out

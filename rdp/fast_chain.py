"""Exact chain DPs at the hardware limit: scaled-space forward as matrix products with a custom backward.

The exact forward of a linear chain (Eq. 17 of the RDP paper with every state) is

    log a_t(j) = phi_t(j) + logsumexp_i [log a_{t-1}(i) + Phi_t(i, j)].

Written in scaled space with one max-shift per step and one shift c_t of the transition scores,

    a~_{t-1} = exp(log a_{t-1} - s_{t-1}),  s_{t-1} = max_i log a_{t-1}(i),
    M_t      = exp(Phi_t - c_t),            c_t = max_{i,j} Phi_t(i, j),
    S_t      = a~_{t-1} @ M_t,
    log a_t  = phi_t + s_{t-1} + c_t + log S_t,

each step is one (B, N) x (N, N) matrix product: 2 B N^2 flops and one read of the N x N matrix
(memory-bandwidth bound at B = 1).  :class:`ScaledForward` returns all log a_t (B, T, N) and runs the
backward pass as a recursion instead of letting autograd save per-step (B, N, N) tensors.  With an
upstream gradient G_t = dL/dlog a_t, the adjoints lambda_t = dL/dlog a_t (total) satisfy

    r_t          = lambda_t / S_t,
    lambda_{t-1} = G_{t-1} + a~_{t-1} * (r_t @ M_t^T),
    dL/dphi_t    = lambda_t,
    dL/dPhi_t    = M_t * (a~_{t-1}^T r_t)           (summed over t and B for shared transitions),

because d log a_t(j) / d log a_{t-1}(i) = a~_{t-1}(i) M_t(i, j) / S_t(j) = dlog a_t(j) / dPhi_t(i, j).
For the gradient of log Z the adjoints are the node marginals, so this is forward-backward in scaled
space; for shared transitions the transition gradient is one (N, B T) x (B T, N) product at the end.
Autograd saves the inputs plus log a and log S: O(N^2 + B T N) memory.

Range.  Scaled space is exact to rounding as long as no M_t entry falls so low that terms dropped by
underflow matter: with R = max - min of Phi_t, every S_t(j) >= exp(-R), every dropped term is below
the smallest normal number, and the relative error stays below machine epsilon when
``R <= log(eps) - log(tiny) - log(N)`` (62 nats in float32 at N = 10^4, 663 in float64).
:func:`scaled_shift` checks this; callers fall back to the log-space recursion
(:func:`rdp.chain.chain_sweep`) beyond it.  Emissions have no range limit (they enter in log space).

Also here: the entropy DP (Alg. 3, Eq. 19-22 with all states) in the same scaled space, a blocked
max-product Viterbi that never materialises (B, N, N), and Gumbel forward-filtering backward-sampling
(Alg. 4 with all states) that reads one transition column per sequence and step.
"""

from __future__ import annotations

import math
from typing import Callable

from torch.autograd.function import once_differentiable

from ._torch import torch

#: Elements of one (B, N, C) block of the blocked Viterbi (16 MiB in float32).
VITERBI_BLOCK_ELEMENTS = 1 << 22


def max_safe_range(dtype: "torch.dtype", n_states: int) -> float:
    """Largest range (max - min, nats) of one step's transition scores for which scaled space is exact
    to machine precision: ``log(eps) - log(tiny) - log(N)`` (see the module docstring)."""
    fi = torch.finfo(dtype)
    return math.log(fi.eps) - math.log(fi.tiny) - math.log(max(2, n_states))


def scaled_shift(trans: "torch.Tensor", n_states: int) -> "torch.Tensor | None":
    """The shift c of each step's transition scores (a 0-dim tensor for (N, N), (B, T-1) for
    (B, T-1, N, N)), or None when some step's range exceeds :func:`max_safe_range`."""
    with torch.no_grad():
        x = trans.detach()
        if x.dim() == 2:
            hi, lo = x.max(), x.min()
        else:
            hi, lo = x.amax(dim=(-1, -2)), x.amin(dim=(-1, -2))
        if float((hi - lo).max()) > max_safe_range(x.dtype, n_states):
            return None
        return hi


def _step_matrix(trans: "torch.Tensor", shift: "torch.Tensor", t: int,
                 out: "torch.Tensor | None" = None) -> "torch.Tensor":
    """M_t = exp(Phi_t - c_t): (N, N) for shared transitions, (B, N, N) for per-step ones (step t >= 1),
    written into ``out`` when given (no allocation per step)."""
    if trans.dim() == 2:
        return torch.exp(trans - shift)
    out = torch.sub(trans[:, t - 1], shift[:, t - 1, None, None], out=out)
    return out.exp_()


def _vec_mat(vec: "torch.Tensor", mat: "torch.Tensor", transpose: bool = False) -> "torch.Tensor":
    """(B, N) times (N, N) or (B, N, N) (optionally transposed), giving (B, N)."""
    if mat.dim() == 2:
        return vec @ (mat.T if transpose else mat)
    m = mat.transpose(1, 2) if transpose else mat
    return torch.bmm(vec.unsqueeze(1), m).squeeze(1)


def _step_shift(trans: "torch.Tensor", shift: "torch.Tensor", t: int) -> "torch.Tensor":
    return shift if trans.dim() == 2 else shift[:, t - 1, None]


class ScaledForward(torch.autograd.Function):
    """log a_t (B, T, N) of the exact forward, scaled space, with the backward recursion as its backward.

    Inputs: emissions (B, T, N), transitions (N, N) or (B, T-1, N, N) of the same dtype, and the
    shift from :func:`scaled_shift` (no gradient).  Not twice differentiable (``once_differentiable``).
    """

    @staticmethod
    def forward(ctx, emissions, trans, shift):
        """Scaled forward pass; saves the log scales for :meth:`backward`; returns log a_t, shape (B, T, N)."""
        batch, length, n = emissions.shape
        log_alpha = torch.empty_like(emissions)
        log_s = torch.zeros_like(emissions)  # log S_t (t >= 1), saved for the backward pass
        prev = emissions[:, 0]
        log_alpha[:, 0] = prev
        mat = _step_matrix(trans, shift, 1) if trans.dim() == 2 and length > 1 else None
        for t in range(1, length):
            top = prev.amax(-1, keepdim=True)
            scaled = torch.exp(prev - top)
            if trans.dim() != 2:
                mat = _step_matrix(trans, shift, t, out=mat)
            step_s = torch.log(_vec_mat(scaled, mat))
            log_s[:, t] = step_s
            prev = emissions[:, t] + top + _step_shift(trans, shift, t) + step_s
            log_alpha[:, t] = prev
        ctx.save_for_backward(trans, shift, log_alpha, log_s)
        return log_alpha

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        """Backward recursion in scaled space: gradients of emissions (B, T, N) and transitions; none for the shift."""
        trans, shift, log_alpha, log_s = ctx.saved_tensors
        batch, length, n = log_alpha.shape
        shared = trans.dim() == 2
        grad = grad if grad is not None else torch.zeros_like(log_alpha)
        grad_em = torch.empty_like(log_alpha)
        lam = grad[:, length - 1]
        grad_em[:, length - 1] = lam
        want_trans = ctx.needs_input_grad[1]
        if want_trans and shared and length > 1:
            lefts = torch.empty(length - 1, batch, n, dtype=log_alpha.dtype, device=log_alpha.device)
            rights = torch.empty_like(lefts)
        grad_trans = None
        if want_trans and not shared:
            grad_trans = torch.empty_like(trans)
        mat = _step_matrix(trans, shift, 1) if shared and length > 1 else None
        for t in range(length - 1, 0, -1):
            prev = log_alpha[:, t - 1]
            scaled = torch.exp(prev - prev.amax(-1, keepdim=True))
            r = lam * torch.exp(-log_s[:, t])
            if not shared:  # M_t goes straight into its gradient slot (or one reused buffer)
                mat = _step_matrix(trans, shift, t, out=grad_trans[:, t - 1] if want_trans else mat)
            lam = grad[:, t - 1] + scaled * _vec_mat(r, mat, transpose=True)
            grad_em[:, t - 1] = lam
            if want_trans:
                if shared:
                    lefts[t - 1] = scaled
                    rights[t - 1] = r
                else:  # dL/dPhi_t = M_t * (a~_{t-1} outer r_t), in place
                    mat.mul_(scaled.unsqueeze(2)).mul_(r.unsqueeze(1))
        if want_trans and shared:
            if length > 1:
                grad_trans = mat * (lefts.reshape(-1, n).T @ rights.reshape(-1, n))
            else:
                grad_trans = torch.zeros_like(trans)
        return grad_em, grad_trans, None


def scaled_log_alpha(emissions: "torch.Tensor", trans: "torch.Tensor", shift: "torch.Tensor") -> "torch.Tensor":
    """Differentiable log a_t (B, T, N) by :class:`ScaledForward`."""
    return ScaledForward.apply(emissions, trans, shift)


def log_partition_from_alpha(log_alpha: "torch.Tensor", lengths: "torch.Tensor") -> "torch.Tensor":
    """log Z (B,) = logsumexp of each sequence's last log a."""
    n = log_alpha.shape[-1]
    last = log_alpha.gather(1, (lengths - 1)[:, None, None].expand(-1, 1, n)).squeeze(1)
    return torch.logsumexp(last, dim=-1)


def scaled_entropy(emissions: "torch.Tensor", trans: "torch.Tensor", shift: "torch.Tensor",
                   log_alpha: "torch.Tensor", lengths: "torch.Tensor") -> "torch.Tensor":
    """Entropy DP (Alg. 3, Eq. 19-22, all states) in scaled space; differentiable by ordinary autograd.

    With pi_t(i | j) = a~_{t-1}(i) M_t(i, j) / S_t(j) the conditional entropies are
    ``H_t = [(a~ * (H_{t-1} - log a~)) @ M_t - a~ @ (M_t * log M_t)] / S_t + log S_t`` and
    ``H = sum_j pi(j) (H_{L-1}(j) - log pi(j))`` with pi = softmax(log a_{L-1}).  Autograd saves M_t and
    M_t log M_t once for shared transitions plus (B, N) vectors per step.
    """
    batch, length, n = emissions.shape
    h = torch.zeros_like(emissions[:, 0])
    hs = [h]
    shared = trans.dim() == 2
    steps = None if shared else torch.unbind(trans, dim=1)  # one UnbindBackward, no per-step zero fill
    if shared and length > 1:
        log_m = trans - shift
        mat = torch.exp(log_m)
        mlogm = mat * log_m
    for t in range(1, length):
        if not shared:
            log_m = steps[t - 1] - shift[:, t - 1, None, None]
            mat = torch.exp(log_m)
            mlogm = mat * log_m
        prev = log_alpha[:, t - 1]
        top = prev.detach().amax(-1, keepdim=True)
        log_a = prev - top
        scaled = torch.exp(log_a)
        log_s = log_alpha[:, t] - emissions[:, t] - top - _step_shift(trans, shift, t)
        num = _vec_mat(scaled * (h - log_a), mat) - _vec_mat(scaled, mlogm)
        h = num * torch.exp(-log_s) + log_s
        hs.append(h)
    h_last = torch.stack(hs, dim=1).gather(1, (lengths - 1)[:, None, None].expand(-1, 1, n)).squeeze(1)
    last = log_alpha.gather(1, (lengths - 1)[:, None, None].expand(-1, 1, n)).squeeze(1)
    log_pi = torch.log_softmax(last, dim=-1)
    return (log_pi.exp() * (h_last - log_pi)).sum(-1)


def blocked_viterbi(emissions: "torch.Tensor", block, lengths: "torch.Tensor",
                    block_elements: int = VITERBI_BLOCK_ELEMENTS) -> tuple["torch.Tensor", "torch.Tensor"]:
    """Max-product forward and backtracking, next-step states processed in column blocks.

    ``block(t, cols)`` returns the transition scores (B or 1, N, C) into the states ``cols`` (a slice)
    of step t; C is chosen so that one (B, N, C) score block holds at most ``block_elements`` values.
    Pointers are kept as (B, T, N) integers.  Returns the best score (B,) and path (B, T), -1 beyond
    each length.
    """
    with torch.no_grad():
        batch, length, n = emissions.shape
        chunk = max(1, min(n, block_elements // max(1, batch * n)))
        delta = emissions[:, 0]
        deltas = [delta]
        pointers = torch.zeros(batch, length, n, dtype=torch.long, device=emissions.device)
        for t in range(1, length):
            vals, idx = [], []
            for start in range(0, n, chunk):
                cols = slice(start, min(n, start + chunk))
                top = (delta.unsqueeze(-1) + block(t, cols)).max(dim=1)
                vals.append(top.values)
                idx.append(top.indices)
            best = vals[0] if len(vals) == 1 else torch.cat(vals, dim=-1)
            pointers[:, t] = idx[0] if len(idx) == 1 else torch.cat(idx, dim=-1)
            delta = emissions[:, t] + best
            deltas.append(delta)
        final = torch.stack(deltas, dim=1).gather(1, (lengths - 1)[:, None, None].expand(-1, 1, n)).squeeze(1)
        score, last = final.max(-1)
        path = torch.full((batch, length), -1, dtype=torch.long, device=emissions.device)
        pos = torch.zeros_like(last)
        for t in range(length - 1, -1, -1):
            here = torch.where(lengths - 1 == t, last, pos)
            active = t <= lengths - 1
            path[:, t] = torch.where(active, here, torch.full_like(here, -1))
            if t > 0:
                pos = torch.where(active, pointers[:, t].gather(1, here.unsqueeze(1)).squeeze(1), pos)
    return score, path


def transition_columns(kind: str, tensor: "torch.Tensor", steps: "torch.Tensor",
                       states: "torch.Tensor") -> "torch.Tensor":
    """Scores ``Phi_s(i, states[b, k])`` for all i: (B, K, N), where ``steps[k] = s`` (>= 1) is the step
    entered and ``states`` (B, K) the state entered there.  One indexing op (one backward scatter)."""
    if kind == "embeddings":
        return tensor[states] @ tensor.T
    if kind == "shared":
        return tensor[:, states].permute(1, 2, 0)
    batch = torch.arange(states.shape[0], device=states.device)[:, None]
    return tensor[batch, steps[None, :] - 1, :, states]  # (B, K, N)


def backward_paths(log_alpha: "torch.Tensor", kind: str, tensor: "torch.Tensor", lengths: "torch.Tensor",
                   draw: Callable[[int, "torch.Tensor"], "torch.Tensor"], n_samples: int = 1) -> "torch.Tensor":
    """Backward sampling of ``n_samples`` state paths per sequence from the forward variables log a_t.

    Going back from each sequence's last step L - 1, the backward conditional of x_t given x_{t+1} has
    logits ``log a_t(i) + Phi_{t+1}(i, x_{t+1})`` (``log a_{L-1}`` alone at the last step); ``draw(t,
    logits)`` turns logits (S, B, N) into states (S, B) (a categorical draw, or the arg max of logits plus
    Gumbel noise).  No gradient.  Besides ``log_alpha`` (the forward tables) it holds the paths (S, B, T)
    and one step's logits (S, B, N).

    Parameters
    ----------
    log_alpha : Tensor (B, T, N)
        Exact log forward variables.
    kind, tensor : str, Tensor
        The transitions (:class:`rdp.transitions.ChainTransitions` ``kind`` and ``tensor``).
    lengths : LongTensor (B,)
        Sequence lengths in [1, T].
    draw : callable ``(t, logits (S, B, N)) -> LongTensor (S, B)``
        Picks the states of step t from the backward conditionals' logits.
    n_samples : int
        S, the paths drawn per sequence.

    Returns
    -------
    LongTensor (S, B, T)
        The paths, -1 beyond each length.
    """
    batch, length, n = log_alpha.shape
    device = log_alpha.device
    paths = torch.full((n_samples, batch, length), -1, dtype=torch.long, device=device)
    with torch.no_grad():
        la, tensor = log_alpha.detach(), tensor.detach()
        nxt = torch.zeros((n_samples, batch), dtype=torch.long, device=device)
        for t in range(length - 1, -1, -1):
            logits = la[:, t].expand(n_samples, batch, n)
            if t < length - 1:
                steps = torch.full((n_samples,), t + 1, dtype=torch.long, device=device)
                cols = transition_columns(kind, tensor, steps, nxt.T).transpose(0, 1)  # (S, B, N)
                logits = torch.where((lengths - 1 == t)[None, :, None], logits, logits + cols)
            active = (t <= lengths - 1)[None, :]
            states = draw(t, logits)
            paths[:, :, t] = torch.where(active, states, -1)
            nxt = torch.where(active, states, 0)
    return paths


def gumbel_ffbs(log_alpha: "torch.Tensor", kind: str, tensor: "torch.Tensor", lengths: "torch.Tensor",
                noise: "torch.Tensor", tau: float) -> tuple["torch.Tensor", "torch.Tensor"]:
    """Gumbel forward-filtering backward-sampling (Alg. 4, Eq. 23-28 with all states) from log a_t.

    Going back from each sequence's last step, the logits at t are ``log a_t(i) + Phi_{t+1}(i, x_{t+1})``
    (``log a_L`` alone at the last step); the hard state is the arg max of logits + ``noise`` (an exact
    posterior draw), the relaxed sample ``softmax((logits + noise) / tau)``.  The hard path is found
    without gradient by :func:`backward_paths` (one path per sequence); the relaxed samples are
    then recomputed with gradient from one gather of all the columns on the path.

    Returns
    -------
    hard : LongTensor (B, T), -1 beyond each length
    soft : Tensor (B, T, N), zero beyond each length
    """
    batch, length, n = log_alpha.shape
    device = log_alpha.device
    hard = backward_paths(log_alpha, kind, tensor, lengths, lambda t, logits: (logits + noise[:, t]).argmax(-1))[0]
    logits = log_alpha
    if length > 1:
        steps = torch.arange(1, length, device=device)
        cols = transition_columns(kind, tensor, steps, hard[:, 1:].clamp_min(0))  # (B, T-1, N)
        inner = (torch.arange(length - 1, device=device)[None, :] < (lengths - 1)[:, None]).unsqueeze(-1)
        cols = torch.where(inner, cols, torch.zeros_like(cols))
        logits = log_alpha + torch.cat([cols, torch.zeros_like(cols[:, :1])], dim=1)
    active = (torch.arange(length, device=device)[None, :] <= (lengths - 1)[:, None]).unsqueeze(-1)
    soft = torch.softmax((logits + noise) / tau, dim=-1) * active.to(log_alpha.dtype)
    return hard, soft

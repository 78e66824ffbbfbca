"""Proposals q_t over the N states of each DP site (Sec. 4, Eq. 34 of the RDP paper).

A proposal is one of

* ``"uniform"``: q_t(i) = 1 / N (the paper's choice for trees);
* ``"local"``: the normalised local (emission) potentials, q_t(i) = softmax(phi_t)(i);
* ``"global"``: the normalised global prior, q(i) proportional to ||e_i||_1 for state embeddings
  (for full transitions: each state's incoming transition mass, see
  :meth:`rdp.transitions.ChainTransitions.global_log_weights`);
* ``"local+global"``: the average of the two (Eq. 34), the paper's choice for chains;
* a tensor (B, T, N) (or broadcastable to it) of non-negative weights, or a callable
  ``f(potentials) -> weights`` returning one.

User weights are checked (finite, non-negative, positive mass at every site) and normalised.
Proposals are computed without gradient.
"""

from __future__ import annotations

from typing import Any, Callable

from ._torch import torch

NAMED = ("uniform", "local", "global", "local+global")


def check_weights(weights: Any, shape: tuple[int, ...], like: "torch.Tensor", name: str = "proposal") -> "torch.Tensor":
    """Validate user proposal weights and normalise them over the last axis, shape ``shape``."""
    if not isinstance(weights, torch.Tensor):
        try:
            weights = torch.as_tensor(weights, dtype=like.dtype, device=like.device)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise TypeError(f"{name} must return a tensor of weights: {exc}") from None
    weights = weights.detach().to(dtype=like.dtype, device=like.device)
    try:
        weights = weights.expand(shape)
    except RuntimeError:
        raise ValueError(f"{name} must have shape {shape} (or broadcast to it), got {tuple(weights.shape)}") from None
    if not bool(torch.isfinite(weights).all()):
        raise ValueError(f"{name} must be finite")
    if bool((weights < 0).any()):
        raise ValueError(f"{name} must be non-negative; found {float(weights.min()):.3g}")
    mass = weights.sum(-1, keepdim=True)
    if bool((mass <= 0).any()):
        raise ValueError(f"{name} has all-zero mass at some site; every site needs positive mass")
    return weights / mass


def resolve_proposal(proposal: "str | Callable | torch.Tensor", potentials: "torch.Tensor",
                     global_log_weights: "Callable[[], torch.Tensor] | None" = None) -> "torch.Tensor":
    """The proposal q (same shape as ``potentials``, rows summing to 1), computed without gradient.

    Parameters
    ----------
    proposal : str, callable or Tensor
        See the module docstring.
    potentials : Tensor (..., N)
        Local log potentials of each site (chain emissions (B, T, N), tree spans (B, T, T, N)).
    global_log_weights : callable, optional
        Returns un-normalised global log weights broadcastable to ``potentials``; None where the
        structure has no global prior (then ``"global"`` and ``"local+global"`` are rejected).
    """
    shape = tuple(potentials.shape)
    with torch.no_grad():
        local = potentials.detach()
        if isinstance(proposal, str):
            if proposal not in NAMED:
                raise ValueError(f"proposal must be one of {NAMED}, a tensor or a callable; got {proposal!r}")
            if proposal == "uniform":
                return torch.full(shape, 1.0 / shape[-1], dtype=local.dtype, device=local.device)
            if proposal == "local":
                return torch.softmax(local, dim=-1)
            if global_log_weights is None:
                raise ValueError(f"proposal {proposal!r} needs a global prior, which this structure lacks; "
                                 "use 'uniform', 'local', a tensor or a callable")
            glob = torch.softmax(global_log_weights().to(local.dtype), dim=-1).expand(shape)
            if proposal == "global":
                return glob
            return 0.5 * torch.softmax(local, dim=-1) + 0.5 * glob
        if callable(proposal):
            return check_weights(proposal(local), shape, local)
        if isinstance(proposal, torch.Tensor) or hasattr(proposal, "__array__"):
            return check_weights(proposal, shape, local)
        raise TypeError(f"proposal must be a name in {NAMED}, a tensor or a callable, got {type(proposal).__name__}")

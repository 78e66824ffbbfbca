"""Transition scores of a linear chain in one of three forms, read block by block.

* ``shared``: one (N, N) log-potential matrix for every step;
* ``per_step``: (B, T-1, N, N) log potentials, ``transitions[b, t, i, j]`` scoring state i at step t
  followed by state j at step t + 1;
* ``embeddings``: state embeddings E (N, D) with transition score ``e_i . e_j`` (Eq. 30 of the RDP
  paper).  Blocks are computed as ``E[rows] @ E[cols]^T``, so a randomized DP touches only
  K x K scores and an N x N matrix is never built unless the caller asks for all states.
"""

from __future__ import annotations

from typing import Any

from ._checks import as_potentials
from ._torch import torch


class ChainTransitions:
    """Transition log potentials of a chain, read as (rows x cols) blocks.

    Parameters
    ----------
    transitions : Tensor (N, N) or (B, T-1, N, N), optional
        Log potentials; exactly one of ``transitions`` and ``state_embeddings`` must be given.
    state_embeddings : Tensor (N, D), optional
        Factorised transitions ``e_i . e_j`` (Eq. 30).
    batch, length, n_states : int
        Shape of the emissions (B, T, N) the transitions must agree with.
    """

    def __init__(self, transitions: Any, state_embeddings: Any, *, batch: int, length: int, n_states: int):
        if (transitions is None) == (state_embeddings is None):
            raise ValueError("transitions and state_embeddings: exactly one must be given (transitions (N, N) or "
                             "(B, T-1, N, N), or state_embeddings (N, D))")
        self.n_states = n_states
        if state_embeddings is not None:
            emb = as_potentials(state_embeddings, "state_embeddings", ndim=2)
            if emb.shape[0] != n_states:
                raise ValueError(f"state_embeddings must have shape (N={n_states}, D), got {tuple(emb.shape)}")
            self.kind, self.tensor = "embeddings", emb
            return
        trans = as_potentials(transitions, "transitions", ndim=(2, 4))
        if trans.dim() == 2:
            if tuple(trans.shape) != (n_states, n_states):
                raise ValueError(f"transitions must have shape (N, N) = ({n_states}, {n_states}), "
                                 f"got {tuple(trans.shape)}")
            self.kind = "shared"
        else:
            want = (batch, length - 1, n_states, n_states)
            if tuple(trans.shape) != want:
                raise ValueError(f"transitions must have shape (B, T-1, N, N) = {want}, got {tuple(trans.shape)}")
            self.kind = "per_step"
        self.tensor = trans

    @property
    def dtype(self):
        """Floating dtype of the transition tensor."""
        return self.tensor.dtype

    @property
    def device(self):
        """Device of the transition tensor."""
        return self.tensor.device

    def block(self, t: int, rows: "torch.Tensor | None", cols: "slice | torch.Tensor") -> "torch.Tensor":
        """Scores from states ``rows`` at step t-1 to states ``cols`` at step t, shape (B or 1, R, C).

        ``rows`` is None (all N states) or a LongTensor (B, R); ``cols`` is a slice of the N states or
        a LongTensor (B, C).
        """
        x = self.tensor
        if self.kind == "embeddings":
            left = x if rows is None else x[rows]
            right = x[cols]
            out = torch.matmul(left, right.transpose(-1, -2))
            return out if out.dim() == 3 else out.unsqueeze(0)
        mat = x.unsqueeze(0) if self.kind == "shared" else x[:, t - 1]
        if rows is None and isinstance(cols, slice):
            return mat[:, :, cols]
        if rows is None:
            return torch.gather(mat.expand(cols.shape[0], -1, -1), 2,
                                cols.unsqueeze(1).expand(-1, mat.shape[1], -1))
        if isinstance(cols, slice):
            cols = torch.arange(self.n_states, device=mat.device)[cols].expand(rows.shape[0], -1)
        batch = torch.arange(rows.shape[0], device=mat.device)[:, None, None]
        if mat.shape[0] == 1:
            batch = torch.zeros_like(batch)
        return mat[batch, rows[:, :, None], cols[:, None, :]]

    def all_blocks(self, index: "torch.Tensor") -> "torch.Tensor":
        """Scores between the chosen states of consecutive steps, all steps at once: (B, T-1, K, K).

        ``index`` (B, T, K) holds the chosen states of every step; entry ``[b, t-1, k, l]`` scores
        state ``index[b, t-1, k]`` followed by ``index[b, t, l]``.  One gather for the whole chain, so
        the backward pass scatters into one zero-filled gradient buffer instead of one per step.
        """
        rows, cols = index[:, :-1, :, None], index[:, 1:, None, :]
        x = self.tensor
        if self.kind == "embeddings":
            chosen = x[index]  # (B, T, K, D)
            return torch.matmul(chosen[:, :-1], chosen[:, 1:].transpose(-1, -2))
        if self.kind == "shared":
            return x[rows, cols]
        steps = torch.arange(index.shape[1] - 1, device=index.device)[None, :, None, None]
        batch = torch.arange(index.shape[0], device=index.device)[:, None, None, None]
        return x[batch, steps, rows, cols]

    def global_log_weights(self, length: int) -> "torch.Tensor":
        """Log of the un-normalised global proposal weights, shape (B or 1, T or 1, N), without grad.

        Embeddings: ``log ||e_i||_1`` (the global prior of Eq. 34).  Full transitions: the log of each
        state's total incoming transition mass (outgoing mass at the first step of a per-step chain).
        """
        with torch.no_grad():
            x = self.tensor.detach()
            if self.kind == "embeddings":
                return x.abs().sum(-1).clamp_min(torch.finfo(x.dtype).tiny).log()[None, None, :]
            if self.kind == "shared":
                return torch.logsumexp(x, dim=0)[None, None, :]
            incoming = torch.logsumexp(x, dim=2)  # (B, T-1, N)
            first = torch.logsumexp(x[:, :1], dim=3)  # (B, 1, N)
            return torch.cat([first, incoming], dim=1)

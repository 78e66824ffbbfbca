"""Randomized Inside for the span-labelled tree CRF (Alg. 2, Eq. 18 of the RDP paper).

Each span (i, j) gets its own label index set (top-K1 of the proposal plus K2 draws with
replacement from the rest, :func:`rdp.selection.select_indices`), chosen under ``torch.no_grad``.
Each child's randomized label sum is an independent unbiased estimate, so their product (the two
randomized sums per split in Eq. 18) is unbiased for the split's term, and the root's randomized sum
is unbiased for Z; the log-space result is a lower bound in expectation.  The recursion is
:func:`rdp.tree.inside_on_sets`, the same one the exact inside runs.  Memory O(T^2 K) for the chosen
potentials instead of O(T^2 N).
"""

from __future__ import annotations

from typing import Any

from ._checks import check_budget, check_generator
from ._torch import torch
from .proposals import resolve_proposal
from .selection import select_indices
from .tree import check_spans, inside_on_sets


def randomized_tree_log_partition(span_potentials: Any, *, k1: int, k2: int, proposal: Any = "uniform",
                                  generator: "torch.Generator | None" = None, space: str = "log") -> "torch.Tensor":
    """Randomized Inside estimate of the tree CRF's partition function (Alg. 2).

    Parameters
    ----------
    span_potentials : Tensor (B, T, T, N)
        Label log potentials per span (i <= j).
    k1, k2 : int
        Top and sampled labels per span, ``1 <= k1 + k2 <= N``; ``k2 = 0`` is Top-K, ``k1 + k2 = N`` exact.
    proposal : str, Tensor or callable
        ``"uniform"`` (the paper's choice for trees), ``"local"`` (softmax of the span potentials),
        a (B, T, T, N) tensor of weights or a callable (see :mod:`rdp.proposals`).
    generator : torch.Generator, optional
        Source of the K2 draws.
    space : {"log", "linear"}
        log Z-hat, or Z-hat itself (unbiased for Z).

    Returns
    -------
    Tensor (B,)
        Differentiable with respect to ``span_potentials``.
    """
    if space not in ("log", "linear"):
        raise ValueError(f"space must be 'log' or 'linear', got {space!r}")
    spans = check_spans(span_potentials)
    k1, k2 = check_budget(k1, k2, spans.shape[-1])
    generator = check_generator(generator, spans.device)
    q = resolve_proposal(proposal, spans)
    sets = select_indices(q, k1, k2, generator)
    log_z = inside_on_sets(spans.gather(3, sets.index), sets.log_weight)
    return log_z if space == "log" else log_z.exp()

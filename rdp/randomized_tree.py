"""Randomized Inside for the span-labelled tree CRF (Alg. 2, Eq. 18 of the RDP paper).

Each span (i, j) gets its own label index set (top-K1 of the proposal plus K2 draws with
replacement from the rest, :func:`rdp.selection.select_indices`), chosen under ``torch.no_grad``.
Each child's randomized label sum is an independent unbiased estimate, so their product (the two
randomized sums per split in Eq. 18) is unbiased for the split's term, and the root's randomized sum
is unbiased for Z; the log-space result is a lower bound in expectation.  The recursion is
:func:`rdp.tree.inside_on_sets`, the same one the exact inside runs: the weighted label sum of every
span in one pass, O(T^2 K) instead of O(T^2 N), then the O(T^3) split recursion.  With the uniform
proposal the sets are drawn without building the (B, T, T, N) proposal (:func:`rdp.selection.select_uniform`),
so nothing but the gather and its gradient touches all N labels.

The randomized entropy (:func:`randomized_tree_entropy`) is the quantity Alg. 3 computes on chains,
stated for trees through the exponential-family identity the exact entropy uses
(:func:`rdp.tree.entropy_from_log_partition`): with the index sets and their weights held fixed,
``log Z-hat = log sum_y W(y) exp(s(y))`` over the trees y on the chosen labels, and

    H-hat = log Z-hat - sum_theta theta . d log Z-hat / d theta = log Z-hat - E_pi[s(y)],
    pi(y) = W(y) exp(s(y)) / Z-hat,

which is what Eq. 19-22 accumulate (the ``-log p-hat`` terms telescope to ``log Z-hat - s(y)``
and each state is weighted by 1/(K2 q)).  Biased (the log), exact when ``k1 + k2 = N``.
"""

from __future__ import annotations

from typing import Any, Callable

from samplers.validation import check_float

from ._checks import check_budget, check_generator, check_space, in_space
from ._torch import torch
from .proposals import resolve_proposal
from .selection import IndexSets, select_indices, select_uniform
from .tree import TreeSample, _as_leaf, check_spans, entropy_from_log_partition, gumbel_topdown, inside_on_sets


def choose_sets(proposal: Any, site_scores: Callable[[], "torch.Tensor"], shape: tuple[int, ...], k1: int, k2: int,
                generator: Any, like: "torch.Tensor") -> IndexSets:
    """Index sets (Eq. 5-7) of every site of ``shape`` (..., N): :func:`rdp.selection.select_uniform` for the
    uniform proposal (no (..., N) proposal tensor), else the proposal resolved on ``site_scores()``."""
    if isinstance(proposal, str) and proposal == "uniform":
        return select_uniform(tuple(shape[:-1]), shape[-1], k1, k2, generator, dtype=like.dtype, device=like.device)
    return select_indices(resolve_proposal(proposal, site_scores()), k1, k2, generator)


def gather_labels(spans: "torch.Tensor", index: "torch.Tensor") -> "torch.Tensor":
    """``spans.gather(3, index)`` (B, T, T, K) as one ``index_select`` on the flattened potentials, whose backward
    keeps only the index and accumulates with ``index_add`` (``gather`` saves the whole (B, T, T, N) input)."""
    batch, length, _, n = spans.shape
    offsets = torch.arange(batch * length * length, device=spans.device).reshape(batch, length, length, 1) * n
    return spans.reshape(-1).index_select(0, (offsets + index).reshape(-1)).reshape(index.shape)


def _randomized_inside(spans: "torch.Tensor", k1: Any, k2: Any, proposal: Any, generator: Any, *,
                       lengths: "torch.Tensor", return_chart: bool = False, double_backward: bool = False):
    """Validate the budget, choose the label sets (Eq. 5-7) and run the inside recursion on them.

    Returns log Z-hat (B,), or ``(InsideChart, index sets)`` with ``return_chart``.
    """
    k1, k2 = check_budget(k1, k2, spans.shape[-1])
    generator = check_generator(generator, spans.device)
    sets = choose_sets(proposal, lambda: spans, tuple(spans.shape), k1, k2, generator, spans)
    out = inside_on_sets(gather_labels(spans, sets.index), sets.log_weight, return_chart=return_chart,
                         double_backward=double_backward, lengths=lengths)
    return (out, sets) if return_chart else out


def randomized_tree_log_partition(span_potentials: Any, *, k1: int, k2: int, proposal: Any = "uniform",
                                  generator: "torch.Generator | None" = None, space: str = "log",
                                  log_scale: Any = 0.0, lengths: Any = None) -> "torch.Tensor":
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
        log Z-hat, or ``Z-hat * exp(-log_scale)`` (unbiased for ``Z exp(-log_scale)``).
    log_scale : float or Tensor (B,)
        Subtracted from log Z-hat before exponentiating in linear space (avoids overflow).
    lengths : LongTensor (B,), optional
        Sentence lengths in [1, T] (default all T), as in :func:`rdp.tree.tree_log_partition`.

    Returns
    -------
    Tensor (B,)
        Differentiable with respect to ``span_potentials``.
    """
    space, log_scale = check_space(space, log_scale)
    spans, lengths = check_spans(span_potentials, lengths)
    log_z = _randomized_inside(spans, k1, k2, proposal, generator, lengths=lengths)
    return in_space(log_z, space, log_scale)


def randomized_tree_entropy(span_potentials: Any, *, k1: int, k2: int, proposal: Any = "uniform",
                            generator: "torch.Generator | None" = None, lengths: Any = None) -> "torch.Tensor":
    """Randomized entropy of the span-labelled tree CRF (Alg. 3 of the RDP paper, on the sets of Alg. 2).

    ``H-hat = log Z-hat - E_pi[s(y)]`` over the trees on the chosen labels weighted by ``1/(K2 q)``
    (see the module docstring); computed as :func:`rdp.tree.tree_entropy` computes the exact one,
    from the gradient of the randomized log Z-hat taken with ``create_graph=True``.

    Parameters
    ----------
    span_potentials : Tensor (B, T, T, N)
        Label log potentials per span (i <= j).
    k1, k2 : int
        Top and sampled labels per span, ``1 <= k1 + k2 <= N``; ``k1 + k2 = N`` gives the exact entropy.
    proposal : str, Tensor or callable
        As for :func:`randomized_tree_log_partition`.
    generator : torch.Generator, optional
        Source of the K2 draws.
    lengths : LongTensor (B,), optional
        Sentence lengths in [1, T] (default all T).

    Returns
    -------
    Tensor (B,)
        Entropy estimate in nats, differentiable with respect to ``span_potentials``.

    Examples
    --------
    >>> import torch, rdp
    >>> spans = torch.randn(2, 4, 4, 6, dtype=torch.float64)
    >>> h = rdp.randomized_tree_entropy(spans, k1=6, k2=0)  # full budget: the exact entropy
    >>> bool(torch.allclose(h, rdp.tree_entropy(spans)))
    True
    """
    spans, lengths = check_spans(span_potentials, lengths)
    with torch.enable_grad():
        leaf = _as_leaf(spans)
        log_z = _randomized_inside(leaf, k1, k2, proposal, generator, lengths=lengths, double_backward=True)
        return entropy_from_log_partition(log_z, [leaf])


def randomized_tree_gumbel_sample(span_potentials: Any, *, k1: int, k2: int, proposal: Any = "uniform",
                                  tau: float = 1.0, generator: "torch.Generator | None" = None,
                                  straight_through: bool = False, lengths: Any = None) -> TreeSample:
    """Top-down Gumbel sampling of labelled trees on the randomized Inside chart (Alg. 2 + Alg. 4 for trees).

    The label sets and their weights ``1 / (K2 q)`` are chosen as in :func:`randomized_tree_log_partition`;
    the tree is then drawn from the reweighted sparse distribution ``W(y) exp(s(y)) / Z-hat`` over the
    trees on the chosen labels (:func:`rdp.tree.gumbel_topdown`).  One generator drives the K2 draws and
    the Gumbel noise.  Exact sampling when ``k1 + k2 = N``.  Returns :class:`rdp.tree.TreeSample` with
    labels in the original label space (relaxed samples non-zero only on chosen labels).  ``lengths`` as in
    :func:`randomized_tree_log_partition`.
    """
    tau = check_float(tau, "tau", low=0.0, low_open=True)
    spans, lengths = check_spans(span_potentials, lengths)
    generator = check_generator(generator, spans.device)
    chart, sets = _randomized_inside(spans, k1, k2, proposal, generator, lengths=lengths, return_chart=True)
    return gumbel_topdown(chart, sets.index, spans.shape[-1], tau=tau, generator=generator,
                          straight_through=straight_through)

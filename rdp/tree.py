"""Exact inside, marginals, entropy, Viterbi and Gumbel sampling for span-labelled tree CRFs.

Span-labelled tree CRF (the hypertree of Alg. 2 of the RDP paper): a binary bracketing of positions
0..T-1 with a label k in 1..N on every span (i, j); its log potential is the sum of
``span_potentials[b, i, j, k]`` over its labelled spans (only i <= j is read).  The inside recursion
(Eq. 18 with all states) is

    alpha(i, j, k) = phi(i, j, k) + log sum_{m=i}^{j-1} beta(i, m) beta(m+1, j),
    beta(i, j)     = logsumexp_k [alpha(i, j, k) + log w(i, j, k)],     log Z = beta(0, T-1).

The potentials depend on the parent label only, so the label sum factorises out of the split sum:
``beta(i, j) = L(i, j) + log sum_m beta(i, m) beta(m+1, j)`` with ``L(i, j) = logsumexp_k [phi + log w]``.
:func:`inside_on_sets` therefore reduces the labels of every span in one vectorised pass and then runs
the split recursion on the (B, T, T) span scores, all spans of one width at once (as torch-struct's
CKY does): O(T^2 K + T^3) work.  It is stated once over label index sets: all labels with weight 1
for the exact inside, top-K1 plus K2 sampled labels in :mod:`rdp.randomized_tree`; and once over the
reduction: ``semiring="log"`` (logsumexp, the inside) or ``"max"`` (the Viterbi score).

The chart holds span (i, j) at ``[:, i, j]``; the left and right children of all spans of width w over
all splits are two fixed-stride views of it (:func:`split_scores`), so a width costs a handful of tensor
ops; the top-down sampler (:func:`gumbel_topdown`) reads the same views.

Marginals are gradients of log Z; the entropy is ``log Z - sum(marginals * potentials)`` (the
log potential is linear in the parameters), see :func:`entropy_from_log_partition`.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from samplers.validation import check_float

from ._checks import as_potentials, check_generator, check_lengths
from ._torch import torch
from .chain import _gumbel_noise, straight_through_sample

SEMIRINGS = ("log", "max")


def reducer(semiring: str):
    """The reduction ``f(x, dim)`` of a semiring: ``torch.logsumexp`` for ``"log"``, ``torch.amax`` for ``"max"``."""
    if semiring == "log":
        return torch.logsumexp
    if semiring == "max":
        return torch.amax
    raise ValueError(f"semiring must be one of {SEMIRINGS}, got {semiring!r}")


def diagonal(x: "torch.Tensor", width: int) -> "torch.Tensor":
    """The spans (i, i + width) of a (B, T, T, ...) chart as a (B, T - width, ...) view."""
    d = torch.diagonal(x, offset=width, dim1=1, dim2=2)
    return d if x.dim() == 3 else d.movedim(-1, 1)


def split_scores(chart: "torch.Tensor", width: int) -> tuple["torch.Tensor", "torch.Tensor"]:
    """Left and right children of every span of width ``width``, as strided views of a (start, end) chart.

    ``chart`` is a contiguous (B, T, T, ...) tensor holding span (i, j) at ``[:, i, j]``.  Split d of span
    (i, i + w) has children (i, i + d) and (i + d + 1, i + w); returns the two (B, T - w, w, ...) views
    ``left[:, i, d] = chart[:, i, i + d]`` and ``right[:, i, d] = chart[:, i + d + 1, i + w]`` (no copies:
    both are fixed strides through the chart's memory, as in torch-struct's CKY).
    """
    if not chart.is_contiguous():
        raise ValueError("split_scores needs a contiguous chart (its views are fixed strides through its memory)")
    length = chart.shape[1]
    inner = chart.stride(2)                                   # elements per span
    size = (chart.shape[0], length - width, width, *chart.shape[3:])
    rest = chart.stride()[3:]
    left = chart.as_strided(size, (chart.stride(0), (length + 1) * inner, inner, *rest), chart.storage_offset())
    right = chart.as_strided(size, (chart.stride(0), (length + 1) * inner, length * inner, *rest),
                             chart.storage_offset() + (length + width) * inner)
    return left, right


class InsideChart(NamedTuple):
    """The chart of :func:`inside_on_sets`.

    Attributes
    ----------
    log_z : Tensor (B,)
        ``beta(0, T-1)`` (the Viterbi score under ``semiring="max"``).
    label_logits : Tensor (B, T, T, K)
        ``phi(i, j, k) + log w(i, j, k)`` at the chosen labels (read for i <= j).
    beta : Tensor (B, T, T)
        ``beta(i, j)`` at ``[:, i, j]`` (i <= j; zero below the diagonal).
    lengths : LongTensor (B,)
        Sentence lengths: the root of item b is the span (0, lengths[b] - 1).
    """

    log_z: "torch.Tensor"
    label_logits: "torch.Tensor"
    beta: "torch.Tensor"
    lengths: "torch.Tensor"


def root_span(chart: "torch.Tensor", lengths: "torch.Tensor") -> "torch.Tensor":
    """The root span (0, L_b - 1) of every item of a (B, T, T, ...) chart: ``chart[b, 0, lengths[b] - 1]``.

    The inside value of a span depends on the spans inside it only, so the chart of a padded batch holds
    every shorter sentence's inside values too; reading each root at its own length is all that ragged
    batches need (spans beyond a length get no gradient and are never sampled)."""
    row = chart[:, 0]                                               # (B, T, ...)
    index = (lengths - 1).reshape(-1, *([1] * (row.dim() - 1))).expand(-1, 1, *row.shape[2:])
    return row.gather(1, index).squeeze(1)


def cky(span_scores: "torch.Tensor", reduce) -> "torch.Tensor":
    """The split recursion ``beta(i, j) = L(i, j) + reduce_m [beta(i, m) + beta(m + 1, j)]`` on (B, T, T) span
    scores, all spans of one width at once; returns the (B, T, T) chart of ``beta``."""
    length = span_scores.shape[1]
    beta = torch.zeros_like(span_scores, memory_format=torch.contiguous_format)
    diagonal(beta, 0).copy_(diagonal(span_scores, 0))
    for w in range(1, length):
        left, right = split_scores(beta, w)
        diagonal(beta, w).copy_(diagonal(span_scores, w) + reduce(left + right, -1))
    return beta


class _LogCKY(torch.autograd.Function):
    """:func:`cky` with logsumexp whose backward is the outside recursion (no autograd graph of T^2 small ops).

    Inputs: span scores (B, T, T) and lengths (B,); log Z of item b is read at its root (0, L_b - 1).
    Backward, widths in decreasing order: the adjoint of span (i, i + w) is complete once all wider spans
    are done (spans wider than a sentence keep adjoint 0); it is the gradient of log Z with respect to L(i, i + w) (the span's marginal), and it flows
    to the two children of split d with weight ``softmax_d(beta(i, i + d) + beta(i + d + 1, i + w))``.
    Once differentiable (entropies use the autograd path, ``double_backward=True``).
    """

    @staticmethod
    def forward(ctx, span_scores, lengths):
        beta = cky(span_scores, torch.logsumexp)
        ctx.save_for_backward(beta, lengths)
        ctx.mark_non_differentiable(beta)
        return root_span(beta, lengths), beta

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_log_z, _grad_beta):
        beta, lengths = ctx.saved_tensors
        length = beta.shape[1]
        adjoint = torch.zeros_like(beta)                      # d log Z / d beta(i, j) = d log Z / d L(i, j)
        adjoint[:, 0].scatter_(1, (lengths - 1).unsqueeze(1), grad_log_z.unsqueeze(1))
        for w in range(length - 1, 0, -1):
            left, right = split_scores(beta, w)
            flow = torch.softmax(left + right, dim=-1) * diagonal(adjoint, w).unsqueeze(-1)   # (B, T - w, w)
            to_left, to_right = split_scores(adjoint, w)
            to_left += flow
            to_right += flow
        return adjoint, None


def inside_on_sets(chosen: "torch.Tensor", log_weight: "torch.Tensor | None" = None, *, semiring: str = "log",
                   return_chart: bool = False, double_backward: bool = False,
                   lengths: "torch.Tensor | None" = None) -> "torch.Tensor | InsideChart":
    """Inside recursion of the tree CRF over label index sets (Alg. 2, Eq. 18); returns log Z (B,).

    Parameters
    ----------
    chosen : Tensor (B, T, T, K)
        Span log potentials at the chosen labels of each span (i <= j); all N labels for the exact inside.
    log_weight : Tensor (B, T, T, K), optional
        Log weights of the chosen labels (None: all zero, the exact inside).
    semiring : {"log", "max"}
        ``"log"``: log-sum-exp reductions (log Z); ``"max"``: max reductions (the best tree's score).
    return_chart : bool
        Return the whole :class:`InsideChart` (for top-down sampling or decoding) instead of log Z.
    double_backward : bool
        Build the split recursion on the autograd graph so that log Z can be differentiated twice (the
        entropies); otherwise (``"log"`` only) its gradient is the outside recursion of :class:`_LogCKY`.
        The chart tensors of the returned :class:`InsideChart` carry no gradient in that case.
    lengths : LongTensor (B,), optional
        Checked sentence lengths in [1, T] (default all T): log Z of item b is ``beta(0, L_b - 1)``.
    """
    reduce = reducer(semiring)
    if lengths is None:
        lengths = torch.full((chosen.shape[0],), chosen.shape[1], dtype=torch.long, device=chosen.device)
    logits = chosen if log_weight is None else chosen + log_weight
    span_scores = reduce(logits, -1)                                     # L(i, j): (B, T, T)
    if semiring == "log" and not double_backward:
        log_z, beta = _LogCKY.apply(span_scores, lengths)
    else:
        beta = cky(span_scores, reduce)
        log_z = root_span(beta, lengths)
    return InsideChart(log_z, logits, beta, lengths) if return_chart else log_z


class TreeSample(NamedTuple):
    """A top-down Gumbel draw of a labelled binary tree.

    Attributes
    ----------
    hard : LongTensor (B, T, T)
        The label of every span (i, j) of the sampled tree, -1 for spans not in it (and for i > j);
        an exact draw from the tree distribution of the chart it was sampled from.
    relaxed : Tensor (B, T, T, N)
        On the sampled spans, the tempered softmax ``softmax((alpha + g) / tau)`` of the label logits
        (or its straight-through version); zero elsewhere.
    """

    hard: "torch.Tensor"
    relaxed: "torch.Tensor"


class TreeViterbi(NamedTuple):
    """The highest-scoring labelled tree.

    Attributes
    ----------
    score : Tensor (B,)
        Its log potential (differentiable; its gradient is the tree's indicator).
    hard : LongTensor (B, T, T)
        Its label on every span in it, -1 elsewhere.
    """

    score: "torch.Tensor"
    hard: "torch.Tensor"


def child_slots(width: int, length: int, split: "torch.Tensor") -> tuple["torch.Tensor", "torch.Tensor"]:
    """Flat (start * T + end) positions of the two children of the spans (i, i + width) split at ``split`` (B, n)."""
    i = torch.arange(length - width, device=split.device)
    left = i * length + i + split
    right = (i + split + 1) * length + i + width
    return left, right


def gumbel_topdown(chart: InsideChart, index: "torch.Tensor | None", n_labels: int, *, tau: float = 1.0,
                   generator=None, straight_through: bool = False, perturb: bool = True) -> TreeSample:
    """Top-down Gumbel sampling of a labelled tree from an inside chart (the tree analogue of Alg. 4).

    From the root (0, L_b - 1) down (widths in decreasing order, all spans of a width at once), an active span
    (i, j) draws its label as the arg max of ``phi(i, j, k) + log w(i, j, k) + g_k`` and, when wider
    than one position, its split d as the arg max of ``beta(i, i + d) + beta(i + d + 1, j) + g_d``; the
    two children become active.  Since the label potentials depend on the span only, label and split
    are independent given the span, so this is an exact draw from ``exp(score) / Z`` of the chart; on a
    randomized chart (chosen labels with weights ``1 / (K2 q)``) it draws from the reweighted sparse
    distribution whose normaliser is Z-hat, and equals the exact sampler when ``k1 + k2 = N``.

    With ``perturb=False`` no noise is added: on a ``semiring="max"`` chart this is Viterbi decoding.
    ``index`` (B, T, T, K) maps chart positions to labels (None: the chart holds all labels).
    """
    logits, beta = chart.label_logits, chart.beta
    batch, length = beta.shape[:2]
    device, dtype = logits.device, logits.dtype
    hard = torch.full((batch, length, length), -1, dtype=torch.long, device=device)
    relaxed = torch.zeros(batch, length, length, n_labels, dtype=dtype, device=device)
    active = torch.zeros(batch, length * length, dtype=torch.long, device=device)
    active.scatter_(1, (chart.lengths - 1).unsqueeze(1), 1)               # the root (0, L_b - 1)
    for w in range(length - 1, -1, -1):
        on = diagonal(active.view(batch, length, length), w) > 0          # (B, T - w)
        label_logits = diagonal(logits, w)                                  # (B, T - w, K)
        perturbed = label_logits + _gumbel_noise(label_logits.shape, label_logits, generator) if perturb \
            else label_logits
        pos = perturbed.detach().argmax(-1)
        label = pos if index is None else diagonal(index, w).gather(2, pos.unsqueeze(-1)).squeeze(-1)
        diagonal(hard, w).copy_(torch.where(on, label, torch.full_like(label, -1)))
        soft = torch.softmax(perturbed / tau, dim=-1) * on.unsqueeze(-1).to(dtype)    # (B, T - w, K)
        if index is not None:
            soft = soft.new_zeros(batch, length - w, n_labels).scatter_add(2, diagonal(index, w), soft)
        torch.diagonal(relaxed, offset=w, dim1=1, dim2=2).copy_(soft.transpose(1, 2))
        if w == 0:
            continue
        left, right = split_scores(beta, w)
        splits = (left + right).detach()
        if perturb:
            splits = splits + _gumbel_noise(splits.shape, splits, generator)
        left_slot, right_slot = child_slots(w, length, splits.argmax(-1))
        active.scatter_add_(1, left_slot, on.long())
        active.scatter_add_(1, right_slot, on.long())
    return TreeSample(hard, straight_through_sample(hard, relaxed) if straight_through else relaxed)


def check_spans(span_potentials: Any, lengths: Any = None) -> tuple["torch.Tensor", "torch.Tensor"]:
    """Validate span potentials, a finite (B, T, T, N) tensor (only the i <= j half is read), and the
    sentence lengths (B,) in [1, T] (default all T); return both as tensors."""
    spans = as_potentials(span_potentials, "span_potentials", ndim=4)
    if spans.shape[1] != spans.shape[2]:
        raise ValueError(f"span_potentials must have shape (B, T, T, N), got {tuple(spans.shape)}")
    return spans, check_lengths(lengths, spans.shape[0], spans.shape[1], spans.device)


def tree_log_partition(span_potentials: Any, lengths: Any = None) -> "torch.Tensor":
    """Exact log partition function of the span-labelled tree CRF by the inside algorithm.

    Parameters
    ----------
    span_potentials : Tensor (B, T, T, N)
        ``[b, i, j, k]``: log potential of label k on span (i, j), i <= j.
    lengths : LongTensor (B,), optional
        Sentence lengths in [1, T] (default all T): item b is a tree over positions 0..L_b - 1 (its
        root is the span (0, L_b - 1)); potentials of spans beyond L_b are ignored.

    Returns
    -------
    Tensor (B,)
        log Z, differentiable with respect to ``span_potentials``.  Cost O(T^2 N + T^3).

    Examples
    --------
    >>> import torch, rdp
    >>> rdp.tree_log_partition(torch.zeros(1, 3, 3, 1))  # 2 binary trees over 3 leaves
    tensor([0.6931])
    """
    spans, lengths = check_spans(span_potentials, lengths)
    return inside_on_sets(spans, lengths=lengths)


def entropy_from_log_partition(log_z: "torch.Tensor", parameters: Sequence["torch.Tensor"]) -> "torch.Tensor":
    """Entropy of an exponential family from its log partition: ``H = log Z - sum_theta theta . dlogZ/dtheta``.

    ``parameters`` are tensors with a leading batch axis (B, ...) on the graph of ``log_z`` (B,),
    in which each structure's score is linear; their gradients (the expected sufficient statistics)
    are taken with ``create_graph`` so the entropy stays differentiable.
    """
    grads = torch.autograd.grad(log_z.sum(), list(parameters), create_graph=True)
    expected = sum((theta * g).reshape(log_z.shape[0], -1).sum(-1) for theta, g in zip(parameters, grads))
    return log_z - expected


def _as_leaf(x: "torch.Tensor") -> "torch.Tensor":
    return x if x.requires_grad else x.detach().requires_grad_(True)


def tree_marginals(span_potentials: Any, lengths: Any = None) -> "torch.Tensor":
    """Exact span-label marginals p(span (i, j) with label k in the tree), shape (B, T, T, N) (zero on spans
    beyond each length; ``lengths`` as in :func:`tree_log_partition`)."""
    spans, lengths = check_spans(span_potentials, lengths)
    with torch.enable_grad():
        leaf = _as_leaf(spans)
        log_z = inside_on_sets(leaf, double_backward=spans.requires_grad, lengths=lengths)
        (grad,) = torch.autograd.grad(log_z.sum(), leaf, create_graph=spans.requires_grad)
    return grad


def tree_entropy(span_potentials: Any, lengths: Any = None) -> "torch.Tensor":
    """Exact entropy of the span-labelled tree CRF, shape (B,) (differentiable; ``lengths`` as in
    :func:`tree_log_partition`)."""
    spans, lengths = check_spans(span_potentials, lengths)
    with torch.enable_grad():
        leaf = _as_leaf(spans)
        return entropy_from_log_partition(inside_on_sets(leaf, double_backward=True, lengths=lengths), [leaf])


def tree_viterbi(span_potentials: Any, lengths: Any = None) -> TreeViterbi:
    """Highest-scoring labelled tree: the inside recursion with max reductions, then arg-max decoding top-down.

    Parameters
    ----------
    span_potentials : Tensor (B, T, T, N)
        Label log potentials per span (i <= j).
    lengths : LongTensor (B,), optional
        Sentence lengths in [1, T], as in :func:`tree_log_partition`.

    Returns
    -------
    TreeViterbi
        ``score`` (B,) and ``hard`` (B, T, T) labels of the best tree (-1 off it).

    Examples
    --------
    >>> import torch, rdp
    >>> spans = torch.zeros(1, 2, 2, 3); spans[0, 0, 1, 2] = 1.0
    >>> best = rdp.tree_viterbi(spans)
    >>> float(best.score), int(best.hard[0, 0, 1])
    (1.0, 2)
    """
    spans, lengths = check_spans(span_potentials, lengths)
    chart = inside_on_sets(spans, semiring="max", return_chart=True, lengths=lengths)
    hard = gumbel_topdown(chart, None, spans.shape[-1], perturb=False).hard
    return TreeViterbi(chart.log_z, hard)


def tree_gumbel_sample(span_potentials: Any, lengths: Any = None, *, tau: float = 1.0,
                       generator: "torch.Generator | None" = None, straight_through: bool = False) -> TreeSample:
    """Exact draw of labelled binary trees from the span-labelled tree CRF (inside, then top-down Gumbel).

    Parameters
    ----------
    span_potentials : Tensor (B, T, T, N)
        Label log potentials per span (i <= j).
    lengths : LongTensor (B,), optional
        Sentence lengths in [1, T], as in :func:`tree_log_partition` (no span beyond L_b is sampled).
    tau : float
        Temperature of the relaxed label samples.
    generator : torch.Generator, optional
        Source of the Gumbel noise.
    straight_through : bool
        Return ``one_hot(hard) - relaxed.detach() + relaxed`` as the relaxed sample.

    Returns
    -------
    TreeSample
        ``hard`` (B, T, T) span labels (-1 off the tree) and ``relaxed`` (B, T, T, N), see
        :func:`gumbel_topdown`.

    Examples
    --------
    >>> import torch, rdp
    >>> s = rdp.tree_gumbel_sample(torch.zeros(1, 3, 3, 2), generator=torch.Generator().manual_seed(0))
    >>> int((s.hard >= 0).sum())   # a binary tree over 3 leaves has 5 spans
    5
    """
    tau = check_float(tau, "tau", low=0.0, low_open=True)
    spans, lengths = check_spans(span_potentials, lengths)
    generator = check_generator(generator, spans.device)
    chart = inside_on_sets(spans, return_chart=True, lengths=lengths)
    return gumbel_topdown(chart, None, spans.shape[-1], tau=tau, generator=generator,
                          straight_through=straight_through)

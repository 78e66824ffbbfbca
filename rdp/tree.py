"""Exact inside, marginals and entropy for span-labelled tree CRFs and PCFGs in Chomsky normal form.

Span-labelled tree CRF (the hypertree of Alg. 2 of the RDP paper): a binary bracketing of positions
0..T-1 with a label k in 1..N on every span (i, j); its log potential is the sum of
``span_potentials[b, i, j, k]`` over its labelled spans (only i <= j is read).  The inside recursion
(Eq. 18 with all states) is

    alpha(i, j, k) = phi(i, j, k) + log sum_{m=i}^{j-1} beta(i, m) beta(m+1, j),
    beta(i, j)     = logsumexp_k [alpha(i, j, k) + log w(i, j, k)],     log Z = beta(0, T-1),

where the sum over labels of each child factorises out of the sum over the split (the potentials
depend on the parent label only).  As for chains, :func:`inside_on_sets` is stated once over index
sets: all labels with weight 1 here, top-K1 plus K2 sampled labels in :mod:`rdp.randomized_tree`.

Marginals are gradients of log Z; the entropy is ``log Z - sum(marginals * potentials)`` (the
log potential is linear in the parameters), see :func:`entropy_from_log_partition`.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from samplers.validation import check_float

from ._checks import as_potentials, check_generator
from ._torch import torch
from .chain import _gumbel_noise, straight_through_sample


class InsideChart(NamedTuple):
    """The inside chart of :func:`inside_on_sets`.

    Attributes
    ----------
    log_z : Tensor (B,)
        ``beta(0, T-1)``.
    alphas : list of Tensor (B, T - w, K), w = 0..T-1
        ``alpha(i, i + w, k)`` at the chosen labels, log weights included.
    betas : list of Tensor (B, T - w)
        ``beta(i, i + w)``.
    """

    log_z: "torch.Tensor"
    alphas: list
    betas: list


def inside_on_sets(chosen: "torch.Tensor", log_weight: "torch.Tensor", *,
                   return_chart: bool = False) -> "torch.Tensor | InsideChart":
    """Inside recursion over label index sets (Alg. 2, Eq. 18); returns log Z (B,).

    Parameters
    ----------
    chosen : Tensor (B, T, T, K)
        Span log potentials at the chosen labels of each span (i <= j).
    log_weight : Tensor (B, T, T, K)
        Log weights of the chosen labels (zeros for the exact inside).
    return_chart : bool
        Return the whole :class:`InsideChart` (for top-down sampling) instead of log Z.
    """
    length = chosen.shape[1]
    # beta[w] : (B, T - w) log inside sums of the spans (i, i + w)
    beta: list["torch.Tensor"] = []
    alphas: list["torch.Tensor"] = []
    for w in range(length):
        starts = torch.arange(length - w, device=chosen.device)
        phi = chosen[:, starts, starts + w] + log_weight[:, starts, starts + w]  # (B, T-w, K)
        if w == 0:
            alpha = phi
        else:
            alpha = phi + torch.logsumexp(_split_scores(beta, w, length), dim=-1, keepdim=True)
        alphas.append(alpha)
        beta.append(torch.logsumexp(alpha, dim=-1))
    if return_chart:
        return InsideChart(beta[length - 1][:, 0], alphas, beta)
    return beta[length - 1][:, 0]


def _split_scores(beta: list, w: int, length: int) -> "torch.Tensor":
    """``beta(i, i + d) + beta(i + d + 1, i + w)`` for every span of width w and split d: (B, T - w, w)."""
    return torch.stack([beta[d][:, : length - w] + beta[w - 1 - d][:, d + 1: d + 1 + length - w]
                        for d in range(w)], dim=-1)


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


def gumbel_topdown(chart: InsideChart, index: "torch.Tensor | None", n_labels: int, *, tau: float,
                   generator=None, straight_through: bool = False) -> TreeSample:
    """Top-down Gumbel sampling of a labelled tree from an inside chart (the tree analogue of Alg. 4).

    From the root down (widths in decreasing order, all spans of a width at once), an active span
    (i, j) draws its label as the arg max of ``alpha(i, j, k) + g_k`` and, when wider than one
    position, its split d as the arg max of ``beta(i, i + d) + beta(i + d + 1, j) + g_d``; the two
    children become active.  Since the label potentials depend on the span only, label and split are
    independent given the span, so this is an exact draw from ``exp(score) / Z`` of the chart; on a
    randomized chart (chosen labels with weights ``1 / (K2 q)``) it draws from the reweighted sparse
    distribution whose normaliser is Z-hat, and equals the exact sampler when ``k1 + k2 = N``.
    """
    alphas, betas = chart.alphas, chart.betas
    length = len(alphas)
    batch = alphas[0].shape[0]
    device, dtype = alphas[0].device, alphas[0].dtype
    hard = torch.full((batch, length, length), -1, dtype=torch.long, device=device)
    relaxed = torch.zeros(batch, length, length, n_labels, dtype=dtype, device=device)
    active = [torch.zeros(batch, length - w, dtype=torch.bool, device=device) for w in range(length)]
    active[length - 1][:, 0] = True
    for w in range(length - 1, -1, -1):
        on = active[w]
        starts = torch.arange(length - w, device=device)
        perturbed = alphas[w] + _gumbel_noise(alphas[w].shape, alphas[w], generator)
        pos = perturbed.detach().argmax(-1)                                         # (B, T - w)
        label = pos if index is None else index[:, starts, starts + w].gather(2, pos.unsqueeze(-1)).squeeze(-1)
        hard[:, starts, starts + w] = torch.where(on, label, torch.full_like(label, -1))
        soft = torch.softmax(perturbed / tau, dim=-1) * on.unsqueeze(-1).to(dtype)    # (B, T - w, K)
        if index is not None:
            soft = torch.zeros(batch, length - w, n_labels, dtype=dtype, device=device).scatter_add(
                2, index[:, starts, starts + w], soft)
        relaxed[:, starts, starts + w] = soft
        if w == 0:
            continue
        splits = _split_scores(betas, w, length)
        split = (splits + _gumbel_noise(splits.shape, splits, generator)).argmax(-1)  # (B, T - w)
        for d in range(w):
            chosen = on & (split == d)
            active[d][:, : length - w] |= chosen
            active[w - 1 - d][:, d + 1: d + 1 + length - w] |= chosen
    return TreeSample(hard, straight_through_sample(hard, relaxed) if straight_through else relaxed)


def check_spans(span_potentials: Any) -> "torch.Tensor":
    """Validate span potentials: a finite (B, T, T, N) tensor (only the i <= j half is read)."""
    spans = as_potentials(span_potentials, "span_potentials", ndim=4)
    if spans.shape[1] != spans.shape[2]:
        raise ValueError(f"span_potentials must have shape (B, T, T, N), got {tuple(spans.shape)}")
    return spans


def tree_log_partition(span_potentials: Any) -> "torch.Tensor":
    """Exact log partition function of the span-labelled tree CRF by the inside algorithm.

    Parameters
    ----------
    span_potentials : Tensor (B, T, T, N)
        ``[b, i, j, k]``: log potential of label k on span (i, j), i <= j.

    Returns
    -------
    Tensor (B,)
        log Z, differentiable with respect to ``span_potentials``.

    Examples
    --------
    >>> import torch, rdp
    >>> rdp.tree_log_partition(torch.zeros(1, 3, 3, 1))  # 2 binary trees over 3 leaves
    tensor([0.6931])
    """
    spans = check_spans(span_potentials)
    return inside_on_sets(spans, torch.zeros((1, 1, 1, 1), dtype=spans.dtype, device=spans.device).expand_as(spans))


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


def tree_marginals(span_potentials: Any) -> "torch.Tensor":
    """Exact span-label marginals p(span (i, j) with label k in the tree), shape (B, T, T, N)."""
    spans = check_spans(span_potentials)
    with torch.enable_grad():
        leaf = _as_leaf(spans)
        (grad,) = torch.autograd.grad(tree_log_partition(leaf).sum(), leaf, create_graph=spans.requires_grad)
    return grad


def tree_entropy(span_potentials: Any) -> "torch.Tensor":
    """Exact entropy of the span-labelled tree CRF, shape (B,) (differentiable)."""
    spans = check_spans(span_potentials)
    with torch.enable_grad():
        leaf = _as_leaf(spans)
        return entropy_from_log_partition(tree_log_partition(leaf), [leaf])


def tree_gumbel_sample(span_potentials: Any, *, tau: float = 1.0, generator: "torch.Generator | None" = None,
                       straight_through: bool = False) -> TreeSample:
    """Exact draw of labelled binary trees from the span-labelled tree CRF (inside, then top-down Gumbel).

    Parameters
    ----------
    span_potentials : Tensor (B, T, T, N)
        Label log potentials per span (i <= j).
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
    spans = check_spans(span_potentials)
    generator = check_generator(generator, spans.device)
    chart = inside_on_sets(spans, torch.zeros((1, 1, 1, 1), dtype=spans.dtype, device=spans.device).expand_as(spans),
                           return_chart=True)
    return gumbel_topdown(chart, None, spans.shape[-1], tau=tau, generator=generator,
                          straight_through=straight_through)


def _check_pcfg(rule_scores: Any, terminal_scores: Any, root_scores: Any):
    terminal = as_potentials(terminal_scores, "terminal_scores", ndim=3)
    batch, length, nt = terminal.shape
    rules = as_potentials(rule_scores, "rule_scores", ndim=(3, 4))
    if tuple(rules.shape[-3:]) != (nt, nt, nt) or (rules.dim() == 4 and rules.shape[0] != batch):
        raise ValueError(f"rule_scores must have shape (NT, NT, NT) or (B, NT, NT, NT) with NT={nt}, B={batch}; "
                         f"got {tuple(rules.shape)}")
    root = as_potentials(root_scores, "root_scores", ndim=(1, 2))
    if root.shape[-1] != nt or (root.dim() == 2 and root.shape[0] != batch):
        raise ValueError(f"root_scores must have shape (NT,) or (B, NT) with NT={nt}; got {tuple(root.shape)}")
    return rules, terminal, root


def pcfg_log_partition(rule_scores: Any, terminal_scores: Any, root_scores: Any) -> "torch.Tensor":
    """Exact log partition of a PCFG in Chomsky normal form over a sentence (inside algorithm).

    Parameters
    ----------
    rule_scores : Tensor (NT, NT, NT) or (B, NT, NT, NT)
        ``[A, B, C]``: log score of the binary rule A -> B C.
    terminal_scores : Tensor (B, T, NT)
        ``[b, i, A]``: log score of A -> word_i (the preterminal rule at position i).
    root_scores : Tensor (NT,) or (B, NT)
        Log score of the start symbol being A.

    Returns
    -------
    Tensor (B,)
        ``log sum_trees exp(score)``, differentiable.  Cost O(T^3 NT^3).
    """
    rules, terminal, root = _check_pcfg(rule_scores, terminal_scores, root_scores)
    batch, length, nt = terminal.shape
    rules = rules if rules.dim() == 4 else rules.unsqueeze(0).expand(batch, -1, -1, -1)
    flat_rules = rules.reshape(batch, 1, nt, nt * nt)
    beta = [terminal]  # beta[w]: (B, T - w, NT) for spans (i, i + w)
    for w in range(1, length):
        n = length - w
        pairs = torch.stack([beta[d][:, :n, :, None] + beta[w - 1 - d][:, d + 1: d + 1 + n, None, :]
                             for d in range(w)], dim=-1)  # (B, n, NT, NT, w)
        children = torch.logsumexp(pairs, dim=-1).reshape(batch, n, 1, nt * nt)
        beta.append(torch.logsumexp(flat_rules + children, dim=-1))
    root = root if root.dim() == 2 else root.unsqueeze(0)
    return torch.logsumexp(beta[length - 1][:, 0] + root, dim=-1)


def pcfg_marginals(rule_scores: Any, terminal_scores: Any, root_scores: Any) -> dict[str, "torch.Tensor"]:
    """Expected counts of every rule: gradients of log Z (``{"rules", "terminals", "roots"}``, summed over batch
    for shared rule/root scores)."""
    rules, terminal, root = _check_pcfg(rule_scores, terminal_scores, root_scores)
    with torch.enable_grad():
        leaves = [_as_leaf(rules), _as_leaf(terminal), _as_leaf(root)]
        grads = torch.autograd.grad(pcfg_log_partition(*leaves).sum(), leaves)
    return dict(zip(("rules", "terminals", "roots"), grads))


def pcfg_entropy(rule_scores: Any, terminal_scores: Any, root_scores: Any) -> "torch.Tensor":
    """Exact entropy (B,) of the PCFG's distribution over parse trees of each sentence."""
    rules, terminal, root = _check_pcfg(rule_scores, terminal_scores, root_scores)
    batch = terminal.shape[0]
    with torch.enable_grad():
        if rules.dim() == 3:
            rules = rules.unsqueeze(0).expand(batch, -1, -1, -1)
        if root.dim() == 1:
            root = root.unsqueeze(0).expand(batch, -1)
        leaves = [_as_leaf(rules), _as_leaf(terminal), _as_leaf(root)]
        return entropy_from_log_partition(pcfg_log_partition(*leaves), leaves)

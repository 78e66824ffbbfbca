"""CNF PCFG inside on nonterminal index sets: exact and randomized log Z, marginals, entropy, Viterbi, sampling.

A PCFG in Chomsky normal form scores a parse tree of a sentence of T words by its root rule
``rho(A)``, its binary rules ``r(A, B, C)`` and its preterminal rules ``t(i, A)`` (A -> word_i).  Every
span (i, j), leaves included, has an index set of K nonterminals with log weights (all NT with weight
1 for the exact inside; top-K1 plus K2 sampled ones with weights ``1 / (K2 q~)`` in
:mod:`rdp.randomized_pcfg`).  The inside recursion (Alg. 2, Eq. 18 with rule scores) is stated once,
in :func:`pcfg_inside_on_sets`, for both, and for both reductions (``semiring="log"``: log Z;
``"max"``: the best parse's score):

    gamma(i, i, A) = t(i, A) + log w_iiA,
    gamma(i, j, A) = log w_ijA + log sum_{m=i}^{j-1} sum_{B in Omega_im} sum_{C in Omega_(m+1)j}
                     r(A, B, C) exp(gamma(i, m, B) + gamma(m+1, j, C)),               A in Omega_ij,
    log Z          = log sum_{A in Omega_0(T-1)} rho(A) exp(gamma(0, T-1, A)),

all spans of one width at once, the children of all splits read as two strided views of the chart as
in :mod:`rdp.tree`.  When the sets are all nonterminals (``sets=None``) every span has the same set, so
the recursion contracts the children first (``sum_m exp(gamma(i,m,B) + gamma(m+1,j,C))`` for all B, C,
then the rules: O(T^3 NT^2 + T^2 NT^3)); on per-span sets the rule tensor is gathered at
(parent, left, right) set members for each split (O(T^3 K^3)).  Both orders are the same sum (tested
equal with the full sets passed explicitly).

Gumbel sampling (:func:`pcfg_topdown`) reads the chart top down: the root label is the arg max of
``rho(A) + gamma(0, T-1, A) + g_A``; an active span (i, j) with label A draws its split and both child
labels jointly as the arg max of ``r(A, B, C) + gamma(i, m, B) + gamma(m+1, j, C) + g_(m,B,C)``.  This is
an exact draw from ``W(y) exp(s(y)) / Z`` over the trees on the chart's sets (W the product of the
weights), i.e. from the PCFG itself for the exact chart.  Without noise on a max chart it is Viterbi.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ._checks import as_potentials, check_generator, check_lengths
from ._torch import torch
from .chain import _gumbel_noise
from .selection import IndexSets
from .tree import TreeViterbi, _as_leaf, diagonal, entropy_from_log_partition, reducer, root_span, split_scores


class PCFGChart(NamedTuple):
    """The chart of :func:`pcfg_inside_on_sets`.

    Attributes
    ----------
    log_z : Tensor (B,)
        log Z (or log Z-hat; the best parse's score under ``semiring="max"``).
    gamma : Tensor (B, T, T, K)
        ``gamma(i, j, .)`` at ``[:, i, j]`` (i <= j), weights included.
    root_logits : Tensor (B, K)
        ``rho(A) + gamma(0, L_b - 1, A)`` at the root's set.
    index : LongTensor (B, T, T, K) or None
        The nonterminal of every set position of span (i, j) (None: all NT in order).
    lengths : LongTensor (B,)
        Sentence lengths: the root of item b is the span (0, lengths[b] - 1).
    """

    log_z: "torch.Tensor"
    gamma: "torch.Tensor"
    root_logits: "torch.Tensor"
    index: "torch.Tensor | None"
    lengths: "torch.Tensor"


def _gather_rules(rules: "torch.Tensor", parent: "torch.Tensor", left: "torch.Tensor",
                  right: "torch.Tensor") -> "torch.Tensor":
    """``rules[(b,) parent, left, right]`` with broadcasting index tensors (rules (NT,)*3 or (B, NT, NT, NT))."""
    if rules.dim() == 3:
        return rules[parent, left, right]
    batch = torch.arange(rules.shape[0], device=rules.device).reshape(-1, *([1] * (parent.dim() - 1)))
    return rules[batch, parent, left, right]


def pcfg_inside_on_sets(rules: "torch.Tensor", terminal: "torch.Tensor", root: "torch.Tensor",
                        sets: IndexSets | None = None, *, semiring: str = "log",
                        return_chart: bool = False, lengths: "torch.Tensor | None" = None) -> "torch.Tensor | PCFGChart":
    """Inside recursion of a CNF PCFG over nonterminal index sets per span (Eq. 18); returns log Z (B,).

    Parameters
    ----------
    rules : Tensor (NT, NT, NT) or (B, NT, NT, NT)
        Binary rule log scores ``r(A, B, C)``.
    terminal : Tensor (B, T, NT)
        Preterminal log scores.
    root : Tensor (NT,) or (B, NT)
        Root log scores.
    sets : IndexSets, optional
        ``index`` and ``log_weight`` of shape (B, T, T, K): the chosen nonterminals of each span
        (i <= j) and their log weights.  None: every nonterminal with weight 1 (the exact inside).
    semiring : {"log", "max"}
        Log-sum-exp (log Z) or max (the best parse's score) reductions.
    return_chart : bool
        Return the :class:`PCFGChart` (for :func:`pcfg_topdown`) instead of log Z.
    lengths : LongTensor (B,), optional
        Checked sentence lengths in [1, T] (default all T): the root of item b is the span (0, L_b - 1)
        (:func:`rdp.tree.root_span`).
    """
    reduce = reducer(semiring)
    batch, length, nt = terminal.shape
    if lengths is None:
        lengths = torch.full((batch,), length, dtype=torch.long, device=terminal.device)
    rules = rules.to(terminal.dtype)
    root = root if root.dim() == 2 else root.unsqueeze(0).expand(batch, -1)
    if sets is None:
        leaves, k, index = terminal, nt, None
        flat_rules = rules.reshape(-1, 1, nt, nt * nt)                    # (1 or B, 1, NT, NT^2)
    else:
        index, log_w = sets.index.contiguous(), sets.log_weight
        k = index.shape[-1]
        leaves = terminal.gather(2, diagonal(index, 0)) + diagonal(log_w, 0)
    gamma = terminal.new_zeros(batch, length, length, k)
    diagonal(gamma, 0).copy_(leaves)
    for w in range(1, length):
        n = length - w
        left, right = split_scores(gamma, w)                               # (B, n, w, K)
        if sets is None:
            children = reduce(left[..., :, None] + right[..., None, :], 2).reshape(batch, n, 1, nt * nt)
            new = reduce(flat_rules + children, -1)                         # (B, n, NT)
        else:
            left_idx, right_idx = split_scores(index, w)
            r = _gather_rules(rules, diagonal(index, w)[:, :, None, :, None, None],
                              left_idx[:, :, :, None, :, None], right_idx[:, :, :, None, None, :])
            terms = r + left[:, :, :, None, :, None] + right[:, :, :, None, None, :]   # (B, n, w, K, K, K)
            new = reduce(terms, (2, 4, 5)) + diagonal(log_w, w)
        diagonal(gamma, w).copy_(new)
    root_logits = (root if index is None else root.gather(1, root_span(index, lengths))) + root_span(gamma, lengths)
    log_z = reduce(root_logits, -1)
    return PCFGChart(log_z, gamma, root_logits, index, lengths) if return_chart else log_z


def pcfg_topdown(chart: PCFGChart, rules: "torch.Tensor", *, generator=None, perturb: bool = True) -> "torch.Tensor":
    """Top-down Gumbel draw (or, with ``perturb=False`` on a max chart, Viterbi decoding) of parse trees.

    Returns a LongTensor (B, T, T): the nonterminal of every span of the tree, -1 off it (module
    docstring).  ``rules`` are the binary rule scores the chart was computed with.
    """
    gamma = chart.gamma.detach()
    rules = rules.detach().to(gamma.dtype)
    batch, length, _, k = gamma.shape
    device = gamma.device
    flat = torch.full((batch, length * length + 1), -1, dtype=torch.long, device=device)  # last slot: a sink
    root = chart.root_logits.detach()
    if perturb:
        root = root + _gumbel_noise(root.shape, root, generator)
    flat.scatter_(1, (chart.lengths - 1).unsqueeze(1), root.argmax(-1, keepdim=True))   # the root (0, L_b - 1)
    position = flat[:, :-1].view(batch, length, length)                  # set position of each span's label
    for w in range(length - 1, 0, -1):
        n = length - w
        pos = diagonal(position, w)                                         # (B, n)
        on = pos >= 0
        pos = pos.clamp_min(0)
        left, right = split_scores(gamma, w)                               # (B, n, w, K)
        if chart.index is None:
            r = _gather_rules(rules, pos[:, :, None, None, None], torch.arange(k, device=device)[:, None],
                              torch.arange(k, device=device))             # (B, n, 1, K, K)
        else:
            left_idx, right_idx = split_scores(chart.index, w)
            parent = diagonal(chart.index, w).gather(2, pos.unsqueeze(-1))  # (B, n, 1)
            r = _gather_rules(rules, parent[:, :, :, None, None], left_idx[:, :, :, :, None],
                              right_idx[:, :, :, None, :])                # (B, n, w, K, K)
        logits = (r + left[..., :, None] + right[..., None, :]).reshape(batch, n, w * k * k)
        if perturb:
            logits = logits + _gumbel_noise(logits.shape, logits, generator)
        code = logits.argmax(-1)
        split, b, c = code // (k * k), (code // k) % k, code % k
        i = torch.arange(n, device=device)
        sink = torch.full_like(split, length * length)
        left_slot = torch.where(on, i * length + i + split, sink)
        right_slot = torch.where(on, (i + split + 1) * length + i + w, sink)
        flat.scatter_(1, left_slot, b)
        flat.scatter_(1, right_slot, c)
    position = flat[:, :-1].view(batch, length, length)
    on = position >= 0
    labels = position.clamp_min(0) if chart.index is None else chart.index.gather(
        3, position.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return torch.where(on, labels, torch.full_like(labels, -1))


def check_pcfg(rule_scores: Any, terminal_scores: Any, root_scores: Any, lengths: Any = None):
    """Validate PCFG scores, rules (NT,)*3 or (B, NT, NT, NT), terminals (B, T, NT), roots (NT,) or (B, NT),
    and sentence lengths (B,) in [1, T] (default all T); return (rules, terminals, roots, lengths)."""
    terminal = as_potentials(terminal_scores, "terminal_scores", ndim=3)
    batch, length, nt = terminal.shape
    rules = as_potentials(rule_scores, "rule_scores", ndim=(3, 4))
    if tuple(rules.shape[-3:]) != (nt, nt, nt) or (rules.dim() == 4 and rules.shape[0] != batch):
        raise ValueError(f"rule_scores must have shape (NT, NT, NT) or (B, NT, NT, NT) with NT={nt}, B={batch}; "
                         f"got {tuple(rules.shape)}")
    root = as_potentials(root_scores, "root_scores", ndim=(1, 2))
    if root.shape[-1] != nt or (root.dim() == 2 and root.shape[0] != batch):
        raise ValueError(f"root_scores must have shape (NT,) or (B, NT) with NT={nt}; got {tuple(root.shape)}")
    return rules, terminal, root, check_lengths(lengths, batch, length, terminal.device)


def pcfg_log_partition(rule_scores: Any, terminal_scores: Any, root_scores: Any, lengths: Any = None) -> "torch.Tensor":
    """Exact log partition of a PCFG in Chomsky normal form over a sentence (inside algorithm).

    Parameters
    ----------
    rule_scores : Tensor (NT, NT, NT) or (B, NT, NT, NT)
        ``[A, B, C]``: log score of the binary rule A -> B C.
    terminal_scores : Tensor (B, T, NT)
        ``[b, i, A]``: log score of A -> word_i (the preterminal rule at position i).
    root_scores : Tensor (NT,) or (B, NT)
        Log score of the start symbol being A.
    lengths : LongTensor (B,), optional
        Sentence lengths in [1, T] (default all T): sentence b is words 0..L_b - 1, its root the span
        (0, L_b - 1); terminal scores beyond L_b are ignored.

    Returns
    -------
    Tensor (B,)
        ``log sum_trees exp(score)``, differentiable.  Cost O(T^3 NT^2 + T^2 NT^3).

    Examples
    --------
    >>> import torch, rdp
    >>> rdp.pcfg_log_partition(torch.zeros(1, 1, 1), torch.zeros(1, 3, 1), torch.zeros(1))  # 2 trees
    tensor([0.6931])
    """
    rules, terminal, root, lengths = check_pcfg(rule_scores, terminal_scores, root_scores, lengths)
    return pcfg_inside_on_sets(rules, terminal, root, lengths=lengths)


def pcfg_marginals(rule_scores: Any, terminal_scores: Any, root_scores: Any,
                   lengths: Any = None) -> dict[str, "torch.Tensor"]:
    """Expected counts of every rule: gradients of log Z (``{"rules", "terminals", "roots"}``, summed over batch
    for shared rule/root scores; ``lengths`` as in :func:`pcfg_log_partition`)."""
    rules, terminal, root, lengths = check_pcfg(rule_scores, terminal_scores, root_scores, lengths)
    with torch.enable_grad():
        leaves = [_as_leaf(rules), _as_leaf(terminal), _as_leaf(root)]
        grads = torch.autograd.grad(pcfg_inside_on_sets(*leaves, lengths=lengths).sum(), leaves)
    return dict(zip(("rules", "terminals", "roots"), grads))


def batched_leaves(rules: "torch.Tensor", terminal: "torch.Tensor", root: "torch.Tensor") -> list["torch.Tensor"]:
    """Rules and roots expanded to a leading batch axis, all three as autograd leaves (for per-item entropies)."""
    batch = terminal.shape[0]
    rules = rules if rules.dim() == 4 else rules.unsqueeze(0).expand(batch, -1, -1, -1)
    root = root if root.dim() == 2 else root.unsqueeze(0).expand(batch, -1)
    return [_as_leaf(rules), _as_leaf(terminal), _as_leaf(root)]


def pcfg_entropy(rule_scores: Any, terminal_scores: Any, root_scores: Any, lengths: Any = None) -> "torch.Tensor":
    """Exact entropy (B,) of the PCFG's distribution over parse trees of each sentence (``lengths`` as in
    :func:`pcfg_log_partition`)."""
    rules, terminal, root, lengths = check_pcfg(rule_scores, terminal_scores, root_scores, lengths)
    with torch.enable_grad():
        leaves = batched_leaves(rules, terminal, root)
        return entropy_from_log_partition(pcfg_inside_on_sets(*leaves, lengths=lengths), leaves)


def pcfg_viterbi(rule_scores: Any, terminal_scores: Any, root_scores: Any, lengths: Any = None) -> TreeViterbi:
    """Best parse of each sentence: :func:`pcfg_inside_on_sets` with max reductions, then arg-max decoding
    (``lengths`` as in :func:`pcfg_log_partition`).

    Returns
    -------
    TreeViterbi
        ``score`` (B,) the best parse's log score (differentiable) and ``hard`` (B, T, T) its
        nonterminal on every span of the tree (-1 off it).

    Examples
    --------
    >>> import torch, rdp
    >>> rules = torch.zeros(2, 2, 2); rules[1, 0, 0] = 1.0
    >>> best = rdp.pcfg_viterbi(rules, torch.zeros(1, 2, 2), torch.zeros(2))
    >>> float(best.score), best.hard[0].tolist()
    (1.0, [[0, 1], [-1, 0]])
    """
    rules, terminal, root, lengths = check_pcfg(rule_scores, terminal_scores, root_scores, lengths)
    chart = pcfg_inside_on_sets(rules, terminal, root, semiring="max", return_chart=True, lengths=lengths)
    return TreeViterbi(chart.log_z, pcfg_topdown(chart, rules, perturb=False))


def pcfg_gumbel_sample(rule_scores: Any, terminal_scores: Any, root_scores: Any, lengths: Any = None, *,
                       generator: "torch.Generator | None" = None) -> "torch.Tensor":
    """Exact draw of parse trees from a CNF PCFG (inside chart, then top-down Gumbel; module docstring).

    Parameters
    ----------
    rule_scores, terminal_scores, root_scores, lengths
        As for :func:`pcfg_log_partition` (no span beyond L_b is sampled).
    generator : torch.Generator, optional
        Source of the Gumbel noise.

    Returns
    -------
    LongTensor (B, T, T)
        The nonterminal of every span of the sampled tree, -1 for spans not in it.

    Examples
    --------
    >>> import torch, rdp
    >>> g = torch.Generator().manual_seed(0)
    >>> trees = rdp.pcfg_gumbel_sample(torch.randn(3, 3, 3), torch.randn(1, 4, 3), torch.randn(3), generator=g)
    >>> int((trees >= 0).sum())   # 2 T - 1 spans
    7
    """
    rules, terminal, root, lengths = check_pcfg(rule_scores, terminal_scores, root_scores, lengths)
    generator = check_generator(generator, terminal.device)
    with torch.no_grad():
        chart = pcfg_inside_on_sets(rules, terminal, root, return_chart=True, lengths=lengths)
        return pcfg_topdown(chart, rules, generator=generator)

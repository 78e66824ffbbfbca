"""Pruning masks over spans: CreateMask (Algorithm 2), posterior-threshold masks, figure-of-merit masks.

A mask is a boolean ``(n+1, n+1)`` array, ``mask[i, k]`` = keep span ``(i, k)``.  Auxiliary variables
live on the *ambiguous* spans (length 2 .. n-1): one-word spans and the whole sentence are
constituents of every tree.
"""

from __future__ import annotations

import numpy as np

from .._jit import jit
from ..models.chart import expected_counts, full_mask, inside_chart, tree_spans, viterbi
from ..models.pcfg import Grammar
from ..validation import as_float_array, check_float


def ambiguous_spans(n: int) -> np.ndarray:
    """The spans ``(i, k)`` with ``2 <= k - i <= n - 1`` (auxiliary-variable index set M), shape (m, 2)."""
    return np.array([(i, i + length) for length in range(2, n) for i in range(n - length + 1)],
                    dtype=np.int64).reshape(-1, 2)


@jit
def create_mask_kernel(n, sel_spans, sel_positive):
    """Algorithm 2 (CreateMask): prune a selected negative span, and every span crossing a selected
    positive span (neither contains the other)."""
    keep = np.ones((n + 1, n + 1), dtype=np.bool_)
    for t in range(sel_spans.shape[0]):
        a = sel_spans[t, 0]
        b = sel_spans[t, 1]
        if not sel_positive[t]:
            keep[a, b] = False
            continue
        # spans (i, k) crossing (a, b): i < a < k < b  or  a < i < b < k
        for i in range(0, a):
            for k in range(a + 1, b):
                keep[i, k] = False
        for i in range(a + 1, b):
            for k in range(b + 1, n + 1):
                keep[i, k] = False
    return keep


def create_mask(n: int, spans, positive) -> np.ndarray:
    """CreateMask(s, a) of Algorithm 2 for the selected spans ``spans`` with assignments ``positive``.

    Parameters
    ----------
    n : int
        Sentence length.
    spans : int array (s, 2)
        Selected spans ``(i, k)``.
    positive : bool array (s,)
        ``True`` = the span is required to be a constituent (+), ``False`` = forbidden (-).
    """
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    positive = np.asarray(positive, dtype=np.bool_).reshape(-1)
    if positive.shape[0] != spans.shape[0]:
        raise ValueError(f"positive must have one entry per span ({spans.shape[0]}), got {positive.shape[0]}")
    if spans.size and (spans[:, 0].min() < 0 or spans[:, 1].max() > n or np.any(spans[:, 1] <= spans[:, 0])):
        raise ValueError(f"spans must satisfy 0 <= i < k <= n = {n}")
    return create_mask_kernel(int(n), spans, positive)


def _always_kept(keep: np.ndarray) -> np.ndarray:
    n = keep.shape[0] - 1
    idx = np.arange(n)
    keep[idx, idx + 1] = True
    keep[0, n] = True
    return keep


def threshold_mask(span_scores, threshold: float, backbone=None) -> np.ndarray:
    """Fixed coarse-to-fine style mask: keep spans whose score (a posterior) is >= ``threshold``.

    One-word spans, the whole sentence and the spans of ``backbone`` (optional boolean
    ``(n+1, n+1)``, e.g. the constituents of the coarse Viterbi tree, so the mask keeps a tree)
    are always kept.
    """
    scores = as_float_array(span_scores, "span_scores", ndim=2)
    if scores.shape[0] != scores.shape[1] or scores.shape[0] < 2:
        raise ValueError(f"span_scores must be square (n+1, n+1), got {scores.shape}")
    threshold = check_float(threshold, "threshold", low=0.0)
    keep = scores >= threshold
    if backbone is not None:
        backbone = np.asarray(backbone, dtype=bool)
        if backbone.shape != keep.shape:
            raise ValueError(f"backbone must have shape {keep.shape}, got {backbone.shape}")
        keep |= backbone
    return _always_kept(keep)


def coarse_span_posteriors(grammar: Grammar, words, coarse: Grammar | None = None) -> np.ndarray:
    """Span posteriors under a cheaper model (default: :func:`default_coarse` projection of ``grammar``)."""
    coarse = default_coarse(grammar) if coarse is None else coarse
    return expected_counts(coarse, words).span_posteriors


def default_coarse(grammar: Grammar) -> Grammar:
    """The cheap model for M' and fixed masks: ``grammar.project(grammar.coarse_mapping)`` when the grammar
    records one (:meth:`Grammar.random_split`), else the projection onto ``max(1, N // 2)`` symbols
    (fine symbol A -> A mod k)."""
    if grammar.coarse_mapping is not None:
        return grammar.project(grammar.coarse_mapping)
    k = max(1, grammar.n_nonterminals // 2)
    return grammar.project(np.arange(grammar.n_nonterminals) % k)


def figure_of_merit_scores(grammar: Grammar, words, coarse: Grammar | None = None) -> np.ndarray:
    """Tic-tac-toe style figure of merit: inside estimate x outside estimate from a simple model.

    The inside estimate of span (i, k) is the coarse grammar's inside score summed over labels; the
    outside estimate is the product over the words outside the span of their best coarse lexical
    weight.  Scores are normalised by the best span of the same length (so they lie in (0, 1]).
    """
    coarse = default_coarse(grammar) if coarse is None else coarse
    ins = inside_chart(coarse, words)
    n = len(ins.words)
    with np.errstate(divide="ignore"):
        log_in = np.logaddexp.reduce(ins.chart, axis=2)
        word_best = np.max(coarse.lexical_log_weights[:, ins.words], axis=0)
    prefix = np.concatenate([[0.0], np.cumsum(word_best)])
    total = prefix[-1]
    fom = np.full((n + 1, n + 1), -np.inf)
    for length in range(1, n + 1):
        i = np.arange(n - length + 1)
        k = i + length
        vals = log_in[i, k] + total - (prefix[k] - prefix[i])
        finite = np.isfinite(vals)
        if finite.any():
            fom[i, k] = vals - vals[finite].max()
    with np.errstate(over="ignore"):
        return np.exp(fom)


def figure_of_merit_mask(grammar: Grammar, words, threshold: float, coarse: Grammar | None = None,
                         backbone=None) -> np.ndarray:
    """Keep spans whose :func:`figure_of_merit_scores` is >= ``threshold`` (plus the always-kept spans)."""
    return threshold_mask(figure_of_merit_scores(grammar, words, coarse), threshold, backbone)


def viterbi_backbone(grammar: Grammar, words) -> np.ndarray:
    """Constituent indicator ``(n+1, n+1)`` of the Viterbi tree of ``grammar`` (e.g. a coarse grammar)."""
    ids = grammar.encode(words)
    return tree_spans(viterbi(grammar, ids)[1], len(ids))


def kept_fraction(mask) -> float:
    """Fraction of the ``n(n+1)/2`` spans a mask keeps."""
    keep = np.asarray(mask, dtype=bool)
    iu = np.triu_indices(keep.shape[0], k=1)
    return float(keep[iu].mean())


__all__ = ["viterbi_backbone", "ambiguous_spans", "coarse_span_posteriors", "create_mask", "default_coarse", "figure_of_merit_mask",
           "figure_of_merit_scores", "full_mask", "kept_fraction", "threshold_mask"]

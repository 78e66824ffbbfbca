"""The exact chart of a CNF grammar (:class:`~samplers.models.pcfg.Grammar`): inside, outside,
posteriors, Viterbi, exact tree sampling, and the sentence's log weight / log probability.

Every function takes an optional span mask ``mask`` (boolean ``(n+1, n+1)``, ``mask[i, k]`` = keep
span ``(i, k)``; Algorithm 3 of Bouchard-Cote, Petrov & Klein 2009).  ``mask=None`` (all keep) is the
exact algorithm; a mask restricts the sum to trees all of whose constituents are kept, so masked
results equal enumeration restricted to the allowed trees (the randomized-pruning family,
:mod:`samplers.pruning`, builds on these masks).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ..rng import kernel_seed
from ..validation import check_int
from ._chart_kernels import (
    GrammarArrays,
    inside_kernel,
    outside_kernel,
    sample_trees_kernel,
    span_posteriors_kernel,
    viterbi_kernel,
)
from .pcfg import NORMALISATION_TOL, Grammar


class InsideChart(NamedTuple):
    """Result of the (pruned) inside pass.

    Attributes
    ----------
    log_z : float
        Log total weight of the allowed trees (``-inf`` if none).
    chart : ndarray, shape (n+1, n+1, N)
        ``chart[i, k, A]`` = log inside score of ``A`` over words ``i..k-1``.
    alive : ndarray of bool, shape (n+1, n+1)
        Spans with at least one finite entry.
    words : ndarray of int64, shape (n,)
    mask : ndarray of bool, shape (n+1, n+1)
    """

    log_z: float
    chart: np.ndarray
    alive: np.ndarray
    words: np.ndarray
    mask: np.ndarray


class Expectations(NamedTuple):
    """Posterior expectations of a sentence (exact, masked, or averaged over masks).

    Attributes
    ----------
    log_z : float
        Log partition (sum over allowed trees); NaN for averages over masks.
    span_posteriors : ndarray, shape (n+1, n+1)
        ``[i, k]`` = P(span (i, k) is a constituent); zero below the diagonal.
    binary_counts : ndarray, shape (R,)
        Expected number of uses of each binary rule (``grammar.binary_rules`` order).
    lexical_counts : ndarray, shape (N, V)
        Expected number of uses of each lexical rule ``A -> terminal``.
    """

    log_z: float
    span_posteriors: np.ndarray
    binary_counts: np.ndarray
    lexical_counts: np.ndarray

    def vector(self) -> np.ndarray:
        """Span posteriors (upper triangle, span length >= 2) and binary counts, concatenated."""
        n1 = self.span_posteriors.shape[0]
        iu = np.triu_indices(n1, k=2)
        return np.concatenate([self.span_posteriors[iu], self.binary_counts])


def full_mask(n: int) -> np.ndarray:
    """The all-keep mask for a sentence of length ``n`` (the exact algorithm)."""
    return np.ones((n + 1, n + 1), dtype=np.bool_)


def _arrays(grammar: Grammar) -> GrammarArrays:
    """The grammar's arrays bundled for the chart kernels."""
    return GrammarArrays(grammar.lexical_log_weights, grammar.binary_rules, grammar.binary_log_weights,
                         grammar.rule_offsets)


def _as_mask(mask, n: int) -> np.ndarray:
    if mask is None:
        return full_mask(n)
    arr = np.asarray(mask)
    if arr.shape != (n + 1, n + 1):
        raise ValueError(f"mask must have shape {(n + 1, n + 1)} for a sentence of {n} words, got {arr.shape}")
    if arr.dtype != np.bool_:
        raise TypeError(f"mask must be a boolean array, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr)


def inside_chart(grammar: Grammar, words: str | Sequence[str] | np.ndarray, mask=None) -> InsideChart:
    """Pruned inside pass (Algorithm 3); ``mask=None`` gives the exact inside algorithm.

    Parameters
    ----------
    grammar : Grammar
        A CNF grammar (weighted or a PCFG).
    words : str, sequence of str, or int array of terminal ids
        The sentence, ``n`` words (a string is split on whitespace).
    mask : bool ndarray (n+1, n+1), optional
        Span mask over fenceposts (Algorithm 3 of Bouchard-Cote et al. 2009); ``None`` keeps every
        span (exact).
    """
    if not isinstance(grammar, Grammar):
        raise TypeError(f"grammar must be a Grammar, got {type(grammar).__name__}")
    ids = grammar.encode(words)
    keep = _as_mask(mask, len(ids))
    chart, alive = inside_kernel(ids, _arrays(grammar), keep)
    return InsideChart(float(chart[0, len(ids), grammar.start]), chart, alive, ids, keep)


def log_inside(grammar: Grammar, words: str | Sequence[str] | np.ndarray, mask=None) -> float:
    """Log total weight of all (kept) trees with yield ``words``: the inside score of the start symbol.

    For a weighted (unnormalised) grammar this is a log *weight*, not a log probability; it is
    ``-inf`` when the words are known but no tree yields them.

    Parameters
    ----------
    grammar : Grammar
        A CNF grammar (weighted or a PCFG).
    words : str, sequence of str, or int array of terminal ids
        The sentence, ``n`` words (a string is split on whitespace).
    mask : bool ndarray (n+1, n+1), optional
        Span mask (Algorithm 3 of Bouchard-Cote et al. 2009); ``None`` keeps every span (exact).

    Returns
    -------
    float
    """
    return inside_chart(grammar, words, mask).log_z


def log_probability(grammar: Grammar, words: str | Sequence[str] | np.ndarray) -> float:
    """Exact log probability of the sentence ``words`` under the PCFG ``grammar`` (exact inside).

    Parameters
    ----------
    grammar : Grammar
        Must be a PCFG: every nonterminal's rule weights sum to one (within
        :data:`~samplers.models.pcfg.NORMALISATION_TOL`).
    words : str, sequence of str, or int array of terminal ids
        The sentence (a string is split on whitespace).

    Returns
    -------
    float
        ``log P(words)``; ``-inf`` when no tree yields the words.

    Raises
    ------
    ValueError
        If ``grammar`` is a weighted grammar (the unnormalised nonterminals are named): use
        :func:`log_inside` for its log total weight.
    """
    if not isinstance(grammar, Grammar):
        raise TypeError(f"grammar must be a Grammar, got {type(grammar).__name__}")
    bad = grammar.unnormalised_nonterminals()
    if bad:
        shown = ", ".join(repr(a) for a in bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
        raise ValueError(f"grammar is not a PCFG: the rule weights of {shown} do not sum to one (within "
                         f"{NORMALISATION_TOL:g}), so the sentence's inside score is a weight, not a probability; "
                         "use log_inside(grammar, words) for the log total weight")
    return log_inside(grammar, words)


def _require_parse(ins: InsideChart) -> None:
    if ins.log_z == -np.inf:
        raise ValueError("the sentence has no parse under this grammar and mask (every tree is pruned "
                         "or has zero weight)")


def expectations_from_inside(grammar: Grammar, ins: InsideChart) -> Expectations:
    """Outside pass on top of an inside chart: span posteriors and expected rule counts."""
    _require_parse(ins)
    outside, counts, lexc = outside_kernel(ins.words, _arrays(grammar), ins.mask, ins.chart, ins.alive, grammar.start)
    post = span_posteriors_kernel(ins.chart, outside, ins.log_z)
    return Expectations(ins.log_z, post, counts, lexc)


def expected_counts(grammar: Grammar, words: str | Sequence[str] | np.ndarray, mask=None) -> Expectations:
    """Span posteriors and expected rule counts by (pruned) inside-outside.

    With ``mask=None`` these are the exact expectations E[f]; with a mask they are E_m[f], the
    expectations under the distribution restricted to trees the mask keeps (Sec. 2.2).

    Raises
    ------
    ValueError
        Empty sentence, an unknown word (named), a mask of the wrong shape, or no allowed tree.

    Examples
    --------
    >>> g = Grammar.random(3, 4, seed=0)
    >>> e = expected_counts(g, ["w0", "w1", "w2"])
    >>> float(e.span_posteriors[0, 3])
    1.0
    """
    return expectations_from_inside(grammar, inside_chart(grammar, words, mask))


def sample_trees(grammar: Grammar, words, n_samples: int = 1, *, mask=None, seed=None,
                 inside: InsideChart | None = None) -> np.ndarray:
    """Exact draws from the (masked) tree posterior by top-down sampling from the inside chart.

    Returns
    -------
    ndarray of int64, shape (n_samples, 2n-1, 4)
        Each tree as rows ``(i, k, label, rule)`` in pre-order; ``rule`` is the binary-rule index or
        -1 for a preterminal.
    """
    n_samples = check_int(n_samples, "n_samples", low=1)
    ins = inside if inside is not None else inside_chart(grammar, words, mask)
    _require_parse(ins)
    return sample_trees_kernel(ins.chart, ins.alive, ins.mask, _arrays(grammar), grammar.start, n_samples,
                               kernel_seed(seed))


def viterbi(grammar: Grammar, words, mask=None) -> tuple[float, np.ndarray]:
    """Best tree under the (masked) grammar: ``(log weight, nodes (2n-1, 4))`` as in :func:`sample_trees`."""
    ids = grammar.encode(words)
    keep = _as_mask(mask, len(ids))
    score, nodes = viterbi_kernel(ids, _arrays(grammar), keep, grammar.start)
    if score == -np.inf:
        raise ValueError("the sentence has no parse under this grammar and mask")
    return float(score), nodes


def tree_spans(nodes: np.ndarray, n: int) -> np.ndarray:
    """Boolean ``(n+1, n+1)`` indicator of the constituents of a tree given as node rows."""
    spans = np.zeros((n + 1, n + 1), dtype=np.bool_)
    spans[nodes[:, 0], nodes[:, 1]] = True
    return spans

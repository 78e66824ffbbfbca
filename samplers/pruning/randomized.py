"""Randomized pruning (Algorithm 1, AuxVar) of Bouchard-Cote, Petrov & Klein (2009).

Two Markov chains drive a sequence of masks:

* the **selection chain** k* (Sec. 3.2) over subsets s of a high-confidence set M' of auxiliary
  variables: from s, pick a random half R of s and move to ``s' = (M' \\ s) | R``; started with
  ``|s| = 2|M'|/3`` it never repeats a selection and ignores the assignments;
* the **assignment chain** k_s (Sec. 3.1, block Gibbs): given the selected assignments C, draw a
  tree T ~ P(T | C) from the pruned chart and reset every unselected auxiliary variable to
  ``1[span in T]``.

The mask of each iteration is ``CreateMask(s, a)`` (Algorithm 2).  With accelerated averaging
(Sec. 3.3) the estimator adds the soft counts ``E_m[f]`` of the pruned inside-outside pass, and
returns ``(1/N) sum_i E_{m(i)}[f]``, which converges to the exact E[f].

The driver :func:`run_auxvar_chain` is model-agnostic; :class:`PCFGPruningModel` (spans of a
monolingual sentence) and :class:`samplers.pruning.itg.ITGPruningModel` (word alignments of a
sentence pair) plug into it.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple, Protocol

import numpy as np

from ..models.chart import Expectations, expectations_from_inside, inside_chart, sample_trees, tree_spans
from ..models.pcfg import Grammar
from ..rng import as_generator
from ..validation import check_float, check_int
from .masks import ambiguous_spans, coarse_span_posteriors, create_mask, kept_fraction, threshold_mask


class ChainState(NamedTuple):
    """State of the randomized-pruning chain: selection s and assignments a over the aux variables."""

    selection: np.ndarray  # bool (m,)
    assignment: np.ndarray  # bool (m,)


class PruningModel(Protocol):
    """What :func:`run_auxvar_chain` needs from a chart DP with auxiliary variables."""

    n_aux: int

    def initial_assignment(self, rng: np.random.Generator) -> np.ndarray:
        """A valid assignment (the indicator vector of some tree of positive weight)."""

    def mask(self, selected: np.ndarray, positive: np.ndarray) -> Any:
        """CreateMask for the selected aux indices and their assignments."""

    def expectations(self, mask: Any) -> tuple[tuple, Any, float]:
        """(tuple of arrays E_m[f], sampler state, kept fraction) of one pruned inside-outside pass."""

    def resample(self, sampler_state: Any, seed: int) -> np.ndarray:
        """Indicator vector (n_aux,) of a tree drawn from the pruned chart."""


def selection_init(rng: np.random.Generator, candidates: np.ndarray) -> np.ndarray:
    """A uniformly random subset of ``candidates`` of size round(2|M'|/3) (Sec. 3.2)."""
    size = int(round(2 * len(candidates) / 3))
    return np.sort(rng.choice(candidates, size=size, replace=False)) if size else candidates[:0]


def selection_step(rng: np.random.Generator, selected: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """One move of k*: ``s' = (M' \\ s) | R`` with R a random subset of s of size |s|/2 (Sec. 3.2)."""
    rest = np.setdiff1d(candidates, selected, assume_unique=True)
    half = rng.choice(selected, size=len(selected) // 2, replace=False) if len(selected) else selected
    return np.union1d(rest, half)


class ChainResult(NamedTuple):
    """Averaged soft counts and the per-iteration trace of :func:`run_auxvar_chain`."""

    averages: tuple
    trace: dict[str, Any]  # per-iteration arrays, and "soft_counts" (a list of tuples) when recorded
    final_state: ChainState


def run_auxvar_chain(model: PruningModel, candidates: np.ndarray, n_masks: int, *, burn_in: int = 0,
                     seed=None, record: bool = False, progress: bool | None = None) -> ChainResult:
    """Algorithm 1 (AuxVar) with accelerated averaging over ``n_masks`` masks after ``burn_in`` ones.

    ``record=True`` additionally stores every iteration's soft counts (trace key ``"soft_counts"``,
    a list of tuples) so running averages can be inspected.  ``progress`` shows a tqdm bar
    (default: only when stderr is a terminal).
    """
    import sys

    from tqdm.auto import tqdm

    rng = as_generator(seed)
    candidates = np.asarray(candidates, dtype=np.int64)
    assignment = model.initial_assignment(rng)
    selected = selection_init(rng, candidates)
    sums: list[np.ndarray] | None = None
    total = n_masks + burn_in
    trace: dict[str, Any] = {"kept_fraction": np.empty(total), "n_selected": np.empty(total, dtype=np.int64),
             "n_positive": np.empty(total, dtype=np.int64), "seconds": np.empty(total)}
    soft = []
    disable = (not sys.stderr.isatty()) if progress is None else not progress
    for it in tqdm(range(total), desc="masks", disable=disable, leave=False):
        start = time.perf_counter()
        selected = selection_step(rng, selected, candidates)  # s ~ k*(s, .)
        mask = model.mask(selected, assignment[selected])  # m = CreateMask(s, a)
        stats, sampler_state, frac = model.expectations(mask)  # pruned inside + outside: E_m[f]
        if it >= burn_in:
            sums = [s.copy() for s in stats] if sums is None else [a + b for a, b in zip(sums, stats)]
            if record:
                soft.append(stats)
        tree = model.resample(sampler_state, int(rng.integers(0, 2**31 - 1)))  # T ~ P(T | C)
        free = np.ones(model.n_aux, dtype=bool)
        free[selected] = False
        assignment = np.where(free, tree, assignment)  # a ~ k_s(a, .)
        trace["seconds"][it] = time.perf_counter() - start
        trace["kept_fraction"][it] = frac
        trace["n_selected"][it] = len(selected)
        trace["n_positive"][it] = int(assignment[selected].sum())
    if record:
        trace["soft_counts"] = soft
    assert sums is not None  # n_masks >= 1 (checked by randomized_pruning / itg_randomized_pruning)
    averages = tuple(s / n_masks for s in sums)
    sel_mask = np.zeros(model.n_aux, dtype=bool)
    sel_mask[selected] = True
    return ChainResult(averages, trace, ChainState(sel_mask, assignment))


class PCFGPruningModel:
    """Auxiliary variables over the ambiguous spans of one sentence under a CNF grammar."""

    def __init__(self, grammar: Grammar, words, *, init_scores: np.ndarray | None = None):
        self.grammar = grammar
        self.words = grammar.encode(words)
        self.n = len(self.words)
        self.spans = ambiguous_spans(self.n)
        self.n_aux = len(self.spans)
        self._init_scores = init_scores

    def _indicator(self, nodes: np.ndarray) -> np.ndarray:
        spans = tree_spans(nodes, self.n)
        return spans[self.spans[:, 0], self.spans[:, 1]]

    def initial_assignment(self, rng: np.random.Generator) -> np.ndarray:
        """Constituents of a tree drawn under a loose coarse mask (or exactly if that mask has no tree)."""
        mask = None
        if self._init_scores is not None:
            mask = threshold_mask(self._init_scores, 1e-4)
        ins = inside_chart(self.grammar, self.words, mask)
        if ins.log_z == -np.inf:
            ins = inside_chart(self.grammar, self.words)
        return self._indicator(sample_trees(self.grammar, self.words, 1, inside=ins, seed=rng)[0])

    def mask(self, selected: np.ndarray, positive: np.ndarray) -> np.ndarray:
        """Span mask of the spans ``selected`` (kept where ``positive``), shape (n + 1, n + 1)."""
        return create_mask(self.n, self.spans[selected], positive)

    def expectations(self, mask: np.ndarray):
        """Expectations under ``mask``: (span posteriors, rule counts, lexical counts), inside chart, kept fraction."""
        ins = inside_chart(self.grammar, self.words, mask)
        e = expectations_from_inside(self.grammar, ins)
        return (e.span_posteriors, e.binary_counts, e.lexical_counts), ins, kept_fraction(mask)

    def resample(self, ins, seed: int) -> np.ndarray:
        """One tree drawn from the masked inside chart ``ins``, as a span indicator vector."""
        return self._indicator(sample_trees(self.grammar, self.words, 1, inside=ins, seed=seed)[0])


def high_confidence_set(spans: np.ndarray, scores: np.ndarray, confidence: float, max_size: int,
                        compatible: bool = True) -> np.ndarray:
    """Indices of M': greedily, by decreasing score >= ``confidence``, spans crossing none already taken.

    Mutually compatible spans can all be constituents of one tree, so positive assignments of
    many of them can hold at once, which is what makes the masks aggressive (Sec. 3.2).
    """
    chosen: list[int] = []
    for idx in np.argsort(-scores, kind="stable"):
        if len(chosen) >= max_size or scores[idx] < confidence:
            break
        i, k = spans[idx]
        if not compatible or all(not (a < i < b < k or i < a < k < b) for a, b in spans[chosen]):
            chosen.append(int(idx))
    return np.sort(np.array(chosen, dtype=np.int64))


class RandomizedPruningResult(NamedTuple):
    """Output of :func:`randomized_pruning`.

    Attributes
    ----------
    expectations : Expectations
        Averaged span posteriors and expected rule counts (``log_z`` is NaN).
    trace : dict of ndarray
        Per iteration (burn-in included): ``kept_fraction`` of spans, ``n_selected``, ``n_positive``
        selected spans, ``seconds``; with ``record=True`` also ``soft_counts``.
    high_confidence : ndarray (m', 2)
        The spans M' the selection chain draws from.
    """

    expectations: Expectations
    trace: dict
    high_confidence: np.ndarray


def randomized_pruning(grammar: Grammar, words, n_masks: int, *, seed=None, burn_in: int = 0,
                       coarse: Grammar | None = None, span_scores=None, confidence: float = 0.05,
                       max_candidates: int | None = None, compatible: bool = True,
                       record: bool = False, progress: bool | None = None) -> RandomizedPruningResult:
    """Expected span and rule counts by randomized pruning (Algorithm 1, accelerated averaging).

    Parameters
    ----------
    grammar : Grammar
        The (CNF) PCFG.
    words : str or sequence of str
        The sentence (a string is split on whitespace).
    n_masks : int
        Number of masks averaged (N in Sec. 3.3), after ``burn_in`` discarded iterations.
    seed : int, Generator or None
        Seed of the chain over masks.
    burn_in : int
        Iterations drawn and discarded before averaging.
    coarse : Grammar, optional
        Cheaper model whose span posteriors define the high-confidence set M'
        (default: :func:`~samplers.pruning.masks.default_coarse`).
    span_scores : array (n+1, n+1), optional
        Use these scores instead of the coarse posterior.
    confidence : float in [0, 1]
        Only ambiguous spans with score >= ``confidence`` enter M'.
    max_candidates : int, optional
        M' keeps at most this many of them (default ``n - 2``, the number of ambiguous
        constituents of one binary tree), chosen greedily by score among mutually non-crossing
        spans (see :func:`high_confidence_set`).
    compatible : bool
        Require the spans of M' to be mutually non-crossing (default).  ``False`` takes the top
        scores as they come; with ``confidence=0`` and ``max_candidates`` >= the number of
        ambiguous spans, M' = M and the masks are as aggressive as possible (about 2/3 of the
        current tree's constituents are selected positives each iteration).
    record : bool
        Keep every iteration's soft counts in the trace.
    progress : bool, optional
        Show a progress bar (default: only when stderr is a terminal).

    Returns
    -------
    RandomizedPruningResult
        ``.expectations`` has the form returned by :func:`~samplers.pruning.expected_counts`.

    Examples
    --------
    >>> g = Grammar.random(4, 5, seed=0)
    >>> res = randomized_pruning(g, "w0 w1 w2 w3 w4 w0", n_masks=20, seed=1)
    >>> res.expectations.span_posteriors.shape
    (7, 7)
    """
    if not isinstance(grammar, Grammar):
        raise TypeError(f"grammar must be a Grammar, got {type(grammar).__name__}")
    n_masks = check_int(n_masks, "n_masks", low=1)
    burn_in = check_int(burn_in, "burn_in", low=0)
    confidence = check_float(confidence, "confidence", low=0.0, high=1.0)
    ids = grammar.encode(words)
    n = len(ids)
    if span_scores is None:
        scores = coarse_span_posteriors(grammar, ids, coarse)
    else:
        scores = np.asarray(span_scores, dtype=float)
        if scores.shape != (n + 1, n + 1):
            raise ValueError(f"span_scores must have shape {(n + 1, n + 1)}, got {scores.shape}")
    model = PCFGPruningModel(grammar, ids, init_scores=scores)
    max_candidates = max(n - 2, 0) if max_candidates is None else check_int(max_candidates, "max_candidates", low=0)
    cand_scores = scores[model.spans[:, 0], model.spans[:, 1]]
    candidates = high_confidence_set(model.spans, cand_scores, confidence, max_candidates, compatible)
    chain = run_auxvar_chain(model, candidates, n_masks, burn_in=burn_in, seed=seed, record=record,
                             progress=progress)
    post, counts, lexc = chain.averages
    return RandomizedPruningResult(Expectations(float("nan"), post, counts, lexc), chain.trace,
                                   model.spans[candidates])

"""Inversion transduction grammars: exact and masked bitext inside-outside, alignment posteriors,
tic-tac-toe masks and randomized pruning over word-alignment auxiliary variables.

This is the high-degree case of Bouchard-Cote, Petrov & Klein (2009), Sec. 4: the bitext dynamic
program costs O(p^3 q^3) for sentence lengths p and q, and the auxiliary variables are the p*q
binary variables A_ij = "e_i is aligned to f_j" (emitted by the same lexical pair rule).  A selected
positive A_ij prunes every bispan containing exactly one of e_i, f_j; a selected negative prunes the
pair rule (i, j).  Tic-tac-toe pruning (Zhang & Gildea) is the fixed-mask baseline, with IBM model 1
style inside/outside estimates from the grammar's own pair weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ..rng import as_generator, kernel_seed
from ..validation import as_float_array, check_float, check_int
from ._itg_kernels import (
    ITGArrays,
    MaskedPair,
    itg_alignment_mask_kernel,
    itg_inside_kernel,
    itg_outside_kernel,
    itg_sample_alignments_kernel,
)
from .randomized import run_auxvar_chain


@dataclass(frozen=True)
class ITG:
    """A weighted ITG in normal form with log weights.

    Parameters
    ----------
    straight, inverted : ndarray (N, N, N)
        ``log w(A -> [B C])`` and ``log w(A -> <B C>)`` (``-inf`` = no rule).
    pair : ndarray (N, Ve, Vf)
        ``log w(A -> e/f)``.
    null_e : ndarray (N, Ve)
        ``log w(A -> e/epsilon)``.
    null_f : ndarray (N, Vf)
        ``log w(A -> epsilon/f)``.
    start : int
        Start symbol.
    """

    straight: np.ndarray
    inverted: np.ndarray
    pair: np.ndarray
    null_e: np.ndarray
    null_f: np.ndarray
    start: int = 0

    def __post_init__(self) -> None:
        arrays = {}
        for name in ("straight", "inverted", "pair", "null_e", "null_f"):
            arr = np.ascontiguousarray(as_float_array(getattr(self, name), name, finite=False))
            if np.any(np.isnan(arr)) or np.any(arr == np.inf):
                raise ValueError(f"{name} must hold finite log weights or -inf (no rule)")
            arrays[name] = arr
            object.__setattr__(self, name, arr)
        n = arrays["straight"].shape[0]
        if arrays["straight"].shape != (n, n, n) or arrays["inverted"].shape != (n, n, n):
            raise ValueError(f"straight and inverted must both have shape (N, N, N), got "
                             f"{arrays['straight'].shape} and {arrays['inverted'].shape}")
        ve, vf = arrays["pair"].shape[1:] if arrays["pair"].ndim == 3 else (-1, -1)
        if arrays["pair"].shape != (n, ve, vf) or arrays["null_e"].shape != (n, ve) or arrays["null_f"].shape != (n, vf):
            raise ValueError("pair must be (N, Ve, Vf), null_e (N, Ve) and null_f (N, Vf)")
        check_int(self.start, "start", low=0, high=n - 1)

    @property
    def n_nonterminals(self) -> int:
        """Number of nonterminals N."""
        return int(self.straight.shape[0])

    @classmethod
    def random(cls, n_nonterminals: int, n_e: int, n_f: int, *, null_weight: float = 0.05,
               inverted_share: float = 0.3, concentration: float = 0.2, seed=None) -> "ITG":
        """A seeded random stochastic ITG (each parent's rule probabilities sum to one).

        ``n_e``/``n_f`` are the vocabulary sizes; pair weights are peaked (a Dirichlet with the
        given ``concentration``) so words have preferred translations; ``null_weight`` is the
        probability mass of null alignments and ``inverted_share`` that of inverted rules.
        """
        n = check_int(n_nonterminals, "n_nonterminals", low=1)
        ve = check_int(n_e, "n_e", low=1)
        vf = check_int(n_f, "n_f", low=1)
        null_weight = check_float(null_weight, "null_weight", low=0.0, high=1.0, low_open=True, high_open=True)
        inv = check_float(inverted_share, "inverted_share", low=0.0, high=1.0, high_open=True)
        alpha = check_float(concentration, "concentration", low=0.0, low_open=True)
        rng = as_generator(seed)
        binary_share, lex_share = 0.5, 0.5
        straight = np.log(binary_share * (1 - inv) * rng.dirichlet(np.ones(n * n), size=n)).reshape(n, n, n)
        inverted = np.log(binary_share * max(inv, 1e-300) * rng.dirichlet(np.ones(n * n), size=n)).reshape(n, n, n)
        pair = np.log(np.maximum(rng.dirichlet(np.full(ve * vf, alpha), size=n), 1e-300)
                      * lex_share * (1 - null_weight)).reshape(n, ve, vf)
        null_e = np.log(rng.dirichlet(np.ones(ve), size=n) * lex_share * null_weight / 2)
        null_f = np.log(rng.dirichlet(np.ones(vf), size=n) * lex_share * null_weight / 2)
        return cls(straight, inverted, pair, null_e, null_f, 0)

    def encode(self, e, f) -> tuple[np.ndarray, np.ndarray]:
        """Validate a sentence pair of word ids (sequences of ints)."""
        out = []
        for name, words, vocab in (("e", e, self.pair.shape[1]), ("f", f, self.pair.shape[2])):
            arr = np.asarray(words)
            if arr.ndim != 1 or arr.size == 0:
                raise ValueError(f"{name} must be a non-empty 1-D sequence of word ids")
            if not np.issubdtype(arr.dtype, np.integer):
                raise TypeError(f"{name} must hold integer word ids, got dtype {arr.dtype}")
            if arr.min() < 0 or arr.max() >= vocab:
                bad = int(arr[(arr < 0) | (arr >= vocab)][0])
                raise ValueError(f"{name} holds word id {bad}, outside the grammar's vocabulary [0, {vocab})")
            out.append(np.ascontiguousarray(arr, dtype=np.int64))
        return out[0], out[1]


class ITGExpectations(NamedTuple):
    """Posterior expectations of a sentence pair under an ITG (exact, masked or averaged).

    Attributes
    ----------
    log_z : float
    alignment : ndarray (p, q)
        P(e_i and f_j are emitted by one pair rule).
    null_e, null_f : ndarray (p,), (q,)
        P(word is null-aligned).
    straight_counts, inverted_counts : ndarray (N, N, N)
        Expected uses of each binary rule.
    """

    log_z: float
    alignment: np.ndarray
    null_e: np.ndarray
    null_f: np.ndarray
    straight_counts: np.ndarray
    inverted_counts: np.ndarray

    def vector(self) -> np.ndarray:
        """Alignment posteriors, null posteriors and binary-rule counts, concatenated."""
        return np.concatenate([self.alignment.ravel(), self.null_e, self.null_f, self.straight_counts.ravel(),
                               self.inverted_counts.ravel()])


class ITGChart(NamedTuple):
    """An ITG inside chart with the mask it was computed under."""

    log_z: float
    chart: np.ndarray
    alive: np.ndarray
    e: np.ndarray
    f: np.ndarray
    keep: np.ndarray
    pair_keep: np.ndarray


def _arrays(itg: ITG) -> ITGArrays:
    """The ITG's log weights bundled for the kernels."""
    return ITGArrays(itg.straight, itg.inverted, itg.pair, itg.null_e, itg.null_f)


def _masked_pair(ins: ITGChart) -> MaskedPair:
    """The sentence pair and masks an inside chart was computed under, bundled for the kernels."""
    return MaskedPair(ins.e, ins.f, ins.keep, ins.pair_keep)


def _masks(keep, pair_keep, p: int, q: int):
    keep = np.ones((p + 1, p + 1, q + 1, q + 1), dtype=np.bool_) if keep is None else np.asarray(keep)
    pair_keep = np.ones((p, q), dtype=np.bool_) if pair_keep is None else np.asarray(pair_keep)
    if keep.shape != (p + 1, p + 1, q + 1, q + 1) or keep.dtype != np.bool_:
        raise ValueError(f"keep must be a boolean array of shape {(p + 1, p + 1, q + 1, q + 1)}")
    if pair_keep.shape != (p, q) or pair_keep.dtype != np.bool_:
        raise ValueError(f"pair_keep must be a boolean array of shape {(p, q)}")
    return np.ascontiguousarray(keep), np.ascontiguousarray(pair_keep)


def itg_inside(itg: ITG, e, f, keep=None, pair_keep=None) -> ITGChart:
    """(Pruned) bitext inside pass, O(p^3 q^3 N^3) unpruned; ``keep``/``pair_keep`` None = exact."""
    e, f = itg.encode(e, f)
    keep, pair_keep = _masks(keep, pair_keep, len(e), len(f))
    chart, alive = itg_inside_kernel(_arrays(itg), MaskedPair(e, f, keep, pair_keep))
    return ITGChart(float(chart[0, len(e), 0, len(f), itg.start]), chart, alive, e, f, keep, pair_keep)


def itg_expectations_from_inside(itg: ITG, ins: ITGChart) -> ITGExpectations:
    """Outside pass on top of :func:`itg_inside`: alignment posteriors and expected rule counts."""
    if ins.log_z == -np.inf:
        raise ValueError("the sentence pair has no derivation under this ITG and mask")
    align, ne, nf, cs, ci = itg_outside_kernel(_arrays(itg), _masked_pair(ins), ins.chart, ins.alive, itg.start)
    return ITGExpectations(ins.log_z, align, ne, nf, cs, ci)


def itg_expectations(itg: ITG, e, f, keep=None, pair_keep=None) -> ITGExpectations:
    """Exact (or masked) alignment posteriors and expected rule counts of a sentence pair."""
    return itg_expectations_from_inside(itg, itg_inside(itg, e, f, keep, pair_keep))


def itg_sample_alignment(itg: ITG, ins: ITGChart, seed=None) -> np.ndarray:
    """Word alignment (p, q) bool of one derivation drawn exactly from the (pruned) inside chart."""
    if ins.log_z == -np.inf:
        raise ValueError("the sentence pair has no derivation under this ITG and mask")
    return itg_sample_alignments_kernel(_arrays(itg), _masked_pair(ins), ins.chart, ins.alive, itg.start,
                                        kernel_seed(seed))


def alignment_mask(p: int, q: int, links, positive) -> tuple[np.ndarray, np.ndarray]:
    """CreateMask over alignment variables: ``links`` (s, 2) selected (i, j), ``positive`` (s,) bool."""
    links = np.asarray(links, dtype=np.int64).reshape(-1, 2)
    positive = np.asarray(positive, dtype=bool).reshape(-1)
    pos, neg = links[positive], links[~positive]
    return itg_alignment_mask_kernel(int(p), int(q), pos[:, 0].copy(), pos[:, 1].copy(), neg[:, 0].copy(),
                                     neg[:, 1].copy())


def _translation_table(itg: ITG) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """IBM-1 style t(e, f), t(e, null), t(null, f) from the grammar's summed lexical weights."""
    return (np.exp(itg.pair).sum(axis=0), np.exp(itg.null_e).sum(axis=0), np.exp(itg.null_f).sum(axis=0))


def link_scores(itg: ITG, e, f) -> np.ndarray:
    """Cheap alignment confidence: product of the two directional IBM-1 posteriors (p, q)."""
    e, f = itg.encode(e, f)
    t, t0e, t0f = _translation_table(itg)
    tab = t[np.ix_(e, f)]
    post_ef = tab / (tab.sum(axis=1, keepdims=True) + t0e[e][:, None])
    post_fe = tab / (tab.sum(axis=0, keepdims=True) + t0f[f][None, :])
    return post_ef * post_fe


def tic_tac_toe_scores(itg: ITG, e, f) -> np.ndarray:
    """Tic-tac-toe figure of merit of every bispan, (p+1, p+1, q+1, q+1), normalised to (0, 1].

    Inside estimate: IBM-1 scores of the words inside the bispan against the other side's words
    inside it (both directions); outside estimate: the same for the words outside it.  Normalised by
    the best bispan with the same side lengths.
    """
    e, f = itg.encode(e, f)
    p, q = len(e), len(f)
    t, t0e, t0f = _translation_table(itg)
    tab = t[np.ix_(e, f)]

    def direction(tab, t0):  # log score of each source word vs target span, inside and outside
        n, m = tab.shape
        cum = np.concatenate([np.zeros((n, 1)), np.cumsum(tab, axis=1)], axis=1)
        span = cum[:, None, :] - cum[:, :, None]  # [i, u, v] = sum_{j in [u, v)} tab[i, j]
        total = cum[:, -1][:, None, None]
        log_in = np.log(t0[:, None, None] + np.maximum(span, 0))
        log_out = np.log(t0[:, None, None] + np.maximum(total - span, 0))
        pin = np.concatenate([np.zeros((1, m + 1, m + 1)), np.cumsum(log_in, axis=0)])
        pout = np.concatenate([np.zeros((1, m + 1, m + 1)), np.cumsum(log_out, axis=0)])
        s_idx, t_idx = np.triu_indices(n + 1)
        res = np.full((n + 1, n + 1, m + 1, m + 1), -np.inf)
        res[s_idx, t_idx] = (pin[t_idx] - pin[s_idx]) + (pout[-1] - pout[t_idx] + pout[s_idx])
        return res

    with np.errstate(divide="ignore", invalid="ignore"):
        fom = direction(tab, t0e[e]) + direction(tab.T, t0f[f]).transpose(2, 3, 0, 1)
        out = np.full_like(fom, -np.inf)
        for le in range(p + 1):
            for lf in range(q + 1):
                s = np.arange(p - le + 1)
                u = np.arange(q - lf + 1)
                block = fom[s[:, None], s[:, None] + le, u[None, :], u[None, :] + lf]
                finite = np.isfinite(block)
                if finite.any():
                    out[s[:, None], s[:, None] + le, u[None, :], u[None, :] + lf] = block - block[finite].max()
        return np.exp(out)


def null_backbone(p: int, q: int) -> np.ndarray:
    """Bispans of the all-null derivation (e-only bispans (s, t, 0, 0), f-only (p, p, u, v), the root):
    keeping them guarantees a mask never prunes every derivation."""
    keep = np.zeros((p + 1, p + 1, q + 1, q + 1), dtype=np.bool_)
    keep[:, :, 0, 0] = np.triu(np.ones((p + 1, p + 1), dtype=bool), 1)
    keep[p, p] = np.triu(np.ones((q + 1, q + 1), dtype=bool), 1)
    keep[0, p, 0, q] = True
    return keep


def tic_tac_toe_mask(itg: ITG, e, f, threshold: float) -> np.ndarray:
    """Fixed tic-tac-toe mask: keep bispans with figure of merit >= ``threshold`` (plus the null backbone)."""
    threshold = check_float(threshold, "threshold", low=0.0)
    e, f = itg.encode(e, f)
    return (tic_tac_toe_scores(itg, e, f) >= threshold) | null_backbone(len(e), len(f))


class ITGPruningModel:
    """Alignment auxiliary variables A_ij (index i*q + j) of one sentence pair, for :func:`run_auxvar_chain`."""

    def __init__(self, itg: ITG, e, f, init_links: np.ndarray | None = None):
        self.itg = itg
        self._init_links = init_links
        self.e, self.f = itg.encode(e, f)
        self.p, self.q = len(self.e), len(self.f)
        self.n_aux = self.p * self.q
        self.links = np.array([(i, j) for i in range(self.p) for j in range(self.q)], dtype=np.int64)
        s_, t_, u_, v_ = np.ix_(np.arange(self.p + 1), np.arange(self.p + 1), np.arange(self.q + 1),
                                np.arange(self.q + 1))
        valid = (s_ <= t_) & (u_ <= v_) & ~((s_ == t_) & (u_ == v_))
        self._valid = valid  # bispans s <= t, u <= v, not both empty

    def initial_assignment(self, rng: np.random.Generator) -> np.ndarray:
        """Alignment of a derivation drawn under the mask making ``init_links`` positive (cheap pruned
        passes): while that mask admits no derivation, the last link (lowest score) is dropped."""
        links = np.asarray(self._init_links if self._init_links is not None else [], dtype=np.int64)
        while True:
            ins = itg_inside(self.itg, self.e, self.f, *self.mask(links, np.ones(len(links), dtype=bool)))
            if ins.log_z > -np.inf or len(links) == 0:
                break
            links = links[:-1]
        return itg_sample_alignment(self.itg, ins, rng).ravel()

    def mask(self, selected: np.ndarray, positive: np.ndarray):
        """Span-pair mask of the links ``selected`` (kept where ``positive``), as ``(keep, pair_keep)``."""
        return alignment_mask(self.p, self.q, self.links[selected], positive)

    def expectations(self, mask):
        """Bitext expectations under ``mask``: (count arrays, inside chart, kept fraction of valid cells)."""
        keep, pair_keep = mask
        ins = itg_inside(self.itg, self.e, self.f, keep, pair_keep)
        ex = itg_expectations_from_inside(self.itg, ins)
        frac = float(keep[self._valid].mean())
        return (ex.alignment, ex.null_e, ex.null_f, ex.straight_counts, ex.inverted_counts), ins, frac

    def resample(self, ins: ITGChart, seed: int) -> np.ndarray:
        """One alignment drawn from the masked inside chart ``ins``, as a flat indicator vector."""
        return itg_sample_alignment(self.itg, ins, seed).ravel()


class ITGPruningResult(NamedTuple):
    """Output of :func:`itg_randomized_pruning`: averaged expectations, trace, high-confidence links M'."""

    expectations: ITGExpectations
    trace: dict
    high_confidence: np.ndarray


def high_confidence_links(scores: np.ndarray, confidence: float) -> np.ndarray:
    """Flat indices (i*q + j) of a one-to-one link set, greedily by decreasing score >= ``confidence``."""
    p, q = scores.shape
    used_e, used_f, chosen = set(), set(), []
    for idx in np.argsort(-scores, axis=None, kind="stable"):
        i, j = divmod(int(idx), q)
        if scores[i, j] < confidence:
            break
        if i not in used_e and j not in used_f:
            used_e.add(i)
            used_f.add(j)
            chosen.append(int(idx))
    return np.sort(np.array(chosen, dtype=np.int64))


def itg_randomized_pruning(itg: ITG, e, f, n_masks: int, *, seed=None, burn_in: int = 0, confidence: float = 0.02,
                           record: bool = False, progress: bool | None = None) -> ITGPruningResult:
    """Randomized pruning (Algorithm 1) over word-alignment auxiliary variables of an ITG.

    M' = :func:`high_confidence_links`: one-to-one links, greedily by :func:`link_scores`
    (intersected IBM-1 posteriors) >= ``confidence``, as a high-precision intersected aligner would
    give (Sec. 4).  The initial assignment is the alignment of a draw under the mask making all of M'
    positive (one cheap pruned pass).

    Parameters
    ----------
    itg : ITG
        The inversion transduction grammar.
    e, f : sequences of int
        Word ids of the two sentences (lengths p and q).
    n_masks : int
        Masks averaged after ``burn_in`` discarded ones.
    seed : int, Generator or None
        Seed of the chain over masks.
    burn_in : int
        Masks drawn and discarded before averaging.
    confidence : float in [0, 1]
        Minimum link score for M'.
    record, progress : bool
        As in :func:`samplers.pruning.randomized_pruning`.

    Returns
    -------
    ITGPruningResult
        ``.expectations`` in the form of :func:`itg_expectations` (``log_z`` NaN), ``.trace``
        (``kept_fraction`` = fraction of valid bispans kept, ``n_selected``, ``n_positive``,
        ``seconds``), ``.high_confidence`` links (m', 2).
    """
    n_masks = check_int(n_masks, "n_masks", low=1)
    burn_in = check_int(burn_in, "burn_in", low=0)
    confidence = check_float(confidence, "confidence", low=0.0, high=1.0)
    e, f = itg.encode(e, f)
    scores = link_scores(itg, e, f)
    candidates = high_confidence_links(scores, confidence)
    by_score = candidates[np.argsort(-scores.ravel()[candidates], kind="stable")]
    model = ITGPruningModel(itg, e, f, init_links=by_score)
    chain = run_auxvar_chain(model, candidates, n_masks, burn_in=burn_in, seed=seed, record=record,
                             progress=progress)
    align, ne, nf, cs, ci = chain.averages
    return ITGPruningResult(ITGExpectations(float("nan"), align, ne, nf, cs, ci), chain.trace,
                            model.links[candidates])


def enumerate_itg(itg: ITG, e, f, keep=None, pair_keep=None) -> list[tuple[frozenset, float]]:
    """Brute force: every derivation as (set of aligned links, log weight); tiny sentence pairs only."""
    e, f = itg.encode(e, f)
    p, q = len(e), len(f)
    keep, pair_keep = _masks(keep, pair_keep, p, q)
    n = itg.n_nonterminals

    @lru_cache(maxsize=None)
    def derivs(s, t, u, v, a):
        if not keep[s, t, u, v]:
            return ()
        out = []
        le, lf = t - s, v - u
        if le == 1 and lf == 1 and pair_keep[s, u] and np.isfinite(itg.pair[a, e[s], f[u]]):
            out.append((frozenset({(s, u)}), itg.pair[a, e[s], f[u]]))
        if le == 1 and lf == 0:
            out.append((frozenset(), itg.null_e[a, e[s]]))
        if le == 0 and lf == 1:
            out.append((frozenset(), itg.null_f[a, f[u]]))
        for inv, w in ((False, itg.straight), (True, itg.inverted)):
            for ss in range(s, t + 1):
                for uu in range(u, v + 1):
                    left = (s, ss, uu, v) if inv else (s, ss, u, uu)
                    right = (ss, t, u, uu) if inv else (ss, t, uu, v)
                    if (left[1] - left[0]) + (left[3] - left[2]) < 1 or (right[1] - right[0]) + (right[3] - right[2]) < 1:
                        continue
                    for b in range(n):
                        for c in range(n):
                            for la, lw in derivs(*left, b):
                                for ra, rw in derivs(*right, c):
                                    out.append((la | ra, w[a, b, c] + lw + rw))
        return tuple(out)

    return [(links, float(w)) for links, w in derivs(0, p, 0, q, itg.start) if np.isfinite(w)]


def enumerated_alignment_posteriors(itg: ITG, e, f, keep=None, pair_keep=None) -> tuple[float, np.ndarray]:
    """(log Z, alignment posteriors) by :func:`enumerate_itg`."""
    e, f = itg.encode(e, f)
    found = enumerate_itg(itg, e, f, keep, pair_keep)
    logw = np.array([w for _, w in found])
    log_z = float(np.logaddexp.reduce(logw))
    post = np.zeros((len(e), len(f)))
    for (links, _), pr in zip(found, np.exp(logw - log_z)):
        for i, j in links:
            post[i, j] += pr
    return log_z, post


__all__ = ["high_confidence_links", "ITG", "ITGExpectations", "ITGPruningModel", "ITGPruningResult", "alignment_mask", "enumerate_itg",
           "enumerated_alignment_posteriors", "itg_expectations", "itg_inside", "itg_randomized_pruning",
           "itg_sample_alignment", "link_scores", "null_backbone", "tic_tac_toe_mask", "tic_tac_toe_scores"]


"""Class-based trans-dimensional mixture sampling for sentence TRFs (Algorithm 2 of Table 1, App. C-D).

Targets ``q(j, x^j) ∝ pi0_j exp(-zeta_j + lambda . f(x^j))`` (Eq. 12) over sentences of length
``1..m``.  A step of a chain is

1. a local jump ``j -> j ± 1`` (Eq. 19): appending draws a class ``c0 ~ Q_{k+1}`` from the reduced
   class-only model and a word within ``c0`` by Eq. (35); acceptance Eq. (20) with ``g`` of Eq. (36);
   removing the last word uses Eq. (21) with ``g`` of Eq. (37);
2. a Markov move over positions ``i = 1..j``: a class ``c0 ~ Q_i`` accepted by Eq. (34), then a
   Gibbs draw of the word within the (new) class.

The jump, the acceptance and the chain loops are the shared skeleton of :mod:`trf.transms_core`; this
module is the hashed-n-gram backend (its Numba operations are in :mod:`trf.lm._transms_kernels`).
Chains are independent and run on separate cores (Appendix D) with per-chain seeds, so the parallel
build gives the same draws as the serial one.  Sentences longer than ``m`` are outside the sampler's
support (the model scores them with the pooled length of Sec. 5.4; see :mod:`trf.lm.model`).
"""

from __future__ import annotations

import numpy as np

from samplers.rng import as_generator
from samplers.validation import as_float_array, check_int
from trf import transms_core
from trf.lm._transms_kernels import HoleTables, SentenceModel, TouchTables
from trf.lm.features import SentenceFeatures, blank_slot, hash_table
from trf.transms_core import ChainState, TransMSInfo

__all__ = ["ChainState", "SamplerInfo", "SentenceModel", "SentenceSampler", "TransMSInfo"]

SamplerInfo = TransMSInfo
"""Move counts of a run (the one :class:`trf.transms_core.TransMSInfo`; this name is kept for callers)."""


def touch_tables(rows, span: int) -> tuple[np.ndarray, ...]:
    """Row lists per distance ``d = 0..span`` for resampling a position ``i`` (features at ``p = i + d``):

    ``(class_ptr, class_rows, word_ptr, word_rows)`` in CSR form: the rows that read position ``i`` through its
    class and those that read its word (the other rows' features do not change with ``x_i``), each list in order
    of row length.
    """
    _, row_len, row_off, row_type = rows
    by_class: list[list[int]] = [[] for _ in range(span + 1)]
    by_word: list[list[int]] = [[] for _ in range(span + 1)]
    for r in np.argsort(row_len, kind="stable"):
        offsets = {-int(row_off[r, e]): int(row_type[r, e]) for e in range(row_len[r])}
        for d in range(span + 1):
            kind = offsets.get(d)
            if kind is not None:
                (by_class if kind == 1 else by_word)[d].append(int(r))

    def csr(lists):
        ptr = np.concatenate(([0], np.cumsum([len(x) for x in lists]))).astype(np.int64)
        return ptr, np.array([r for x in lists for r in x], dtype=np.int64)

    return (*csr(by_class), *csr(by_word))


def proposal_tables(features: SentenceFeatures, span: int) -> tuple[np.ndarray, ...]:
    """The class proposal ``Q_i`` (App. C): per distance ``d``, the class unigram and (skip-)bigram rows
    that read position ``i`` (``(prop_ptr, prop_rows)``, CSR), and for each such row a dense table of
    feature indices over all class-symbol pairs (``base[r]`` is its start in ``dense``; -1 elsewhere).

    ``Q_i`` only needs to be a proposal: the MH acceptance (Eq. 34) and the jump densities (Eq. 36-37)
    use it consistently, and the full class rows enter through the target.  Restricting it to dense
    rows makes drawing a class cost ``C`` array reads per row instead of ``C`` hash look-ups per row.
    """
    _, row_len, row_off, row_type = features.rows
    dense_rows = [r for r in range(row_len.size) if row_len[r] <= 2 and np.all(row_type[r, :row_len[r]] == 1)]
    base, dense = features.dense_tables()
    lists = [[r for r in dense_rows if -d in row_off[r, :row_len[r]]] for d in range(span + 1)]
    ptr = np.concatenate(([0], np.cumsum([len(x) for x in lists]))).astype(np.int64)
    return ptr, np.array([r for x in lists for r in x], dtype=np.int64), base, dense


def hole_tables(features: SentenceFeatures, word_position: np.ndarray) -> HoleTables:
    """The features grouped by their key with one *word* element blanked (:func:`~trf.lm.features.blank_slot`), for
    every word element of every template group: each group lists the blanked word's positions in the class order
    ``word_position`` (increasing) with the features' indices.  A feature of a row with two word elements is in two
    groups; ``<s>`` and ``</s>`` in the blanked element are left out (no sentence position holds them).

    Why: resampling the word at position ``i`` needs, for every word of one class, the weight of each row reading
    that word (:func:`trf.lm._transms_kernels.class_word_scores`).  The row's other symbols are fixed, so one look-up
    of the blanked key and a binary search for the class's positions give every word's feature at once, instead of
    one hash look-up per word and row."""
    row_group, row_len, _, row_type = features.rows
    n_groups = int(row_group.max()) + 1
    length = np.zeros(n_groups, dtype=np.int64)
    length[row_group] = row_len
    kind = np.ones((n_groups, 4), dtype=np.int64)
    kind[row_group] = row_type
    group = features.key_hi >> 48
    parts = []
    for slot in range(4):
        at = np.flatnonzero((length[group] > slot) & (kind[group, slot] == 0))
        hi, lo, symbol = blank_slot(features.key_hi[at], features.key_lo[at], slot)
        word = symbol < features.n_words
        parts.append((hi[word], lo[word], np.asarray(word_position, dtype=np.int64)[symbol[word]], at[word]))
    hi, lo, position, feature = (np.concatenate(x) for x in zip(*parts))
    order = np.lexsort((position, lo, hi))
    hi, lo = hi[order], lo[order]
    position, feature = position[order].astype(np.int32), feature[order].astype(np.int32)  # V, d < 2^31: 4 bytes
    new = np.ones(hi.size, dtype=bool)
    new[1:] = (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])
    starts = np.flatnonzero(new)
    start = np.append(starts, hi.size).astype(np.int64)
    return HoleTables(hi[starts], lo[starts], hash_table(hi[starts], lo[starts]), start, position, feature)


def _holes(features: SentenceFeatures, word_position: np.ndarray) -> HoleTables:
    """:func:`hole_tables`, built once per feature set (kept in its instance dictionary, as the SMC structure)."""
    cache = vars(features)
    if "_transms_holes" not in cache:
        cache["_transms_holes"] = hole_tables(features, word_position)
    return cache["_transms_holes"]


class SentenceSampler:
    """Class-based TransMS over the features of a :class:`~trf.lm.features.SentenceFeatures`.

    Parameters
    ----------
    features : SentenceFeatures
        Its ``word_class`` is the class map used by the sampler.
    m : int
        Maximum sentence length sampled.
    """

    def __init__(self, features: SentenceFeatures, m: int) -> None:
        self.features = features
        self.m = check_int(m, "m", low=1)
        self.class_words, self.class_ptr = features.class_members()
        self.max_class = int(np.diff(self.class_ptr).max())
        self.span = features.max_context
        self.touch_tables = TouchTables(*touch_tables(features.rows, self.span), *proposal_tables(features, self.span))
        self.hashed = features.hashed()
        word_position = np.empty_like(self.class_words)
        word_position[self.class_words] = np.arange(self.class_words.size)
        self.holes = _holes(features, word_position)

    def model(self, lam) -> SentenceModel:
        """The hashed-n-gram model bundle of the TransMS kernels at ``lam`` (checked)."""
        lam = as_float_array(lam, "lam", ndim=1)
        if lam.size != self.features.n_features:
            raise ValueError(f"lam must have n_features={self.features.n_features} entries, got {lam.size}")
        feats = self.features
        dense = self.touch_tables.proposal_dense
        return SentenceModel(self.m, int(feats.n_words), int(feats.n_classes), feats.word_class.astype(np.int64),
                             self.class_ptr, self.class_words, self.max_class, int(self.span), lam, self.hashed,
                             self.touch_tables, np.where(dense >= 0, lam[np.maximum(dense, 0)], 0.0), self.holes)

    def init_chains(self, n_chains: int, seed=None, start=None) -> ChainState:
        """``n_chains`` chains: single uniformly drawn words, or random sentences of ``start``.

        Parameters
        ----------
        n_chains : int
            Number of chains.
        seed : int, Generator or None
            Randomness of the starting words or sentences (SPEC 7).
        start : EncodedCorpus, optional
            Start every chain at a sentence drawn uniformly from it (sentences longer than ``m``
            excluded); starting at data shortens the burn-in of persistent chains.
        """
        n_chains = check_int(n_chains, "n_chains", low=1)
        rng = as_generator(seed)
        tokens = np.zeros((n_chains, self.m), dtype=np.int64)
        if start is None:
            tokens[:, 0] = rng.integers(0, self.features.n_words, size=n_chains)
            return ChainState(tokens, np.ones(n_chains, dtype=np.int64))
        candidates = np.flatnonzero(start.lengths <= self.m) if len(start) else np.zeros(0, dtype=np.int64)
        candidates = candidates[start.lengths[candidates] >= 1]
        if candidates.size == 0:
            raise ValueError(f"start holds no sentence of 1..m={self.m} words")
        picks = rng.choice(candidates, size=n_chains)
        lengths = start.lengths[picks].astype(np.int64)
        for r, i in enumerate(picks):
            tokens[r, :lengths[r]] = start[i]
        return ChainState(tokens, lengths)

    def run(self, lam, log_len_weight, state: ChainState, steps: int, seed=None, *, parallel: bool = True,
            jump: bool = True) -> tuple[ChainState, np.ndarray, np.ndarray, SamplerInfo]:
        """Advance every chain ``steps`` steps and return all visited states.

        Parameters
        ----------
        lam : float array (n_features,)
            Feature weights ``lambda``.
        log_len_weight : float array (m,)
            ``log pi0_j - zeta_j`` (Eq. 12).
        state : ChainState
            Not modified; the new state is returned.
        steps : int
            TransMS steps per chain (each a local jump, unless ``jump`` is False, and a Markov move; Algorithm 2).
        seed : int, Generator or None
            One kernel seed per chain is derived from it.
        parallel : bool
            Run chains on all cores (Appendix D); the serial build gives identical results.
        jump : bool
            False keeps every chain's length (Markov moves only; used by AIS at a fixed length).

        Returns
        -------
        state : ChainState
        tokens : int64 (n_chains * steps, m)
            Row ``r * steps + s`` is chain r after step s; ``lengths`` says how much is valid.
        lengths : int64 (n_chains * steps,)
        info : SamplerInfo
        """
        model = self.model(lam)
        lw = transms_core.check_log_len_weight(log_len_weight, self.m)
        steps = check_int(steps, "steps", low=1)
        state, visits, info = transms_core.step(model, state, steps, lw, seed, jump=jump, parallel=parallel)
        return state, visits.tokens, visits.lengths, info

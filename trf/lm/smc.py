"""Sequential Monte Carlo estimates of ``log Z_j`` for every length at once.

A sentence TRF's features are n-gram-like: each fires at one position and reads only symbols at or before
it, so ``exp(lambda . f(x^j)) = prod_{p=1}^{j+1} exp(s_p(x_{<p}, x_p))`` with ``s_{j+1}`` the end-of-sentence
features.  A particle filter over positions whose proposal is the model's own local law
``q(w | x_{<p}) ∝ exp(s_p(x_{<p}, w))`` (the locally optimal, "fully adapted" proposal: incremental weight
``sum_w exp(s_p(x_{<p}, w))``, the local normaliser) estimates the normaliser of every prefix; weighting the
particles at ``p = j`` by ``exp(s_{j+1}(x, </s>))`` estimates ``Z_j`` for every ``j <= max_length`` in one
run.  Each estimate is unbiased for ``Z_j`` (Del Moral 2004; the SMC normaliser with systematic resampling),
so, as with forward AIS, its log errs low in expectation (Jensen).  What the particles cannot see is the
future: a word whose continuations score well is proposed by its local weight alone, and the resampling at
the following positions corrects it.  Compared with the check's AIS (:mod:`trf.lm.check`), which anneals
every n-gram weight at every position of a fixed-length sentence, this leaves far less to correct.

Replicates (independent runs) give the error: their spread of ``log Z_j`` is the check's measure, and for
log-normal estimates the expected shortfall of one run is about half their variance (:attr:`SMCResult.bias`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np
from scipy.special import logsumexp

from samplers._blocks import block_edges, run_blocks, thread_map
from samplers.rng import as_generator, kernel_seeds
from samplers.validation import check_int
from trf.lm._feature_kernels import EMPTY, table_lookup_many
from trf.lm._smc_kernels import (
    NO_KNOWN,
    NO_REST,
    KnownSet,
    SMCModel,
    SMCOutput,
    SMCRun,
    SuccessorTables,
    class_factor_rows,
    count_kept,
    gather_or_zero,
    keep_successors,
    known_hashes,
)
from trf.lm._smc_kernels import is_known as _kernel_is_known
from trf.lm._smc_kernels import smc_log_z as _smc_run
from trf.lm._smc_kernels import successor_weights as _successor_weights
from trf.lm.features import SentenceFeatures, blank_slot, hash_table
from trf.lm.model import SentenceTRF

__all__ = ["ConditionalSMCResult", "SMCResult", "SMCSampler", "conditional_smc_log_z", "smc_log_z", "successor_tables"]

_NO_KEEP = np.zeros((1, 0, 1), dtype=np.int64)
_NO_REFERENCE = np.zeros(0, dtype=np.int64)
PROPOSALS = ("exact", "partial", "trimmed", "trimmed-skips")
"""SMC proposals: ``"exact"`` draws each word from the model's local law (all template rows: fully adapted);
``"partial"`` from the local law of the unigram rows, the rows that read the previous symbol and the rows that end in a
class (a class's mass, no word list), the other rows -- word-final skips, long skips and tied word rows -- entering as
importance weights of the drawn word (:func:`trf.lm._smc_kernels.smc_log_z`); ``"trimmed"`` from the local law
without the word-final features whose ``|lambda|`` is below :data:`TRIM` (they leave the successor lists, and their
weights at the drawn word enter as its importance weight, at most ``TRIM`` per row: a bounded correction);
``"trimmed-skips"`` trims only the word-final rows whose context skips a position (``ws``, ``wsh`` and the tied word
rows; 82-85% of the successor entries a full-set model's histories visit), the contiguous rows (the word n-grams,
``cpw``) staying whole: with ``w+c`` alone it is the exact proposal, draw for draw.  Since session 47 every proposal
resamples before its draws; a left-out weight enters at the next position (:func:`trf.lm._smc_kernels.carry_rest`)."""
TRIMMED = ("trimmed", "trimmed-skips")
"""The proposals that read a threshold on ``|lambda|`` (``trim``, :data:`TRIM`)."""
TRIM = 0.1
"""The ``"trimmed"`` proposal leaves out of its local law the word-final features with ``|lambda| < TRIM``.  On the
105-minute fortunes full-set model (2.0M word-final successor entries, 58% of those in lists over 1,000 below 0.01,
85% below 0.1), one run of 400 particles over lengths 1-40 took 0.393 CPU seconds exact, 0.299 / 0.284 / 0.223 /
0.198 trimmed at 0.01 / 0.03 / 0.1 / 0.3, with the spread of ``log Z-hat_j`` over 12 runs 0.28 exact, 0.24 / 0.30 /
0.28 / 0.35 (experiments/trf_lm/methods.md, "The trimmed SMC proposal"; session 19's kernel, which drew each word
before resampling: since session 47 a trimmed run costs about 1.3x as much and its batches are more diverse)."""
TABLE_CACHE_BYTES = 64 << 20
"""Memory per run for the particles' class masses and contexts between their weighting and their children's draws
(beyond it the local tables are recomputed; the draws do not depend on it)."""
DENSE_FROM = 0.3
"""A history whose word-final successor lists hold more than this fraction of the vocabulary takes the dense path of
the SMC kernels' local tables (:func:`trf.lm._smc_kernels.local_tables`; the same law either way)."""


def successor_tables(features: SentenceFeatures,
                     word_position: np.ndarray | None = None) -> tuple[SuccessorTables, np.ndarray]:
    """Group the non-unigram features by context (their key with the last symbol ``EMPTY``).

    Parameters
    ----------
    features : SentenceFeatures
        The feature set.
    word_position : ndarray of int, optional
        Where each word stands in another order (the SMC kernels' class order): a word-final feature's successor
        symbol is its last word's position instead of the word.  Each context's successors are in increasing order
        of their symbols either way.

    Returns
    -------
    tables : SuccessorTables
        Each context's successors: the features that end in a word or a class.
    end_feature : ndarray of int64 (contexts,)
        Each context's end feature, the one ending in ``</s>`` (it fires at the end of a sentence, not at a word;
        the SMC kernels read its weight as the history's end score); -1: none.
    """
    row_group, row_len, _, row_type = features.rows
    length_of_group = np.zeros(int(row_group.max()) + 1, dtype=np.int64)
    length_of_group[row_group] = row_len
    word_final = np.zeros(length_of_group.size, dtype=bool)
    word_final[row_group] = row_type[np.arange(row_len.size), row_len - 1] == 0
    end_of_group = np.where(word_final, features.n_words, features.n_classes)  # the </s> symbol of the last element
    hi, lo = features.key_hi, features.key_lo
    group = hi >> 48
    length = length_of_group[group]
    keep = np.flatnonzero(length >= 2)
    hi, lo, length, end = hi[keep], lo[keep], length[keep], end_of_group[group[keep]]
    words = word_final[group[keep]]
    ctx_hi, ctx_lo, last = blank_slot(hi, lo, length - 1)  # the last symbol sits at slot length - 1
    if word_position is not None:
        last = np.where(words & (last < end), np.asarray(word_position, dtype=np.int64)[np.minimum(last, end - 1)],
                        last)
    order = np.lexsort((last, ctx_lo, ctx_hi))
    ctx_hi, ctx_lo, last, end, feature = ctx_hi[order], ctx_lo[order], last[order], end[order], keep[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = (ctx_hi[1:] != ctx_hi[:-1]) | (ctx_lo[1:] != ctx_lo[:-1])
    context = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    u_hi, u_lo = ctx_hi[starts], ctx_lo[starts]
    at_end = last >= end
    end_feature = np.full(starts.size, -1, dtype=np.int64)
    end_feature[context[at_end]] = feature[at_end]
    ctx_start = np.zeros(starts.size + 1, dtype=np.int64)
    ctx_start[1:] = np.cumsum(np.bincount(context[~at_end], minlength=starts.size))
    return SuccessorTables(u_hi, u_lo, hash_table(u_hi, u_lo), ctx_start, last[~at_end].astype(np.int64),
                           feature[~at_end].astype(np.int64)), end_feature


class _Structure:
    """The lambda-independent part of the SMC bundle of a feature set (class lists, successor tables, and where
    each word's unigram weights sit)."""

    def __init__(self, feats: SentenceFeatures) -> None:
        self.features = feats
        self.class_words, self.class_start = feats.class_members()
        self.word_position = np.empty_like(self.class_words)
        self.word_position[self.class_words] = np.arange(self.class_words.size)
        self.position_class = feats.word_class[self.class_words].astype(np.int64)
        self.hashed = feats.hashed()
        self.succ, self.ctx_end = successor_tables(feats, self.word_position)
        # unigram[a, w]: the feature of unigram row a that word w fires (-1: unseen), from the features' dense tables
        base, dense = feats.dense_tables()
        _, row_len, _, row_type = feats.rows
        words = np.arange(feats.n_words)
        self.unigram = np.array([dense[base[r] + (words if row_type[r, 0] == 0 else feats.word_class)]
                                 for r in np.flatnonzero(row_len == 1)], dtype=np.int64).reshape(-1, feats.n_words)
        # the partial proposal's rows: unigrams, rows whose context reads the previous symbol (offset -1) and rows
        # ending in a class (they add to a class's mass; the cost of a local law is in the word-final successor lists)
        _, _, row_off, _ = feats.rows
        before_last = np.arange(row_off.shape[1])[None, :] < (row_len - 1)[:, None]
        class_final = row_type[np.arange(row_len.size), row_len - 1] == 1
        self.proposal_rows = (row_len == 1) | class_final | ((row_off == -1) & before_last).any(axis=1)
        # the trimmed proposal's rows and entries: the word-final rows of two or more symbols, whose successor lists
        # lose their small weights
        self.trimmed_rows = np.flatnonzero((row_len >= 2) & ~class_final).astype(np.int64)
        # "trimmed-skips": only the word-final rows whose offsets skip a position (w-3 w0, ..., the tied w-d w0)
        width = np.arange(row_off.shape[1])[None, :]
        contiguous = ((row_off == width - (row_len - 1)[:, None]) | (width >= row_len[:, None])).all(axis=1)
        self.skip_rows = np.flatnonzero((row_len >= 2) & ~class_final & ~contiguous).astype(np.int64)
        row_group, _, _, _ = feats.rows
        group_of = feats.key_hi[self.succ.succ_feature] >> 48
        self.succ_word_final = _group_mask(row_group, ~class_final)[group_of]
        self.succ_skip = _group_mask(row_group, ~class_final & ~contiguous)[group_of]
        # each trimmed proposal (TRIMMED): the rows it may trim, weighed back at the drawn word, and their contexts as
        # runs, alternately kept whole and trimmed (:func:`_runs`; the fortunes full-set model's 927,118 contexts are
        # 6-7 runs, since a row group's contexts are adjacent)
        starts, sizes = self.succ.ctx_start[:-1], np.diff(self.succ.ctx_start)
        listed = sizes > 0

        def runs_of(entry_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # a context's entries: one row group
            mask = np.zeros(sizes.size, dtype=bool)
            mask[listed] = entry_mask[starts[listed]]
            return _runs(mask, listed)

        self.trimmable = {"trimmed": (self.trimmed_rows, runs_of(self.succ_word_final)),
                          "trimmed-skips": (self.skip_rows, runs_of(self.succ_skip))}
        self.ctx_table_base, self.ctx_table = _context_tables(feats, self.succ)
        # the class-final rows whose context is one class: their lists as dense rows of factors, one per context class
        # (no proposal trims a class-final list); on the fortunes full-set model 9 of the 14 class-final rows, in 6
        # groups, whose lists hold 109-177 of the 200 classes on average
        one_class = (row_len == 2) & class_final & (row_type[:, 0] == 1)
        self.class_row_base = np.full(row_len.size, -1, dtype=np.int64)
        blocks: dict[int, int] = {}
        for r in np.flatnonzero(one_class):
            self.class_row_base[r] = blocks.setdefault(int(self.ctx_table_base[r]), len(blocks) * (feats.n_classes + 2))
        self.class_row_contexts = np.concatenate(
            [self.ctx_table[b:b + feats.n_classes + 2] for b in blocks] or [np.zeros(0, dtype=np.int64)])

    def unigram_weights(self, lam: np.ndarray) -> np.ndarray:
        """``u[w]``: the weight of the unigram features that word ``w`` fires (word and class unigrams), as
        :func:`trf.lm.model.unigram_weights` but from a look-up of ``2 V`` entries instead of a pass over the
        features."""
        return np.where(self.unigram >= 0, lam[self.unigram], 0.0).sum(axis=0)

    def weights(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The successors' ``lambda`` (``lam[succ.succ_feature]``) and its ``exp``, in one pass on the Numba
        threads."""
        feature = self.succ.succ_feature
        succ_lam, succ_exp = np.empty(feature.size), np.empty(feature.size)
        run_blocks(lambda lo, hi: _successor_weights(feature, lam, succ_lam, succ_exp, lo, hi), block_edges(feature.size))
        return succ_lam, succ_exp

    def end_weights(self, lam: np.ndarray) -> np.ndarray:
        """Each context's ``</s>`` weight (0: none), gathered on the Numba threads."""
        end = self.ctx_end
        out = np.empty(end.size)
        run_blocks(lambda lo, hi: gather_or_zero(end, lam, out, lo, hi), block_edges(end.size))
        return out

    def trimmed(self, lam: np.ndarray, trim: float,
                runs: tuple[np.ndarray, np.ndarray]) -> tuple[SuccessorTables, np.ndarray, np.ndarray]:
        """The successor tables without the entries of ``|lambda| < trim`` in the contexts that ``runs`` trims (a
        trimmed proposal's, from :attr:`trimmable`; each context keeps its place and its other successors, in order), and the kept
        entries' ``lambda`` and its ``exp``: the contexts counted, then filled, in blocks on the Numba threads (the
        same tables whatever their number)."""
        succ = self.succ
        n_ctx = succ.ctx_start.size - 1
        edges = block_edges(n_ctx, starts=succ.ctx_start)
        trim = float(trim)
        lists = (succ.ctx_start, succ.succ_symbol, succ.succ_feature)
        counts = run_blocks(lambda lo, hi: count_kept(lists, lam, runs, trim, lo, hi), edges)
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        n = int(offsets[-1])
        start = np.empty_like(succ.ctx_start)
        start[n_ctx] = n
        kept = (start, np.empty(n, dtype=succ.succ_symbol.dtype), np.empty(n, dtype=succ.succ_feature.dtype),
                np.empty(n), np.empty(n))
        run_blocks(lambda lo, hi: keep_successors(lists, lam, runs, trim, lo, hi,
                                                  offsets[np.searchsorted(edges, lo)], kept), edges)
        return SuccessorTables(succ.ctx_hi, succ.ctx_lo, succ.ctx_slots, start, kept[1], kept[2]), kept[3], kept[4]

    def bundle(self, lam: np.ndarray, proposal: str = "exact", trim: float = TRIM) -> tuple[SMCModel, float]:
        """The kernels' bundle at ``lam`` for ``proposal`` (:data:`PROPOSALS`; ``trim``: the threshold of the
        ``"trimmed"`` one) and the shift taken out of the unigram weights (add ``j * shift`` to a kernel's
        ``log Z_j``)."""
        feats = self.features
        draw_row = self.proposal_rows if proposal == "partial" else np.ones_like(self.proposal_rows)
        lam = np.asarray(lam, dtype=np.float64)
        u = self.unigram_weights(lam)
        shift = float(u.max())
        u = u - shift
        exp_u = np.exp(u)[self.class_words]  # by position in the class order
        class_mass = np.bincount(self.position_class, weights=exp_u, minlength=feats.n_classes)[:feats.n_classes]
        # a diverging lambda gives infinite factors, as exp(s_p) overflows in the kernel
        rest_rows, runs = self.trimmable.get(proposal, (np.zeros(0, dtype=np.int64), None))
        if runs is not None and rest_rows.size:  # a trimmed proposal with rows to trim (else the exact tables)
            (succ, succ_lam, succ_exp), rest_below = self.trimmed(lam, trim, runs), float(trim)
        else:
            succ, (succ_lam, succ_exp) = self.succ, self.weights(lam)
            rest_rows, rest_below = np.flatnonzero(~draw_row).astype(np.int64), np.inf
        class_rows = np.empty((self.class_row_contexts.size, int(feats.n_classes)))
        class_factor_rows(self.class_row_contexts, succ.ctx_start, succ.succ_symbol, succ_exp, class_rows)
        return SMCModel(int(feats.n_words), int(feats.n_classes), feats.word_class.astype(np.int64), self.class_start,
                        self.class_words, self.word_position, self.position_class, u, exp_u,
                        class_mass.astype(np.float64), lam, self.hashed, succ, succ_lam, succ_exp,
                        self.end_weights(lam), draw_row, rest_rows, rest_below,
                        int(DENSE_FROM * feats.n_words), self.class_row_base, class_rows, self.ctx_table_base,
                        self.ctx_table), shift


def _context_tables(feats: SentenceFeatures, succ: SuccessorTables) -> tuple[np.ndarray, np.ndarray]:
    """``(base, table)``: for each template row whose context is one symbol (two elements), the context index of
    every symbol value (words and ``<s>``, or classes and ``<s>``'s class) at ``table[base[r] + symbol]``, -1 where
    unseen; one table per row group (the tied rows share theirs); ``base[r] = -1`` for the other rows."""
    row_group, row_len, _, row_type = feats.rows
    base = np.full(row_len.size, -1, dtype=np.int64)
    tables: list[np.ndarray] = []
    at: dict[int, int] = {}
    size = 0
    for r in np.flatnonzero(row_len == 2):
        g = int(row_group[r])
        if g not in at:
            n_symbols = (feats.n_words if row_type[r, 0] == 0 else feats.n_classes) + 2
            symbols = np.arange(n_symbols, dtype=np.int64)
            hi = (np.int64(g) << 48) | (symbols << 24) | EMPTY
            lo = np.full(n_symbols, (EMPTY << 24) | EMPTY, dtype=np.int64)
            tables.append(table_lookup_many(hi, lo, succ.ctx_hi, succ.ctx_lo, succ.ctx_slots))
            at[g] = size
            size += n_symbols
        base[r] = at[g]
    return base, np.concatenate(tables) if tables else np.zeros(0, dtype=np.int64)


def _runs(mask: np.ndarray, listed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(bounds, trims)``: the contexts as runs ``bounds[i]:bounds[i + 1]`` of equal ``mask`` (``trims[i]``), where a
    context that is not ``listed`` (no successors) takes the mask of the listed one before it."""
    if mask.size == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.bool_)
    filled = mask[np.maximum.accumulate(np.where(listed, np.arange(mask.size), 0))]
    bounds = np.concatenate(([0], np.flatnonzero(filled[1:] != filled[:-1]) + 1, [mask.size])).astype(np.int64)
    return bounds, filled[bounds[:-1]].astype(np.bool_)


def _group_mask(row_group: np.ndarray, row_mask: np.ndarray) -> np.ndarray:
    """Per feature group, ``row_mask`` of its rows (the rows of a tied group agree)."""
    mask = np.zeros(int(row_group.max()) + 1, dtype=bool)
    mask[row_group] = row_mask
    return mask


def _structure(feats: SentenceFeatures) -> _Structure:
    """The features' :class:`_Structure`, built once per feature set (the successor tables sort every feature) and
    kept in its instance dictionary beside its own cached tables (``SentenceFeatures`` declares no field for it)."""
    cache = vars(feats)
    if "_smc_structure" not in cache:
        cache["_smc_structure"] = _Structure(feats)
    return cache["_smc_structure"]


def _smc_model(model: SentenceTRF, proposal: str = "exact", trim: float = TRIM) -> tuple[SMCModel, float]:
    return _structure(model.features).bundle(model.lam, proposal, trim)


def _check_trim(trim: float) -> float:
    trim = float(trim)
    if not trim >= 0.0:
        raise ValueError(f"trim must be >= 0, got {trim}")
    return trim


def _check_proposal(proposal: str) -> str:
    if proposal not in PROPOSALS:
        raise ValueError(f"proposal must be one of {', '.join(PROPOSALS)}, got {proposal!r}")
    return proposal


def _run_tasks(bundle: SMCModel, tasks: list, threads: int | None) -> float:
    """Run the kernel once per task ``(SMCRun, SMCOutput)`` on ``threads``
    threads (default: ``numba.get_num_threads()``, as the TransMS chains of :mod:`trf.transms_core`; the kernel
    releases the GIL); their seconds.  An exception in the calling thread (Ctrl-C) raises the kernels' stop flag,
    so the runs end at their next position instead of keeping the process alive until they finish (a 4 x
    200,000-particle check took 397 s to exit)."""
    stop = np.zeros(1, dtype=np.int64)
    _smc_run(bundle, _smc_settings(1, 1, 0), SMCOutput(np.zeros(1), np.zeros(1), _NO_KEEP), stop)  # compile first
    start = time.perf_counter()

    def run(task) -> None:
        _smc_run(bundle, *task, stop)

    def halt() -> None:
        stop[0] = 1

    thread_map(run, tasks, min(len(tasks), max(1, threads or numba.get_num_threads())), on_interrupt=halt)
    return time.perf_counter() - start


def _run_all(bundle: SMCModel, n_particles: int, max_length: int, seeds: np.ndarray, out: np.ndarray,
             ess: np.ndarray, keep: np.ndarray | None, threads: int | None, *, known: KnownSet = NO_KNOWN,
             rest: np.ndarray | None = None) -> float:
    """``len(seeds)`` independent plain SMC runs over ``1..max_length`` (:func:`_run_tasks`), with ``rest[r]`` the
    estimates that leave out the ``known`` sentences (:class:`SMCOutput` ``log_rest``); their seconds."""
    return _run_tasks(bundle, [(_smc_settings(n_particles, max_length, seed, known=known),
                                SMCOutput(out[r], ess[r], _NO_KEEP if keep is None else keep[r],
                                          NO_REST if rest is None else rest[r]))
                               for r, seed in enumerate(seeds)], threads)


def _known_arrays(known) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``known = (tokens, lengths, log_weight)`` checked and as int64, int64, float64 arrays."""
    tokens, lengths, log_weight = (np.asarray(a) for a in known)
    if (tokens.ndim != 2 or lengths.ndim != 1 or lengths.shape != (tokens.shape[0],)
            or log_weight.shape != lengths.shape or (lengths.size and (lengths.min() < 1 or lengths.max() > tokens.shape[1]))
            or not np.all(np.isfinite(log_weight))):
        raise ValueError(f"known must be (tokens (n, >= length), lengths (n,) >= 1, finite log weights (n,)), got "
                         f"shapes {tokens.shape}, {lengths.shape}, {log_weight.shape}")
    return tokens.astype(np.int64), lengths.astype(np.int64), log_weight.astype(np.float64)


class KnownMass(NamedTuple):
    """Distinct sentences weighed exactly in the SMC estimates (:func:`known_mass`): the kernel's look-up set (whose
    ``tokens`` they are, by length), their ``lengths`` and ``log_weight`` (``lambda . f(x)``) in the same order, and
    ``log_known[j - 1] = log W(S_j)``, the log of their summed ``exp(lambda . f(x))`` at each length ``1..m`` (-inf:
    none)."""

    table: KnownSet
    lengths: np.ndarray
    log_weight: np.ndarray
    log_known: np.ndarray

    def draw(self, j: int, n: int, rng) -> np.ndarray:
        """``n`` of the known sentences of length ``j`` (int64 ``(n, j)``), each with probability ``∝ exp(lambda .
        f(x))``."""
        at = np.arange(self.table.start[j], self.table.start[j + 1])
        return self.table.tokens[rng.choice(at, size=n, p=_probabilities(self.log_weight[at])), :j]


def known_mass(known, m: int) -> KnownMass:
    """:class:`KnownMass` of ``known = (tokens (n, >= their length), lengths (n,), log_weight (n,))``: distinct
    sentences and their exact ``lambda . f(x)``, those longer than ``m`` ignored.  Raises ValueError on bad shapes,
    non-finite weights or a sentence given twice (its weight would count twice)."""
    tokens, lengths, log_weight = _known_arrays(known)
    inside = np.flatnonzero(lengths <= m)
    width = max(1, min(tokens.shape[1], m))
    rows = np.where(np.arange(width)[None, :] < lengths[inside, None], tokens[inside, :width], 0)
    hashes = known_hashes(np.ascontiguousarray(rows), lengths[inside])
    order = np.lexsort((hashes, lengths[inside]))
    rows, sizes, hashes, weights = rows[order], lengths[inside][order], hashes[order], log_weight[inside][order]
    same = np.flatnonzero((sizes[1:] == sizes[:-1]) & (hashes[1:] == hashes[:-1]))
    if np.any(np.all(rows[same] == rows[same + 1], axis=1)):
        raise ValueError("known sentences must be distinct: one is given twice")
    start = np.searchsorted(sizes, np.arange(m + 2)).astype(np.int64)
    log_known = np.full(m, -np.inf)
    np.logaddexp.at(log_known, sizes - 1, weights)
    return KnownMass(KnownSet(start, hashes, np.ascontiguousarray(rows)), sizes, weights, log_known)


def _as_mass(known, m: int) -> KnownMass:
    """``known`` as a :class:`KnownMass` for lengths ``1..m``: built by :func:`known_mass`, or one built before for
    at least ``m`` lengths (its look-up set reused, built once for several runs)."""
    if not isinstance(known, KnownMass):
        return known_mass(known, m)
    if known.log_known.size < m:
        raise ValueError(f"known covers lengths 1..{known.log_known.size}, fewer than {m}")
    return known._replace(log_known=known.log_known[:m])


def _smc_settings(n_particles: int, max_length: int, seed, reference: np.ndarray = _NO_REFERENCE,
                  known: KnownSet = NO_KNOWN) -> SMCRun:
    """The kernel's :class:`SMCRun` bundle (the table cache within :data:`TABLE_CACHE_BYTES`)."""
    return SMCRun(int(n_particles), int(max_length), int(seed), reference, int(TABLE_CACHE_BYTES), known)


def _pooled_log(logs: np.ndarray, sign: float) -> np.ndarray:
    """``sign * log mean_r exp(sign * logs[r])`` over axis 0: the log of the mean estimate of ``Z`` (sign +1) or
    of ``1 / Z`` (sign -1, conditional runs)."""
    return sign * (logsumexp(sign * logs, axis=0) - np.log(logs.shape[0]))


def _spread(logs: np.ndarray) -> np.ndarray:
    """Standard deviation of the runs' log estimates over axis 0 (NaN with one run)."""
    if logs.shape[0] < 2:
        return np.full(logs.shape[1:], np.nan)
    return logs.std(axis=0, ddof=1)


def _pooled_stderr(logs: np.ndarray, sign: float) -> np.ndarray:
    """Delta-method standard error of :func:`_pooled_log` from the spread of ``exp(sign * logs)``."""
    r = logs.shape[0]
    if r < 2:
        return np.full(logs.shape[1:], np.nan)
    w = np.exp(sign * logs - (sign * logs).max(axis=0))
    return w.std(axis=0, ddof=1) / (np.sqrt(r) * w.mean(axis=0))


@dataclass
class SMCResult:
    """SMC estimates of ``log Z_j`` for ``j = 1..max_length``.

    Attributes
    ----------
    lengths : ndarray of int
    replicates : ndarray (n_replicates, n_lengths)
        ``log Z-hat_j`` of each independent run.
    ess : ndarray (n_replicates, n_lengths)
        Effective sample size of the end-of-sentence weights at each length, in ``[1, n_particles]``.
    n_particles : int
    seconds : float
    kept : ndarray (n_replicates, n_lengths, n_keep, n_lengths), optional
        ``kept[r, j - 1, s, :j]``: sentences of length ``j`` that run ``r`` resampled by their end-of-sentence
        weights (approximate draws of the model at length ``j``; :meth:`draws`).
    known : KnownMass, optional
        The sentences weighed exactly (:func:`smc_log_z` ``known``); each replicate is then ``log (W(S_j) +
        Z-hat_j(rest))`` and the kept sentences are draws of the rest.
    rest : ndarray (n_replicates, n_lengths), optional
        With ``known``: ``log Z-hat_j(rest)``, each run's estimate of ``Z_j`` less the known weight (-inf: the run
        found no other sentence, and kept known ones).
    """

    lengths: np.ndarray
    replicates: np.ndarray
    ess: np.ndarray
    n_particles: int
    seconds: float
    kept: np.ndarray | None = None
    known: KnownMass | None = None
    rest: np.ndarray | None = None

    @property
    def log_known(self) -> np.ndarray | None:
        """``log W(S_j)``, the known sentences' exact weight at each length (-inf: none; None without known ones)."""
        return None if self.known is None else self.known.log_known

    def draws(self, j: int, n: int, rng, outside_known: bool = False) -> np.ndarray:
        """``n`` approximate draws of the model at length ``j`` (int64 ``(n, j)``) from the kept sentences (a run
        with probability ``∝`` its ``Z-hat_j``, then one of its kept ones).  With known sentences each draw is a known
        one with probability ``W(S_j) / Z-hat_j`` (which one by their exact weights), else a draw of the rest; with
        ``outside_known``, always a draw of the rest -- the model restricted to the other sentences (raises
        ValueError where no run found one: :meth:`can_draw_outside_known`)."""
        if self.kept is None:
            raise ValueError("this SMC result kept no sentences (run smc_log_z with n_keep > 0)")
        rng = as_generator(rng)
        if self.known is None or self.rest is None:
            return _pick_sentences(self.replicates[:, j - 1], self.kept[:, j - 1], j, n, rng)
        rest = self.rest[:, j - 1]
        if outside_known:
            if not self.can_draw_outside_known(j):
                raise ValueError(f"no run found a sentence of length {j} outside the known ones")
            return _pick_sentences(rest, self.kept[:, j - 1], j, n, rng)
        share = np.exp(self.known.log_known[j - 1] - self.log_z[j - 1]) if np.isfinite(rest).any() else 1.0
        known = rng.random(n) < share
        out = np.zeros((n, j), dtype=np.int64)
        if known.any():
            out[known] = self.known.draw(j, int(known.sum()), rng)
        if not known.all():
            out[~known] = _pick_sentences(rest, self.kept[:, j - 1], j, int((~known).sum()), rng)
        return out

    def can_draw_outside_known(self, j: int) -> bool:
        """Whether some run found a sentence of length ``j`` outside the known ones and kept it (without known
        sentences: whether sentences were kept)."""
        if self.kept is None or self.kept.shape[2] == 0:
            return False
        return self.rest is None or bool(np.isfinite(self.rest[:, j - 1]).any())

    @property
    def log_z(self) -> np.ndarray:
        """``log`` of the mean of the replicates' ``Z``-hat (unbiased for ``Z_j``; its log errs low)."""
        return _pooled_log(self.replicates, 1.0)

    @property
    def spread(self) -> np.ndarray:
        """Standard deviation of ``log Z-hat_j`` over the replicates (NaN with one replicate)."""
        return _spread(self.replicates)

    @property
    def stderr(self) -> np.ndarray:
        """Delta-method standard error of :attr:`log_z` from the replicates' spread of ``Z``-hat."""
        return _pooled_stderr(self.replicates, 1.0)

    @property
    def bias(self) -> np.ndarray:
        """Expected shortfall of one run's ``log Z-hat_j`` if the estimates are log-normal: ``spread^2 / 2``."""
        return 0.5 * self.spread ** 2


def smc_log_z(model: SentenceTRF, max_length: int | None = None, *, n_particles: int = 1000,
              n_replicates: int = 4, seed=None, threads: int | None = None, n_keep: int = 0,
              proposal: str = "exact", trim: float = TRIM, known=None) -> SMCResult:
    """SMC estimates of ``log Z_j(lambda)`` for ``j = 1..max_length`` (default: the model's ``m``).

    Parameters
    ----------
    model : SentenceTRF
        The model; its features and ``lambda`` define the targets ``Z_j``.
    max_length : int, optional
        Longest length estimated (default ``model.m``).
    n_particles : int
        Particles per run (cost is linear in it).
    n_replicates : int
        Independent runs (their spread is the error measure; >= 2 for :attr:`SMCResult.spread`).
    seed : int, Generator or None
        Randomness (SPEC 7); each run gets its own child seed.
    threads : int, optional
        Runs executed at once (default: all cores); each run is single-threaded and draws from its own seed,
        so results do not depend on it.
    n_keep : int
        Sentences per run and length to keep for :meth:`SMCResult.draws` (0: none).
    proposal : {"exact", "partial", "trimmed", "trimmed-skips"}
        The particles' proposal (:data:`PROPOSALS`); every estimate is unbiased for ``Z_j``.
    trim : float
        The threshold of the proposals :data:`TRIMMED` (:data:`TRIM`).
    known : tuple, optional
        ``(tokens (n, >= length), lengths (n,), log_weight (n,))``: distinct sentences and their exact ``lambda .
        f(x)`` (:func:`known_mass`), weighed exactly: at length ``j`` with known set ``S_j``, ``Z_j = W(S_j) +
        Z_j(rest)``, and each run estimates the rest with the known sentences' end weights set to 0 (the particle
        filter for the target restricted to the other sentences: unbiased for ``Z_j(rest)``), so each replicate
        ``W(S_j) + Z-hat_j(rest)`` is unbiased for ``Z_j`` and a run that never reaches a heavy known sentence still
        counts it; the kept sentences are then draws of the rest (:meth:`SMCResult.draws`).
    """
    proposal = _check_proposal(proposal)
    trim = _check_trim(trim)
    max_length = check_int(model.m if max_length is None else max_length, "max_length", low=1)
    n_particles = check_int(n_particles, "n_particles", low=1)
    n_replicates = check_int(n_replicates, "n_replicates", low=1)
    n_keep = check_int(n_keep, "n_keep", low=0)
    bundle, shift = _smc_model(model, proposal, trim)
    seeds = kernel_seeds(seed, n_replicates)
    out = np.zeros((n_replicates, max_length))
    ess = np.zeros((n_replicates, max_length))
    keep = np.zeros((n_replicates, max_length, n_keep, max_length), dtype=np.int64) if n_keep else None
    lengths = np.arange(1, max_length + 1)
    if known is None:
        seconds = _run_all(bundle, n_particles, max_length, seeds, out, ess, keep, threads)
        return SMCResult(lengths, out + lengths * shift, ess, n_particles, seconds, keep)
    mass = _as_mass(known, max_length)
    rest = np.zeros((n_replicates, max_length))
    seconds = _run_all(bundle, n_particles, max_length, seeds, out, ess, keep, threads, known=mass.table, rest=rest)
    rest += lengths * shift
    return SMCResult(lengths, np.logaddexp(mass.log_known, rest), ess, n_particles, seconds, keep, mass, rest)


@dataclass
class ConditionalSMCResult:
    """Conditional SMC estimates of ``log Z_j`` (:func:`conditional_smc_log_z`): the upper side.

    Attributes
    ----------
    lengths : ndarray of int
    runs : ndarray (n_runs, n_lengths)
        ``log Z-hat_j`` of each conditional run (each pinned to its own reference sentence).
    n_particles : ndarray of int (n_lengths,)
        Particles per run at each length.
    seconds : float
    """

    lengths: np.ndarray
    runs: np.ndarray
    n_particles: np.ndarray
    seconds: float

    @property
    def log_z(self) -> np.ndarray:
        """``-log mean_r (1 / Z-hat_j^r)``: with exact references ``E[1 / Z-hat] = 1 / Z``, so this errs *high* in
        expectation (Jensen) -- the counterpart of :attr:`SMCResult.log_z`, which errs low."""
        return _pooled_log(self.runs, -1.0)

    @property
    def spread(self) -> np.ndarray:
        """Standard deviation of ``log Z-hat_j`` over the runs (NaN with one run)."""
        return _spread(self.runs)

    @property
    def stderr(self) -> np.ndarray:
        """Delta-method standard error of :attr:`log_z` from the runs' spread of ``1 / Z-hat``."""
        return _pooled_stderr(self.runs, -1.0)


def conditional_smc_log_z(model: SentenceTRF, references: dict, *, n_particles: int | dict = 1000, seed=None,
                          threads: int | None = None, known=None) -> ConditionalSMCResult:
    """Conditional SMC estimates of ``log Z_j``, one run per reference sentence: the upper side of bidirectional
    Monte Carlo with SMC (Andrieu, Doucet and Holenstein 2010, conditional SMC; Grosse, Ghahramani and Adams 2015
    for the sandwich).

    The run for a reference ``x`` of length ``j`` is the particle filter of :func:`smc_log_z` up to ``j`` with one
    particle pinned to ``x``.  If ``x`` is an exact draw of the model at length ``j``, the estimate ``Z-hat``
    satisfies ``E[1 / Z-hat] = 1 / Z_j``, so :attr:`ConditionalSMCResult.log_z` is an upper bound of ``log Z_j``
    in expectation, as :func:`smc_log_z` is a lower one; the gap between the two shrinks with the particles
    (about the variance of one run's ``log Z-hat``).  With approximate references (e.g. SMC draws,
    :meth:`SMCResult.draws`) the bound holds as far as they are exact draws.

    Parameters
    ----------
    model : SentenceTRF
        The model; its features and ``lambda`` define the targets ``Z_j``.
    references : dict
        ``{j: int array (n_runs, j)}``: the reference sentences (word ids) per length, the same number of runs
        for every length.
    n_particles : int or dict
        Particles per run (>= 2), or ``{j: particles}`` for every length of ``references`` (a run's cost is about
        ``j`` times its particles).
    seed : int, Generator or None
        Randomness (SPEC 7); each run gets its own child seed.
    threads : int, optional
        Runs executed at once (default: all cores); results do not depend on it.
    known : tuple, optional
        Distinct sentences weighed exactly, as in :func:`smc_log_z`: each run is conditional SMC for the target
        restricted to the other sentences (the known ones' end weights 0), pinned to a reference outside them (a
        known reference is an error), so that with an exact draw of that restricted model ``E[1 / Z-hat(rest)] = 1 /
        Z_j(rest)``; a run's value is ``log (W(S_j) + Z-hat(rest))``, and :attr:`ConditionalSMCResult.log_z` still
        errs high in expectation (``1 / (W + 1 / u)`` is concave in ``u = 1 / Z-hat(rest)``).
    """
    if not references:
        raise ValueError("references is empty")
    lengths = np.array(sorted(int(j) for j in references), dtype=np.int64)
    if isinstance(n_particles, dict):
        if set(n_particles) != set(lengths.tolist()):
            raise ValueError("n_particles must name the same lengths as references")
        particles = np.array([check_int(n_particles[j], f"n_particles[{j}]", low=2) for j in lengths.tolist()])
    else:
        particles = np.full(lengths.size, check_int(n_particles, "n_particles", low=2), dtype=np.int64)
    refs = [np.asarray(references[j], dtype=np.int64) for j in lengths]
    n_runs = refs[0].shape[0] if refs[0].ndim == 2 else 0
    for j, ref in zip(lengths, refs):
        if not 1 <= j <= model.m:
            raise ValueError(f"references: length {j} is not in 1..{model.m}")
        if ref.ndim != 2 or ref.shape != (n_runs, j) or n_runs < 1:
            raise ValueError(f"references[{j}] must have shape (n_runs, {j}) with the same n_runs >= 1 for every "
                             f"length, got {ref.shape}")
        if ref.min() < 0 or ref.max() >= model.features.n_words:
            raise ValueError(f"references[{j}] holds word ids outside 0..{model.features.n_words - 1}")
    mass = None if known is None else _as_mass(known, int(lengths.max()))
    if mass is not None:
        for j, ref in zip(lengths, refs):
            hit = next((ref[r] for r in range(n_runs) if _is_known(mass.table, ref[r])), None)
            if hit is not None:
                raise ValueError(f"references[{j}] holds a known sentence ({hit.tolist()}); with known sentences the "
                                 "references must lie outside them")
    bundle, shift = _smc_model(model)
    seeds = kernel_seeds(seed, n_runs * lengths.size)
    out = np.zeros((n_runs, lengths.size, int(lengths.max())))
    ess = np.zeros_like(out)
    rest = np.zeros_like(out) if mass is not None else None
    tasks = [(_smc_settings(particles[k], j, seeds[k * n_runs + r], np.ascontiguousarray(refs[k][r]),
                            NO_KNOWN if mass is None else mass.table),
              SMCOutput(out[r, k], ess[r, k], _NO_KEEP, NO_REST if rest is None else rest[r, k]))
             for k, j in enumerate(lengths) for r in range(n_runs)]
    tasks.sort(key=lambda task: -task[0].n_particles * task[0].max_length)  # costliest first: the pool ends together
    seconds = _run_tasks(bundle, tasks, threads)
    at = np.arange(lengths.size), lengths - 1
    if mass is None or rest is None:
        runs = out[:, at[0], at[1]] + lengths * shift
    else:
        runs = np.logaddexp(mass.log_known[lengths - 1], rest[:, at[0], at[1]] + lengths * shift)
    return ConditionalSMCResult(lengths, runs, particles, seconds)


def _is_known(table: KnownSet, sentence: np.ndarray) -> bool:
    """Whether ``sentence`` (word ids) is in ``table`` (:func:`trf.lm._smc_kernels.is_known`)."""
    row = np.zeros(sentence.size + 1, dtype=np.int64)
    row[1:] = sentence
    return bool(_kernel_is_known(table, row, sentence.size))


def _probabilities(log_w: np.ndarray) -> np.ndarray:
    """``softmax(log_w)`` with non-finite entries as weight 0, or uniform when no entry is finite."""
    log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
    if not np.isfinite(log_w).any():
        return np.full(log_w.size, 1.0 / log_w.size)
    w = np.exp(log_w - log_w.max())
    return w / w.sum()


def _pick_sentences(log_z_j: np.ndarray, keep_j: np.ndarray, j: int, n: int, rng) -> np.ndarray:
    """``n`` sentences of length ``j`` from the runs' kept ones ``keep_j`` (runs, S, >= j): a run with probability
    ``∝ Z-hat_j`` of that run (pooling independent particle systems), then a random one of its kept sentences
    (they lie in particle order, which groups relatives)."""
    runs = rng.choice(keep_j.shape[0], size=n, p=_probabilities(log_z_j))
    picks = rng.integers(keep_j.shape[1], size=n)
    return keep_j[runs, picks, :j]


def _allot(shares: np.ndarray, n: int, rng) -> np.ndarray:
    """``n`` draws split over strata in proportion to ``shares`` (summing to 1): ``floor(n s)`` each, and one more
    for ``n - sum floor(n s)`` of them, picked by systematic sampling on the remainders (each remainder is below 1,
    so no stratum is picked twice) -- each stratum's count has expectation ``n s`` exactly and lies within one of
    it."""
    exact = n * np.asarray(shares, dtype=np.float64)
    counts = np.floor(exact).astype(np.int64)
    rest = n - int(counts.sum())
    if rest > 0:
        edges = np.cumsum(exact - counts)
        picks = np.searchsorted(edges, rng.random() + np.arange(rest), side="right")
        counts[np.minimum(picks, counts.size - 1)] += 1
    return counts


class SMCSampler:
    """Draws from ``q(j, x^j) ∝ exp(w_j + lambda . f(x^j))`` over ``j = 1..m`` (Eq. 12 with ``w_j = log pi0_j -
    zeta_j``) by SMC, for AugSA (:class:`trf.lm.backend.SentenceBackend` with ``sampler="smc"``).

    Each call runs ``n_runs`` independent SMC runs of ``n_particles`` over all lengths (default: one per Numba thread;
    ``threads`` caps the threads they share, default all).  Their
    estimates ``Z-hat_j`` give the length law ``q-hat(j) ∝ exp(w_j) mean_r Z-hat_j^r``; a draw of length ``j`` picks
    run ``r`` with probability ``∝ Z-hat_j^r`` and one of the sentences that run resampled at ``j`` by its
    end-of-sentence weights.  This is sampling-importance-resampling: exact as the particles grow, biased for a
    finite number -- but unlike Gibbs-type chains it proposes whole sentences word by word from the model's local
    law, so it reaches the high-weight sentences that TransMS chains never visit (fortunes: two-word names
    holding most of ``Z_2``), and the lambda update can push them down.  ``proposal`` (:data:`PROPOSALS`) picks the
    particles' proposal, ``trim`` the trimmed one's threshold.

    The draws' lengths follow the runs' ``Z-hat_j``, which are heavy-tailed: a run that finds one heavy sentence
    at a length pulls most of the batch to that length, onto that run's resampled copies of it (on fortunes, up to
    98 of 100 draws at one length in 1-5 of 40 batches; experiments/trf_lm/methods.md, "Why the guard fires").  More runs of
    fewer particles at the same total do not cure this (measured there); a fixed ``n_runs`` makes the draws
    independent of the thread count.
    """

    def __init__(self, features: SentenceFeatures, m: int, n_particles: int = 1000, n_runs: int | None = None,
                 proposal: str = "exact", threads: int | None = None, trim: float = TRIM) -> None:
        self.structure = _structure(features)
        self.proposal = _check_proposal(proposal)
        self.trim = _check_trim(trim)
        self.m = check_int(m, "m", low=1)
        self.n_particles = check_int(n_particles, "n_particles", low=1)
        self.n_runs = check_int(n_runs or numba.get_num_threads(), "n_runs", low=1)
        self.threads = None if threads is None else check_int(threads, "threads", low=1)

    def draw(self, lam, log_len_weight, n_samples: int, seed,
             strata: tuple[np.ndarray, np.ndarray] | None = None,
             known: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
        """``n_samples`` sentences (tokens ``(K, m)`` zero-padded, lengths ``(K,)``) and diagnostics: the smallest
        end-of-sentence ESS over lengths and runs, the SMC ``log Z-hat_j`` (key ``"log_z"``) and the length law
        ``q-hat(j)`` the draws' lengths follow (key ``"length_law"``) and the wall seconds of the SMC runs (key
        ``"smc_seconds"``; the rest of a training iteration is the serial work around them).

        ``strata = (group, share)`` allots the lengths instead of drawing them: ``group[j - 1]`` is the stratum of
        length ``j`` and stratum ``s`` gets ``share[s]`` of the draws (:func:`_allot`), each of them a length of
        ``s`` drawn by ``q-hat`` within ``s``.  AugSA's batch mean of ``(pi_j / pi0_j) f`` with ``share = pi0``
        then estimates ``sum_j pi_j p_j[f]``, the model's expectation (Eq. 6), whatever ``zeta`` is, and a length
        whose ``Z-hat_j`` one run over-estimates many times no longer takes most of the batch (which, measured,
        did not train a better model: experiments/trf_lm/methods.md, "Stratified lengths").

        ``known = (tokens, lengths, log_weight)``: distinct sentences (tokens ``(n, >= their length)``) whose
        ``lambda . f(x)`` is known (:class:`trf.lm.known.KnownSentences`), weighed exactly instead of found by
        chance.  At length ``j`` with known set ``S_j``, ``Z_j = W(S_j) + Z_j(rest)``: ``W(S_j)`` is their exact sum
        and each run's estimate with the known sentences' end weights set to 0 is unbiased for the rest (as in
        :func:`smc_log_z`; until session 32 it was ``Z-hat_j`` times the share of the run's kept sentences outside
        ``S_j``, whose expectation given the particles this is: no noisier, and never 0 for want of a kept one).
        The lengths follow ``q-hat(j) ∝ exp(w_j) (W(S_j) + mean_r Z-hat_j^r(rest))``; a draw of length ``j`` is one
        of the run's kept sentences, resampled by those rest weights (run ``∝`` its rest estimate), and the known mass
        enters Rao-Blackwellised:
        ``info["weight"][k] = 1 - P_j`` for the draw (``P_j = W(S_j) / Z_j``, the known share of its length) and
        ``info["known_weight"][i] = n_j P_j exp(log_weight[i]) / W(S_j)`` for known sentence ``i`` of length
        ``j`` drawn ``n_j`` times -- AugSA's batch sum is then ``sum_k weight[k] f(x_k) + sum_i known_weight[i]
        f(s_i)``, whose expectation is the plain batch's, with no run needed to stumble on a known heavy sentence.
        Not with ``strata``.
        """
        n_samples = check_int(n_samples, "n_samples", low=1)
        if known is not None and strata is not None:
            raise ValueError("known sentences and strata cannot be combined")
        rng = np.random.default_rng(seed)
        bundle, shift = self.structure.bundle(np.asarray(lam, dtype=np.float64), self.proposal, self.trim)
        seeds = kernel_seeds(rng, self.n_runs)
        out = np.zeros((self.n_runs, self.m))
        ess = np.zeros((self.n_runs, self.m))
        keep = np.zeros((self.n_runs, self.m, n_samples, self.m), dtype=np.int64)
        mass = None if known is None else known_mass(known, self.m)
        rest = None if mass is None else np.zeros((self.n_runs, self.m))
        seconds = _run_all(bundle, self.n_particles, self.m, seeds, out, ess, keep, self.threads,
                           known=NO_KNOWN if mass is None else mass.table, rest=rest)
        lengths_all = np.arange(1, self.m + 1)
        # non-finite estimates (weights overflowing while lambda diverges, before the trainer's guard sees it) carry
        # no information: they get weight 0, and with no finite weight left every length and run is equally likely
        log_z_runs = np.where(np.isfinite(out), out + lengths_all * shift, -np.inf)
        log_known = np.full(self.m, -np.inf) if mass is None else mass.log_known
        # Z-hat_j outside S_j: the kept sentences are draws of it (SMCOutput.log_rest)
        log_rest_runs = log_z_runs if rest is None else np.where(np.isfinite(rest), rest + lengths_all * shift, -np.inf)
        log_z = np.logaddexp(log_known, logsumexp(log_rest_runs, axis=0) - np.log(self.n_runs))
        log_law = np.asarray(log_len_weight, float) + log_z
        law = _probabilities(log_law)
        if strata is None:
            lengths = rng.choice(lengths_all, size=n_samples, p=law)
        else:
            group, share = (np.asarray(a) for a in strata)
            if (group.shape != (self.m,) or share.ndim != 1 or group.min() < 0 or group.max() >= share.size
                    or np.any(share < 0) or not np.isclose(share.sum(), 1.0)
                    or np.any((np.bincount(group, minlength=share.size) == 0) & (share > 0))):
                raise ValueError(f"strata must be (group of each length 1..{self.m}, shares of the groups summing to "
                                 f"1, each group with a share holding a length), got shapes {group.shape} and "
                                 f"{share.shape}")
            counts = _allot(share, n_samples, rng)
            lengths = np.concatenate([rng.choice(lengths_all[group == g], size=c, p=_probabilities(log_law[group == g]))
                                      for g, c in enumerate(counts) if c > 0])
        tokens = np.zeros((n_samples, self.m), dtype=np.int64)
        with np.errstate(over="ignore", invalid="ignore"):
            known_share = np.where(np.isfinite(log_known), np.exp(log_known - log_z), 0.0)
        for j in np.unique(lengths):
            at = np.flatnonzero(lengths == j)
            if known_share[j - 1] < 1.0:
                tokens[at, :j] = _pick_sentences(log_rest_runs[:, j - 1], keep[:, j - 1], j, at.size, rng)
        info = {"smc_min_ess": float(ess.min()), "log_z": log_z, "length_law": law, "smc_seconds": seconds}
        if known is not None:
            _, known_j, known_log = _known_arrays(known)
            n_j = np.bincount(lengths, minlength=self.m + 1)[1:]
            info["weight"] = 1.0 - known_share[lengths - 1]
            info["known_weight"] = np.zeros(known_j.size)
            inside = known_j <= self.m
            j = known_j[inside]
            info["known_weight"][inside] = n_j[j - 1] * known_share[j - 1] * np.exp(known_log[inside] - log_known[j - 1])
            info["known_share"] = known_share
        return tokens, lengths.astype(np.int64), info

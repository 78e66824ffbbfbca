"""The dense-table (word) backend of TransMS: Numba operations for :mod:`trf._transms_skeleton`.  Private.

A word ``x[:L]`` lives 0-based in the workspace buffer ``x`` (room for ``L + 1`` symbols).  Its
features are the character n-grams of :mod:`trf._word_kernels` read from dense weights ``weights``.
The appended symbol is drawn from ``g(u | x^k) ∝ exp(lambda . f(x^k u))`` (Eq. 22), so the feature
part of Eq. (20) is ``log sum_u exp(lambda . f(x^k u) - lambda . f(x^k))`` and that of Eq. (21) its
negative at ``x^{k-1}``; the move within a length is a systematic-scan Gibbs sweep (Table 1, step II).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from samplers._kernels import categorical_from_logits, logsumexp_1d

from . import _transms_skeleton as skeleton
from ._word_kernels import append_deltas, gibbs_sweep


class WordModel(NamedTuple):
    """Dense word-TRF tables: ``weights`` (dense lambda over the n-gram table), alphabet size, max length."""

    weights: np.ndarray
    V: int
    m: int


class WordWork(NamedTuple):
    """One chain's word ``x[:L]`` (buffer of m + 1) and per-symbol logits (V,)."""

    x: np.ndarray
    logits: np.ndarray


@skeleton.implements(skeleton.new_workspace, WordModel)
def _new_workspace(model):
    return WordWork(np.zeros(model.m + 1, dtype=np.int64), np.empty(model.V))


@skeleton.implements(skeleton.load_chain, WordModel)
def _load_chain(model, work, tokens_row, length):
    for i in range(length):
        work.x[i] = tokens_row[i]


@skeleton.implements(skeleton.store_chain, WordModel)
def _store_chain(model, work, length, out_row):
    for i in range(length):
        out_row[i] = work.x[i]


@skeleton.implements(skeleton.propose_append, WordModel)
def _propose_append(model, work, k):
    """Draw ``u ~ g(. | x^k)`` (Eq. 22) into ``x[k]``; the feature part of Eq. (20) is the log normaliser of g."""
    append_deltas(model.weights, model.V, work.x, k, work.logits)
    log_norm = logsumexp_1d(work.logits)
    work.x[k] = categorical_from_logits(work.logits)
    return log_norm


@skeleton.implements(skeleton.reject_append, WordModel)
def _reject_append(model, work, k):
    pass                                         # positions >= k are not part of the word


@skeleton.implements(skeleton.removal_log_ratio, WordModel)
def _removal_log_ratio(model, work, k):
    """Minus the log normaliser of ``g(. | x^{k-1})`` (Eq. 21 with Eq. 22)."""
    last = work.x[k - 1]
    append_deltas(model.weights, model.V, work.x, k - 1, work.logits)
    work.x[k - 1] = last
    return -logsumexp_1d(work.logits)


@skeleton.implements(skeleton.remove_last, WordModel)
def _remove_last(model, work, k):
    pass


@skeleton.implements(skeleton.within_length_move, WordModel)
def _within_length_move(model, work, length, stats):
    gibbs_sweep(model.weights, model.V, work.x, length, work.logits, 1.0)

"""Baselines of the word-morphology experiment (Sec. 6): IIS and WB3 (the third, quasi-Newton, is the
exact maximum-likelihood fit :func:`trf.exact.fit_quasi_newton`).

* :func:`fit_iis` -- improved iterative scaling (Della Pietra et al. 1997) with expectations from K
  sampled words per iteration, sampled as footnote 11 says: a length from ``n_j / n``, then a Gibbs
  sweep on the last word of that length.
* :func:`fit_wb3` -- interpolated Witten-Bell character trigram with an end symbol (``trf.ngram``).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from samplers.rng import as_generator
from samplers.validation import check_float, check_int
from trf.data import WordData
from trf.features import FeatureSet
from trf.ngram import WittenBell
from trf.transms import ChainState, transms


def iis_step(features: FeatureSet, words: WordData, mean: np.ndarray, *, max_step: float = 1.0,
             newton_iters: int = 30) -> np.ndarray:
    """One IIS update delta from sampled words (their mean feature counts estimate ``p_lambda[f]``).

    Solves ``K^-1 sum_k f_i(x_k) exp(delta_i f#(x_k)) = p~[f_i]`` for every feature i by Newton's
    method on the log of the left side (f# = number of active features of a word), with |delta_i|
    bounded by ``max_step``.  A feature absent from the sample has no finite solution (delta = +inf);
    it is left unchanged this iteration.
    """
    K = len(words)
    f_sharp = features.scores(np.ones(features.d), words)        # number of active features per word
    levels = np.unique(f_sharp)
    A = np.stack([features.counts(words, (f_sharp == s) / K) for s in levels])
    seen = A.sum(axis=0) > 0
    target = np.log(np.maximum(mean, 1e-300))
    delta = np.zeros(features.d)
    with np.errstate(divide="ignore"):
        logA = np.log(A[:, seen])
    d = np.zeros(int(seen.sum()))
    for _ in range(newton_iters):
        e = logA + d[None, :] * levels[:, None]
        mx = e.max(axis=0)
        w = np.exp(e - mx)
        h = mx + np.log(w.sum(axis=0)) - target[seen]
        slope = (w * levels[:, None]).sum(axis=0) / w.sum(axis=0)
        d = np.clip(d - h / slope, -max_step, max_step)
    delta[seen] = d
    return delta


def fit_iis(features: FeatureSet, train: WordData, *, iters: int = 1000, n_samples: int = 100,
            seed=None, max_step: float = 1.0,
            callback: Callable[[int, np.ndarray], None] | None = None) -> tuple[np.ndarray, dict]:
    """IIS with sampled expectations (K words per iteration, lengths from ``n_j / n``, Gibbs moves).

    Returns
    -------
    lam : ndarray, shape (d,)
    info : dict with ``seconds``.
    """
    iters = check_int(iters, "iters", low=1)
    n_samples = check_int(n_samples, "n_samples", low=1)
    max_step = check_float(max_step, "max_step", low=0.0, low_open=True)
    rng = as_generator(seed)
    m, V = train.m, features.V
    n_j = train.length_counts()
    pi = n_j / n_j.sum()
    mean = features.counts(train) / len(train)
    tokens = np.zeros((m, m + 1), dtype=np.int32)
    tokens[:, :m] = rng.integers(0, V, size=(m, m))
    state = ChainState(tokens, np.arange(1, m + 1, dtype=np.int64))   # chain j-1 holds the last word of length j
    log_len = np.zeros(m)
    lam = np.zeros(features.d)
    start = time.perf_counter()
    for t in range(1, iters + 1):
        schedule = rng.choice(m, size=n_samples, p=pi)
        state, words, _ = transms(features, lam, log_len, state, n_samples, rng, jump=False, schedule=schedule)
        lam = lam + iis_step(features, words, mean, max_step=max_step)
        if callback is not None:
            callback(t, lam)
    return lam, {"seconds": time.perf_counter() - start}


def fit_wb3(train: WordData):
    """Interpolated Witten-Bell character trigram (the paper's WB3) over the words of ``train``."""
    words = [train.tokens[train.offsets[i]:train.offsets[i + 1]] for i in range(len(train))]
    return WittenBell(order=3).fit(words, train.alphabet.size)


def wb3_nll(model, data: WordData) -> float:
    """Mean NLL per word (nats, end symbol included) of a WB3 model."""
    words = [data.tokens[data.offsets[i]:data.offsets[i + 1]] for i in range(len(data))]
    return float(-np.mean(model.log_prob(words)))

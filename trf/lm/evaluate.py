"""Evaluation of sentence TRF LMs: AIS checks of the normalisers, interpolation, rescoring speed.

* :func:`ais_log_z` -- AIS estimate of ``log Z_j`` at a fixed length (Sec. 7, "separate" AIS): the
  base is the uniform law over ``V^j`` sentences (all lambda zeroed, ``log Z_0 = j log V``), the
  transitions are class-based Markov moves without jumps at ``beta * lambda`` (via
  :func:`samplers.ais.run_ais`).
* :func:`smooth_log_z` -- linear regression of the separate estimates over lengths ("Sep Sm AIS").
* :func:`ais_global` -- AIS over the trans-dimensional space for the single normaliser of model (3)
  given the AugSA zeta ("Global AIS"): base ``pi_j V^-j`` (normaliser 1), target
  ``pi_j exp(lambda . f - zeta_j - log Z_1)``; its log is 0 when the AugSA zeta are self-consistent.
* :func:`interpolate_linear` / :func:`interpolate_loglinear` -- combine sentence log-probabilities
  with another model's (the linear mixture stays normalised; the log-linear one does not and is for
  rescoring only).
* :func:`scoring_speed` -- sentences per second of ``log_prob`` on one core (n-best rescoring).
"""

from __future__ import annotations

import time

import numpy as np

from samplers.ais import run_ais
from samplers.rng import kernel_seed
from samplers.validation import as_float_array, check_float, check_int
from trf.lm.corpus import EncodedCorpus
from trf.lm.model import SentenceTRF
from trf.lm.transms import ChainState, SentenceSampler
from trf.ngram import perplexity

__all__ = ["ais_log_z", "smooth_log_z", "ais_global", "ais_check", "interpolate_linear", "interpolate_loglinear",
           "log_prob_with_log_z", "tune_linear_weight", "scoring_speed"]


def _states_corpus(state: ChainState) -> EncodedCorpus:
    lengths = state.lengths
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    mask = np.arange(state.tokens.shape[1])[None, :] < lengths[:, None]
    return EncodedCorpus(state.tokens[mask].astype(np.int32), offsets.astype(np.int64))


def ais_log_z(model: SentenceTRF, j: int, *, n_temperatures: int = 1000, n_chains: int = 10, seed=None,
              sweeps: int = 1, parallel: bool = False):
    """AIS estimate of ``log Z_j(lambda)`` (an :class:`samplers.ais.AISResult`)."""
    j = check_int(j, "j", low=1, high=model.m)
    sweeps = check_int(sweeps, "sweeps", low=1)
    feats = model.features
    sampler = SentenceSampler(feats, max(model.m, j))
    V = feats.n_words
    flat = np.zeros(sampler.m)

    def initial(n, rng):
        tokens = np.zeros((n, sampler.m), dtype=np.int64)
        tokens[:, :j] = rng.integers(0, V, size=(n, j))
        return ChainState(tokens, np.full(n, j, dtype=np.int64))

    def log_ratio(state):
        return feats.scores(_states_corpus(state), model.lam)

    def transition(state, beta, rng):
        new, _, _, _ = sampler.run(beta * model.lam, flat, state, sweeps, kernel_seed(rng), parallel=parallel,
                                   jump=False)
        return new

    return run_ais(initial, log_ratio, transition, n_temperatures=n_temperatures, n_chains=n_chains, seed=seed,
                   log_partition_start=j * np.log(V))


def smooth_log_z(lengths, log_z, stderr=None) -> np.ndarray:
    """Least-squares line through ``log Z_j`` over ``j`` ("Sep Sm AIS" of Sec. 7), weighted by 1/stderr^2."""
    j = as_float_array(lengths, "lengths", ndim=1)
    y = as_float_array(log_z, "log_z", ndim=1)
    if j.size != y.size or j.size < 2:
        raise ValueError("lengths and log_z need the same size, at least 2")
    weights = None if stderr is None else 1.0 / np.maximum(as_float_array(stderr, "stderr", ndim=1), 1e-3)
    slope, intercept = np.polyfit(j, y, 1, w=weights)
    return intercept + slope * j


def ais_global(model: SentenceTRF, *, n_temperatures: int = 1000, n_chains: int = 10, seed=None,
               parallel: bool = False):
    """AIS over lengths 1..m for the global normaliser of the TRF with the AugSA zeta (model (3)).

    Not defined here for models with the pooled sub-model of Sec. 5.4 (ValueError)."""
    if model.pooled:
        raise ValueError("global AIS is implemented for models without the pooled sub-model (max_length)")
    feats = model.features
    sampler = SentenceSampler(feats, model.m)
    V = feats.n_words
    log_pi = np.log(model.pi)
    j_idx = np.arange(1, model.m + 1)
    offset = model.zeta + model.log_z1() - j_idx * np.log(V)  # target minus base, apart from lambda . f

    def initial(n, rng):
        lengths = rng.choice(j_idx, size=n, p=model.pi)
        tokens = rng.integers(0, V, size=(n, model.m)).astype(np.int64)
        return ChainState(tokens, lengths.astype(np.int64))

    def log_ratio(state):
        return feats.scores(_states_corpus(state), model.lam) - offset[state.lengths - 1]

    def transition(state, beta, rng):
        lw = log_pi - j_idx * np.log(V) - beta * offset
        new, _, _, _ = sampler.run(beta * model.lam, lw, state, 1, kernel_seed(rng), parallel=parallel)
        return new

    return run_ais(initial, log_ratio, transition, n_temperatures=n_temperatures, n_chains=n_chains, seed=seed)


def ais_check(model: SentenceTRF, lengths=range(1, 11), *, n_temperatures: int = 1000, n_chains: int = 10,
              seed=None) -> dict:
    """Separate, smoothed and global AIS next to the AugSA normalisers (``zeta_j + log Z_1``).

    Returns a dict with ``per_length`` rows, ``global`` (log normaliser; None for a pooled model) and
    ``log_prob(corpus, which)`` giving sentence log-probabilities with ``which`` in {"augsa",
    "separate", "smoothed"}.
    """
    lengths = [check_int(j, "lengths[]", low=1, high=model.m) for j in lengths]
    rng = np.random.default_rng(seed)
    results = [ais_log_z(model, j, n_temperatures=n_temperatures, n_chains=n_chains, seed=rng) for j in lengths]
    separate = np.array([r.log_partition for r in results])
    stderr = np.array([r.stderr for r in results])
    smoothed = smooth_log_z(lengths, separate, stderr) if len(lengths) > 1 else separate
    augsa = np.array([model.zeta[j - 1] + model.log_z1() for j in lengths])
    glob = None if model.pooled else ais_global(model, n_temperatures=n_temperatures, n_chains=n_chains, seed=rng)
    table = {"augsa": augsa, "separate": separate, "smoothed": smoothed}

    def log_prob(corpus: EncodedCorpus, which: str) -> np.ndarray:
        if corpus.lengths.max() > max(lengths):
            raise ValueError(f"AIS covers lengths up to {max(lengths)}; corpus has longer sentences")
        log_z = np.full(model.m, np.nan)
        log_z[np.asarray(lengths) - 1] = table[which]
        return log_prob_with_log_z(model, corpus, log_z)

    rows = [{"j": j, "augsa": float(a), "separate": float(s), "smoothed": float(m), "stderr": float(e)}
            for j, a, s, m, e in zip(lengths, augsa, separate, smoothed, stderr)]
    return {"per_length": rows, "global": None if glob is None else float(glob.log_partition),
            "global_stderr": None if glob is None else float(glob.stderr), "log_prob": log_prob}


def log_prob_with_log_z(model: SentenceTRF, corpus: EncodedCorpus, log_z) -> np.ndarray:
    """Sentence log-probabilities with ``log Z_j = log_z[j - 1]`` in place of the AugSA ``zeta_j + log Z_1``
    (e.g. AIS estimates); ``log_z`` has shape (m,)."""
    log_z = as_float_array(log_z, "log_z", ndim=1, finite=False)
    if log_z.shape != (model.m,):
        raise ValueError(f"log_z must have shape ({model.m},), got {log_z.shape}")
    j = corpus.lengths - 1
    return model.log_prob(corpus) + (model.zeta + model.log_z1())[j] - log_z[j]


def tune_linear_weight(log_p_a, log_p_b, n_predicted: int, weights=None) -> float:
    """The weight of model a in :func:`interpolate_linear` minimising perplexity on held-out sentences
    (grid 0.05, 0.10, ..., 0.95 by default)."""
    weights = np.round(np.linspace(0.05, 0.95, 19), 2) if weights is None else np.asarray(weights, dtype=float)
    ppl = [perplexity(interpolate_linear(log_p_a, log_p_b, w), n_predicted) for w in weights]
    return float(weights[int(np.argmin(ppl))])


def _check_pair(log_p_a, log_p_b, weight):
    weight = check_float(weight, "weight", low=0.0, high=1.0)
    a = as_float_array(log_p_a, "log_p_a", ndim=1, finite=False)
    b = as_float_array(log_p_b, "log_p_b", ndim=1, finite=False)
    if a.shape != b.shape:
        raise ValueError(f"log_p_a and log_p_b must have the same shape, got {a.shape} and {b.shape}")
    return a, b, weight


def interpolate_linear(log_p_a, log_p_b, weight: float) -> np.ndarray:
    """``log(weight p_a + (1 - weight) p_b)`` per sentence: a normalised mixture, valid for perplexity."""
    a, b, weight = _check_pair(log_p_a, log_p_b, weight)
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log(weight) + a, np.log1p(-weight) + b)


def interpolate_loglinear(log_p_a, log_p_b, weight: float) -> np.ndarray:
    """``weight log p_a + (1 - weight) log p_b``: unnormalised scores for n-best rescoring only."""
    a, b, weight = _check_pair(log_p_a, log_p_b, weight)
    return weight * a + (1.0 - weight) * b


def scoring_speed(model: SentenceTRF, corpus: EncodedCorpus, repeats: int = 3) -> float:
    """Best-of-``repeats`` sentences per second of ``model.log_prob`` (one thread)."""
    model.log_prob(corpus)  # compile / warm up and cache log Z_1
    best = np.inf
    for _ in range(check_int(repeats, "repeats", low=1)):
        start = time.perf_counter()
        model.log_prob(corpus)
        best = min(best, time.perf_counter() - start)
    return len(corpus) / best

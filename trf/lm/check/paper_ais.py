"""The AIS variants of Sec. 7 beside the AugSA normalisers: separate AIS per length (:func:`ais_log_z`), its
least-squares smoothing over lengths ("Sep Sm AIS", :func:`smooth_log_z`) and AIS over the trans-dimensional space
for the single normaliser of model (3) given the AugSA zeta ("Global AIS", :func:`ais_global`): base
``pi_j V^-j`` (normaliser 1), target ``pi_j exp(lambda . f - zeta_j - log Z_1)``; its log is 0 when the AugSA zeta
are self-consistent."""

from __future__ import annotations

import numpy as np

from samplers.ais import AISResult, run_ais
from samplers.rng import kernel_seed
from samplers.validation import as_float_array, check_int
from trf.lm.check.estimates import ais_log_z, log_prob_with_log_z, states_corpus
from trf.lm.corpus import EncodedCorpus
from trf.lm.model import SentenceTRF
from trf.lm.transms import ChainState, SentenceSampler

__all__ = ["smooth_log_z", "ais_global", "ais_check"]


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
               parallel: bool = False) -> AISResult:
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
        return feats.scores(states_corpus(state), model.lam) - offset[state.lengths - 1]

    def transition(state, beta, rng):
        lw = log_pi - j_idx * np.log(V) - beta * offset
        new, _, _, _ = sampler.run(beta * model.lam, lw, state, 1, kernel_seed(rng), parallel=parallel)
        return new

    return run_ais(initial, log_ratio, transition, n_temperatures=n_temperatures, n_chains=n_chains, seed=seed)


def ais_check(model: SentenceTRF, lengths=range(1, 11), *, n_temperatures: int = 1000, n_chains: int = 10,
              seed=None, base: str = "unigram") -> dict:
    """Separate, smoothed and global AIS next to the AugSA normalisers (``zeta_j + log Z_1``).

    Returns a dict with ``per_length`` rows, ``global`` (log normaliser; None for a pooled model) and
    ``log_prob(corpus, which)`` giving sentence log-probabilities with ``which`` in {"augsa",
    "separate", "smoothed"}.  ``base`` is the AIS base law (:func:`ais_log_z`).
    """
    lengths = [check_int(j, "lengths[]", low=1, high=model.m) for j in lengths]
    rng = np.random.default_rng(seed)
    results = [ais_log_z(model, j, n_temperatures=n_temperatures, n_chains=n_chains, seed=rng, base=base,
                         parallel=True) for j in lengths]
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

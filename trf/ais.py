"""Annealed importance sampling of ``log Z_j`` per length for word TRFs (Neal 2001; Sec. 7 of the paper).

For each length j, particles start from the uniform distribution over words (``Z_j(0) = V^j``) and
move through ``p_beta(x) ∝ exp(beta lambda . f(x))`` along a temperature ladder with one Gibbs sweep
per temperature; the mean importance weight is an unbiased estimate of ``Z_j / V^j``.  The AIS loop is
:func:`samplers.ais.run_ais` (the one used by every model family); this module supplies the word TRF's
batch kernels (scores and Gibbs sweeps in Numba) as its callbacks.
"""

from __future__ import annotations

import numpy as np

from samplers.ais import run_ais
from samplers.rng import as_generator, kernel_seed
from samplers.validation import check_int

from . import _word_kernels as K
from .features import FeatureSet


def ais_log_partition(features: FeatureSet, lam: np.ndarray, m: int, n_temperatures: int, n_particles: int = 10,
                      seed=None) -> tuple[np.ndarray, np.ndarray]:
    """AIS estimates of ``log Z_j`` for j = 1..m with linear temperatures.

    Parameters
    ----------
    features : FeatureSet
        The word model's n-gram features.
    lam : ndarray, shape (d,)
        Feature weights.
    m : int
        Maximum length.
    n_temperatures : int
        Number of intermediate distributions (>= 1); the ladder is ``linspace(0, 1, n + 1)``.
    n_particles : int
        Independent AIS runs per length.
    seed : int, Generator or None
        Seed of the AIS runs.

    Returns
    -------
    log_z : ndarray, shape (m,)
        ``log mean_p exp(w_p) + j log V``.
    log_weight_se : ndarray, shape (m,)
        Delta-method standard error of ``log_z`` (std of the normalised weights / sqrt(P)).
    """
    lam = features.check_lambda(lam)
    m = check_int(m, "m", low=1)
    n_temperatures = check_int(n_temperatures, "n_temperatures", low=1)
    n_particles = check_int(n_particles, "n_particles", low=1)
    w = features.dense_weights(lam)
    V = int(features.V)
    gen = as_generator(seed)
    log_z = np.empty(m)
    se = np.empty(m)
    for j in range(1, m + 1):
        def initial(n, rng, j=j):
            x = np.zeros((n, j + 1), dtype=np.int32)
            x[:, :j] = rng.integers(0, V, size=(n, j))
            return x

        def log_ratio(x, j=j):
            out = np.empty(x.shape[0])
            K.word_scores_batch(w, V, x, j, out)
            return out

        def transition(x, beta, rng, j=j):
            x = x.copy()
            K.gibbs_sweeps_batch(w, V, x, j, beta, kernel_seed(rng))
            return x

        res = run_ais(initial, log_ratio, transition, n_temperatures=n_temperatures + 1, n_chains=n_particles,
                      seed=gen, log_partition_start=j * np.log(V))
        log_z[j - 1] = res.log_partition
        se[j - 1] = res.stderr if n_particles > 1 else np.inf
    return log_z, se

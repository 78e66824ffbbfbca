"""Annealed importance sampling of ``log Z_j`` per length for word TRFs (Neal 2001; Sec. 7 of the paper).

For each length j, particles start from the uniform distribution over words (``Z_j(0) = V^j``) and
move through ``p_beta(x) ∝ exp(beta lambda . f(x))`` along a temperature ladder with one Gibbs sweep
per temperature; the mean importance weight is an unbiased estimate of ``Z_j / V^j``.  A small
TRF-specific version (``samplers.ais`` targets pairwise MRFs).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from samplers.rng import kernel_seeds
from samplers.validation import check_int

from . import _word_kernels as K
from .features import FeatureSet


def ais_log_partition(features: FeatureSet, lam: np.ndarray, m: int, n_temperatures: int, n_particles: int = 10,
                      seed=None) -> tuple[np.ndarray, np.ndarray]:
    """AIS estimates of ``log Z_j`` for j = 1..m with linear temperatures.

    Parameters
    ----------
    features : FeatureSet
    lam : ndarray, shape (d,)
    m : int
        Maximum length.
    n_temperatures : int
        Number of intermediate distributions (>= 1); the ladder is ``linspace(0, 1, n + 1)``.
    n_particles : int
        Independent AIS runs per length.
    seed : int, Generator or None

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
    betas = np.linspace(0.0, 1.0, n_temperatures + 1)
    seeds = kernel_seeds(seed, m)
    log_z = np.empty(m)
    se = np.empty(m)
    lw = np.empty(n_particles)
    for j in range(1, m + 1):
        K.ais_run(w, features.V, j, betas, n_particles, int(seeds[j - 1]), lw)
        log_mean = logsumexp(lw) - np.log(n_particles)
        log_z[j - 1] = log_mean + j * np.log(features.V)
        ratio = np.exp(lw - log_mean)
        se[j - 1] = ratio.std(ddof=1) / np.sqrt(n_particles) if n_particles > 1 else np.inf
    return log_z, se

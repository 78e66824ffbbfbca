"""Numba kernel of AugSA's lambda step (see :mod:`trf.augsa`).  Private.

One pass over the ``d`` weights instead of NumPy's ten (each a temporary of ``d`` floats: about 10 ms a step for
the 3M features of the full sentence set); the same operations in the same order, so the same bits.
"""

from __future__ import annotations

import numpy as np

from samplers._jit import jit


@jit
def lambda_step(arrays, k, l2, gamma, clip, moment_bound, lo, hi):
    """``out[i] = lam[i] + d_i`` for ``i`` in ``lo:hi`` (``arrays = (lam, mean, feature_sum, sigma, out)``), with Eq.
    (16) / (38)'s
    ``d_i = gamma / (sigma_i + l2) * (mean_i - feature_sum_i / k - l2 lam_i)`` bounded to ``[-clip, clip]``
    (``clip = inf``: none) and, with ``moment_bound``, from below by ``log(mean_i / b_i)`` where the batch mean
    ``b_i = feature_sum_i / k`` exceeds ``mean_i > 0`` (:attr:`trf.augsa.AugSAConfig.moment_bound` says why); returns how
    many ``out[i]`` are not finite and how many steps the moment bound shortened."""
    # the block as slices, indexed from 0: an index the compiler knows is not negative needs no wraparound test,
    # and the loop is vectorised (3.6x faster on 3M weights; the same operations, so the same bits)
    lam, mean, feature_sum, sigma, out = arrays
    lam, mean, feature_sum, sigma, out = lam[lo:hi], mean[lo:hi], feature_sum[lo:hi], sigma[lo:hi], out[lo:hi]
    bad = 0
    bounded = 0
    for i in range(hi - lo):
        grad = mean[i] - feature_sum[i] / k - l2 * lam[i]
        d = gamma / (sigma[i] + l2) * grad
        if moment_bound and d < 0.0 and mean[i] > 0.0:
            b = feature_sum[i] / k
            if b > mean[i]:
                floor = np.log(mean[i] / b)
                if d < floor:
                    d = floor
                    bounded += 1
        if d < -clip:
            d = -clip
        elif d > clip:
            d = clip
        x = lam[i] + d
        out[i] = x
        bad += not np.isfinite(x)
    return bad, bounded

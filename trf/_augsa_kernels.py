"""Numba kernels of AugSA's lambda step and sentence-move bound (see :mod:`trf.augsa`).  Private.

The lambda step is one pass over the ``d`` weights instead of NumPy's ten (each a temporary of ``d`` floats: about
10 ms a step for the 3M features of the full sentence set), and the draws' moves one pass over the batch's firings;
the same operations in the same order as NumPy's, so the same bits.
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


@jit
def sentence_moves(old, new, draw, feature, out):
    """``out[d]``: the move ``sum_h |new - old|[feature[h]]`` of each draw ``d`` over its firings ``(draw[h],
    feature[h])``, added in their order from 0 (``np.bincount``'s sums, bit for bit, without its two gathered
    temporaries)."""
    out[:] = 0.0
    for h in range(np.uint64(draw.size)):
        f = np.uint64(feature[h])
        out[np.uint64(draw[h])] += abs(new[f] - old[f])

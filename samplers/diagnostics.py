"""MCMC diagnostics for chains shaped (n_chains, n_draws): effective sample size, split R-hat and
Monte Carlo standard error.

Implements Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), "Rank-normalization, folding,
and localization: an improved R-hat for assessing convergence of MCMC" (Bayesian Analysis 16(2)),
the same definitions as Stan and ArviZ (``arviz_stats``, which the tests use as an oracle when it is
installed; it is not a dependency):

* autocorrelations combine within-chain autocovariances (FFT) and the between-chain variance
  (Eq. 10 there); the integrated autocorrelation time ``tau = -1 + 2 sum_k P_k`` sums Geyer's (1992)
  pairs ``P_k = rho_2k + rho_2k+1`` while positive, made monotone (initial monotone sequence,
  Eq. 11); ``ESS = n_chains n_draws / tau``;
* "bulk" quantities use split chains and rank-normalised draws (Eq. 14); R-hat is the maximum of the
  bulk R-hat and the R-hat of the folded draws ``|x - median|`` (Sec. 4.2).

Degenerate cases (STYLE 12): NaN anywhere gives NaN; a chain set with zero variance has ESS 0,
MCSE 0 and R-hat NaN (undefined).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from .validation import as_float_array

ESS_METHODS = ("bulk", "mean")


def _as_chains(chains: Any) -> np.ndarray:
    """Validate and reshape to (n_chains, n_draws); 1-D input is one chain."""
    arr = as_float_array(chains, "chains", finite=False)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"chains must have shape (n_chains, n_draws) or (n_draws,), got {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < 4:
        raise ValueError(f"chains must hold at least one chain of at least 4 draws, got shape {arr.shape}")
    if np.any(np.isinf(arr)):
        raise ValueError("chains must not contain infinite values")
    return arr


def _degenerate(arr: np.ndarray) -> bool:
    """True for constant input (every draw equal)."""
    return bool(np.all(arr == arr.flat[0]))


def split_chains(chains: np.ndarray) -> np.ndarray:
    """Split each chain into halves (dropping the middle draw when n_draws is odd): (2 n_chains, n_draws // 2)."""
    half = chains.shape[1] // 2
    return np.concatenate([chains[:, :half], chains[:, chains.shape[1] - half:]], axis=0)


def rank_normalize(chains: np.ndarray) -> np.ndarray:
    """Normal scores of the pooled ranks, ``Phi^-1((r - 3/8) / (S + 1/4))`` (average ranks for ties)."""
    ranks = stats.rankdata(chains, method="average").reshape(chains.shape)
    return stats.norm.ppf((ranks - 0.375) / (chains.size + 0.25))


def autocovariance(chains: np.ndarray) -> np.ndarray:
    """Biased (divide by n) autocovariance of each chain at lags 0 .. n-1 via FFT, shape like ``chains``."""
    n = chains.shape[1]
    centred = chains - chains.mean(axis=1, keepdims=True)
    size = 1 << int(2 * n - 1).bit_length()
    spec = np.fft.rfft(centred, n=size, axis=1)
    return np.fft.irfft(spec * np.conj(spec), n=size, axis=1)[:, :n] / n


def _ess_raw(chains: np.ndarray) -> float:
    """ESS of (n_chains, n_draws) draws without splitting (Vehtari et al. 2021, Eqs. 10-11)."""
    m, n = chains.shape
    acov = autocovariance(chains)
    within = acov[:, 0].mean() * n / (n - 1.0)          # W: mean within-chain variance (ddof=1)
    var_plus = within * (n - 1.0) / n                   # var^+ (Eq. 3)
    if m > 1:
        var_plus += np.var(chains.mean(axis=1), ddof=1)
    if var_plus <= 0:
        return 0.0
    rho = 1.0 - (within - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    n_pairs = n // 2
    pairs = rho[: 2 * n_pairs].reshape(n_pairs, 2).sum(axis=1)
    nonpositive = np.flatnonzero(pairs[1:] <= 0.0)       # P_0 = 1 + rho_1 is always kept
    n_keep = 1 + (nonpositive[0] if nonpositive.size else n_pairs - 1)
    pairs = np.minimum.accumulate(pairs[:n_keep])        # initial monotone sequence
    tau = -1.0 + 2.0 * pairs.sum()
    tau = max(tau, 1.0 / np.log10(m * n))                # Stan/ArviZ cap for antithetic chains
    return float(m * n / tau)


def ess(chains: Any, method: str = "bulk") -> float:
    """Effective sample size of chains shaped (n_chains, n_draws) (or one chain, shape (n_draws,)).

    Parameters
    ----------
    chains : array_like, shape (n_chains, n_draws) or (n_draws,)
        Draws of one scalar quantity, ``n_draws >= 4``.
    method : {"bulk", "mean"}
        ``"bulk"``: ESS of split, rank-normalised chains (Vehtari et al. 2021, Sec. 4.1; ArviZ's
        default).  ``"mean"``: ESS of split chains on the original scale, the right one for the
        standard error of a mean.

    Returns
    -------
    float
        NaN if the input has NaN; 0.0 for constant input.

    Examples
    --------
    >>> import numpy as np
    >>> round(ess(np.random.default_rng(0).normal(size=(4, 1000))) / 4000, 1)
    1.0
    """
    if method not in ESS_METHODS:
        raise ValueError(f"method must be one of {ESS_METHODS}, got {method!r}")
    arr = _as_chains(chains)
    if np.any(np.isnan(arr)):
        return float("nan")
    if _degenerate(arr):
        return 0.0
    split = split_chains(arr)
    return _ess_raw(rank_normalize(split) if method == "bulk" else split)


def _rhat_raw(chains: np.ndarray) -> float:
    """Potential scale reduction of (n_chains, n_draws) draws (Vehtari et al. 2021, Eq. 4)."""
    n = chains.shape[1]
    between = n * np.var(chains.mean(axis=1), ddof=1)
    within = np.mean(np.var(chains, axis=1, ddof=1))
    if within <= 0:
        return float("nan")
    return float(np.sqrt(((n - 1.0) / n * within + between / n) / within))


def rhat(chains: Any) -> float:
    """Rank-normalised split R-hat: ``max(R-hat_bulk, R-hat_folded)`` (Vehtari et al. 2021, Sec. 4.2).

    Values near 1 indicate that the chains agree; above 1.01 (strict) or 1.1 (lenient) they do not.
    A single chain is split into halves, so it works too.  NaN for NaN or constant input.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(4, 1000))
    >>> rhat(x) < 1.01, rhat(x + np.arange(4)[:, None]) > 1.1
    (True, True)
    """
    arr = _as_chains(chains)
    if np.any(np.isnan(arr)) or _degenerate(arr):
        return float("nan")
    split = split_chains(arr)
    bulk = _rhat_raw(rank_normalize(split))
    folded = _rhat_raw(rank_normalize(np.abs(split - np.median(split))))
    return float(max(bulk, folded))


def mcse(chains: Any) -> float:
    """Monte Carlo standard error of the mean of all draws: ``sd / sqrt(ess(chains, "mean"))``.

    ``sd`` is the standard deviation of the pooled draws (ddof=1).  NaN for NaN input, 0.0 for
    constant input.
    """
    arr = _as_chains(chains)
    if np.any(np.isnan(arr)):
        return float("nan")
    if _degenerate(arr):
        return 0.0
    return float(np.std(arr, ddof=1) / np.sqrt(ess(arr, "mean")))

"""Draws of mcsa's samplers as ArviZ data (optional extra ``arviz``), so its diagnostics and plots apply.

* :func:`to_arviz` — any draws shaped (chains, draws, ...) (Gibbs chains from
  :meth:`samplers.models.PairwiseMRF.gibbs_sample`; exact i.i.d. draws of a Doeblin chain as one
  chain), with optional importance log weights (AIS) in ``sample_stats``;
* :func:`ais_to_arviz` — an :class:`samplers.ais.AISResult`'s log weights (one chain of draws) and
  final states, when given.

>>> import numpy as np
>>> from samplers.interop import to_arviz
>>> idata = to_arviz(np.zeros((2, 50, 3)), name="x")   # doctest: +SKIP
>>> idata.posterior["x"].shape                          # doctest: +SKIP
(2, 50, 3)
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _arviz():
    try:
        import arviz
    except ImportError:
        raise ImportError('ArviZ data needs arviz, which is not installed; install the extra with '
                          'pip install "mcsa[arviz]" (or pip install arviz)') from None
    return arviz


def to_arviz(draws: Any, *, name: str = "x", log_weights: Any = None) -> Any:
    """An ``arviz.InferenceData`` whose posterior group holds ``draws`` as variable ``name``.

    Parameters
    ----------
    draws : array_like, shape (n_chains, n_draws, ...) or (n_draws, ...) with ``one_chain``
        Numeric draws; Gibbs samples are (n_chains, n_sweeps, n_vars).  Pass i.i.d. draws (exact
        Doeblin draws, AIS final states) as one chain: ``draws[None]``.
    name : str
        Variable name in the posterior group.
    log_weights : array_like, shape (n_chains, n_draws), optional
        Importance log weights (AIS), stored as ``sample_stats["log_weight"]``.

    Returns
    -------
    arviz.InferenceData
    """
    az = _arviz()
    arr = np.asarray(draws)
    if arr.ndim < 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"draws must be shaped (n_chains, n_draws, ...), got shape {arr.shape}")
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"draws must be numeric, got dtype {arr.dtype}")
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    stats = None
    if log_weights is not None:
        lw = np.asarray(log_weights, dtype=np.float64)
        if lw.shape != arr.shape[:2]:
            raise ValueError(f"log_weights must have shape {arr.shape[:2]} (chains, draws), got {lw.shape}")
        stats = {"log_weight": lw}
    return az.from_dict(posterior={name: arr}, sample_stats=stats)


def ais_to_arviz(result: Any, states: Any = None, *, name: str = "x") -> Any:
    """An AIS run as ArviZ data: its log weights (one chain) in ``sample_stats["log_weight"]`` and, when
    ``states`` (n_chains_of_ais, ...) are given, the final states as the posterior's draws (properly
    weighted for the target with those weights, Neal 2001 Sec. 3); without states the posterior holds
    the normalised weights."""
    lw = np.asarray(result.log_weights, dtype=np.float64)
    if states is None:
        w = np.exp(lw - lw.max())
        return to_arviz((w / w.sum())[None, :], name="weight", log_weights=lw[None, :])
    states = np.asarray(states)
    if states.shape[0] != lw.shape[0]:
        raise ValueError(f"states must have one row per AIS chain ({lw.shape[0]}), got shape {states.shape}")
    return to_arviz(states[None], name=name, log_weights=lw[None, :])

"""The experiment's baselines: IIS (sampled expectations) and the WB3 character trigram, against the exact fit."""

from __future__ import annotations

import numpy as np

from experiments.trf_morph.baselines import fit_iis, fit_wb3, wb3_nll
from trf.data import Alphabet, encode_words
from trf.exact import fit_quasi_newton
from trf.model import TRF
from trf.transms import WordBackend


def _markov_words(n: int, seed: int) -> list[str]:
    """Words over 'abc' from a sticky first-order chain (lengths 1..4): far from the uniform lambda = 0 model."""
    rng = np.random.default_rng(seed)
    stay = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    words = []
    for length in rng.choice(4, size=n, p=[0.1, 0.2, 0.3, 0.4]) + 1:
        c = [rng.integers(3)]
        for _ in range(length - 1):
            c.append(rng.choice(3, p=stay[c[-1]]))
        words.append("".join("abc"[i] for i in c))
    return words


def test_iis_and_wb3_improve_on_lambda_zero_but_not_on_the_exact_fit():
    data = encode_words(_markov_words(3000, 7), Alphabet("abc"), 4)
    backend = WordBackend(data, n_chains=2)
    start = TRF(backend.features, backend.pi).nll(data)
    lam, _ = fit_iis(backend.features, data, iters=60, n_samples=100, seed=0)
    nll_iis = TRF(backend.features, backend.pi, lam).nll(data)
    _, info = fit_quasi_newton(backend.features, data)
    assert info["nll"] < nll_iis < start
    wb3 = fit_wb3(data)
    assert info["nll"] < wb3_nll(wb3, data) < start

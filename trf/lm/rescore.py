"""Combining and timing sentence log-probabilities: linear interpolation with another model (a normalised
mixture, valid for perplexity) and its weight tuned on held-out sentences, log-linear interpolation (unnormalised,
for n-best rescoring only) and the scoring speed of a model (sentences per second on one core)."""

from __future__ import annotations

import time

import numpy as np

from samplers.validation import as_float_array, check_float, check_int
from trf.lm.corpus import EncodedCorpus
from trf.lm.model import SentenceTRF
from trf.ngram import perplexity

__all__ = ["interpolate_linear", "interpolate_loglinear", "tune_linear_weight", "scoring_speed"]


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

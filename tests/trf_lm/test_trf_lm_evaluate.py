"""AIS checks of the normalisers against exact enumeration; interpolation; scoring."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from trf.lm.check import ais_check, ais_global, ais_log_z, log_prob_with_log_z, smooth_log_z
from trf.lm.corpus import EncodedCorpus, Vocabulary
from trf.lm.features import SentenceFeatures
from trf.lm.model import SentenceTRF, describe_excess, smoothed_length_law
from trf.lm.rescore import interpolate_linear, interpolate_loglinear, scoring_speed, tune_linear_weight

V, M = 3, 3


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(2)
    corpus = EncodedCorpus.from_sentences([rng.integers(0, V, size=rng.integers(1, M + 1)) for _ in range(40)])
    feats = SentenceFeatures.build(corpus, V, "w+c+cpw", word_class=np.array([0, 0, 1]))
    lam = rng.normal(scale=0.7, size=feats.n_features)
    log_z = np.array([np.logaddexp.reduce([feats.feature_vector(list(s)) @ lam
                                           for s in itertools.product(range(V), repeat=j)]) for j in range(1, M + 1)])
    vocab = Vocabulary(["<unk>", "a", "b"])
    return SentenceTRF(vocab, feats, smoothed_length_law(corpus.lengths, M), lam, log_z - log_z[0]), log_z


def test_ais_per_length_matches_exact_log_z(model):
    trf, log_z = model
    for j in (1, 2, 3):
        result = ais_log_z(trf, j, n_temperatures=60, n_chains=200, seed=j)
        # 4 delta-method standard errors plus the O(stderr^2) Jensen bias
        assert abs(result.log_partition - log_z[j - 1]) < 4 * result.stderr + result.stderr ** 2 + 1e-3


def test_global_ais_is_zero_for_exact_zeta_and_detects_wrong_zeta(model):
    trf, log_z = model
    good = ais_global(trf, n_temperatures=60, n_chains=300, seed=1)
    assert abs(good.log_partition) < 4 * good.stderr + good.stderr ** 2 + 1e-3
    wrong = SentenceTRF(trf.vocab, trf.features, trf.pi, trf.lam, trf.zeta - np.array([0.0, 1.0, 1.0]))
    bad = ais_global(wrong, n_temperatures=60, n_chains=300, seed=1)
    # true global log normaliser: log sum_j pi_j e^{delta_j} with delta = (0, 1, 1)
    expected = np.log(trf.pi @ np.exp([0.0, 1.0, 1.0]))
    assert abs(bad.log_partition - expected) < 4 * bad.stderr + bad.stderr ** 2 + 1e-3
    assert bad.log_partition > good.log_partition + 0.2


def test_ais_check_table_and_smoothing(model):
    trf, log_z = model
    check = ais_check(trf, lengths=[1, 2, 3], n_temperatures=30, n_chains=100, seed=0)
    rows = check["per_length"]
    np.testing.assert_allclose([r["augsa"] for r in rows], log_z, atol=1e-9)  # zeta here is exact
    corpus = EncodedCorpus.from_sentences([[0, 1], [2], [1, 1, 2]])
    np.testing.assert_allclose(check["log_prob"](corpus, "augsa"), trf.log_prob(corpus))
    np.testing.assert_allclose(smooth_log_z([1, 2, 3], [1.0, 2.0, 3.0]), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="longer"):
        check["log_prob"](EncodedCorpus.from_sentences([[0, 1, 2, 0]]), "augsa")


def test_exact_model_is_normalised_and_interpolation_keeps_it(model):
    trf, _ = model
    every = EncodedCorpus.from_sentences([s for j in range(1, M + 1) for s in itertools.product(range(V), repeat=j)])
    a = trf.log_prob(every)
    b = np.log(np.full(a.size, 1.0 / a.size))  # another normalised model: uniform over the same sentences
    assert np.exp(a).sum() == pytest.approx(1.0, abs=1e-10)
    assert np.exp(interpolate_linear(a, b, 0.3)).sum() == pytest.approx(1.0, abs=1e-10)
    np.testing.assert_allclose(interpolate_loglinear(a, b, 0.25), 0.25 * a + 0.75 * b)
    assert scoring_speed(trf, every, repeats=1) > 0
    with pytest.raises(ValueError, match="weight"):
        interpolate_linear(a, b, 1.5)
    with pytest.raises(ValueError, match="same shape"):
        interpolate_linear(a, b[:-1], 0.5)
    with pytest.raises(ValueError, match="longer than m"):
        trf.log_prob(EncodedCorpus.from_sentences([[0, 0, 0, 0]]))


def test_log_prob_with_other_normalisers_and_weight_tuning(model):
    trf, log_z = model
    corpus = EncodedCorpus.from_sentences([[0, 1], [2], [1, 1, 2]])
    np.testing.assert_allclose(log_prob_with_log_z(trf, corpus, log_z), trf.log_prob(corpus))   # zeta is exact
    shifted = log_prob_with_log_z(trf, corpus, log_z + np.array([0.0, 0.5, 0.0]))
    np.testing.assert_allclose(shifted - trf.log_prob(corpus), [-0.5, 0.0, 0.0], atol=1e-12)  # only length 2 moves
    with pytest.raises(ValueError, match="log_z"):
        log_prob_with_log_z(trf, corpus, log_z[:2])
    good, bad = np.log([0.5, 0.4, 0.3]), np.log([0.01, 0.02, 0.01])
    assert tune_linear_weight(good, bad, 6) == 0.95 and tune_linear_weight(bad, good, 6) == 0.05
    w = tune_linear_weight(good, good, 6, weights=[0.2, 0.7])
    assert w in (0.2, 0.7)


def _every_sentence():
    return EncodedCorpus.from_sentences([s for j in range(1, M + 1) for s in itertools.product(range(V), repeat=j)])


def test_log_prob_and_perplexity_with_a_sound_zeta_are_the_formula(model):
    """With zeta_j = log Z_j / Z_1 exact, ``log_prob`` is ``log pi_j + lambda . f(x) - log Z_j`` (Eq. 2) and raises
    nothing (every p <= 1); ``perplexity`` is ``exp(-sum log p / (words + sentences))`` and so at least 1."""
    trf, log_z = model
    every = _every_sentence()
    formula = np.array([np.log(trf.pi[len(s) - 1]) + trf.features.feature_vector(list(s)) @ trf.lam - log_z[len(s) - 1]
                        for s in every])
    np.testing.assert_allclose(trf.log_prob(every), formula, rtol=0, atol=1e-10)
    assert trf.perplexity(every) == pytest.approx(np.exp(-formula.sum() / (every.lengths.sum() + len(every))), rel=1e-12)
    assert trf.perplexity(every) >= 1.0
    # a zeta a little too low where no sentence comes near p = 1 still gives values, each shifted by that amount
    nudged = SentenceTRF(trf.vocab, trf.features, trf.pi, trf.lam, trf.zeta - np.array([0.0, 0.01, 0.0]))
    shift = nudged.log_prob(every) - formula
    np.testing.assert_allclose(shift, np.where(every.lengths == 2, 0.01, 0.0), rtol=0, atol=1e-10)


def test_a_zeta_too_low_at_one_length_is_an_error_naming_it(model):
    """zeta_2 lowered by 5 nats below log Z_2 / Z_1: sentences of length 2 get log p > 0, impossible for a discrete
    sentence.  ``log_prob`` and ``perplexity`` raise, naming the sentences, length 2 alone with the least excess
    (the largest log p there), the unchecked AugSA zeta and the checked function; ``allow_positive=True`` returns the
    values (exact + 5 at length 2, unchanged elsewhere)."""
    trf, log_z = model
    every = _every_sentence()
    low = SentenceTRF(trf.vocab, trf.features, trf.pi, trf.lam, trf.zeta - np.array([0.0, 5.0, 0.0]))
    raw = low.log_prob(every, allow_positive=True)
    np.testing.assert_allclose(raw - trf.log_prob(every), np.where(every.lengths == 2, 5.0, 0.0), rtol=0, atol=1e-10)
    bad = np.flatnonzero(raw > 0)
    assert bad.size and np.all(every.lengths[bad] == 2)  # the premise: only length 2 is impossible
    named = ", ".join(str(i) for i in bad[:8]) + (f" and {bad.size - 8} more" if bad.size > 8 else "")
    for call in (low.log_prob, low.perplexity):
        with pytest.raises(ValueError) as info:
            call(every)
        message = str(info.value)
        assert f"{bad.size} of {len(every)} sentences get a positive log-probability" in message
        assert f"sentences[{named}]" in message and f"up to {raw.max():+.2f} nats" in message
        assert f"length(s) {2} (>= {raw.max():.2f} nats), so every value" in message
        assert "AugSA's estimated zeta, unchecked" in message and "trf.lm.check.checked_perplexity" in message
        assert "mcsa trf eval" in message and "allow_positive=True" in message


def test_describe_excess_names_each_length_with_its_largest_value():
    """The one text for "which lengths, by how much" (``mcsa trf score``'s error, ``log_prob``'s, the AugSA
    perplexity's warning): the largest positive value per length, NaN and non-positive values ignored."""
    lengths = np.array([3, 5, 3, 2, 4])
    values = np.array([0.5, 1.25, 0.7, -1.0, np.nan])
    assert describe_excess(lengths, values) == "3 (>= 0.70 nats), 5 (>= 1.25 nats)"
    assert describe_excess(lengths, values, shown=1) == "3 (>= 0.70 nats) and 1 more"
    assert describe_excess(lengths, -np.abs(values)) == ""

"""Normalisers checked from both sides (issue 17, item 1): forward and reverse AIS bracket the exact
log Z_j on a tiny vocabulary; a zeta shifted by 2 nats is flagged; perplexity intervals."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest

from samplers.ais import t_multiplier
from trf.lm.check import ais_log_z, check_normalisers, exact_log_z, unigram_base
from trf.lm.corpus import EncodedCorpus, Vocabulary
from trf.lm.features import SentenceFeatures
from trf.lm.model import SentenceTRF, smoothed_length_law

V, M = 4, 5


def _model(scale=0.8, seed=3):
    rng = np.random.default_rng(seed)
    corpus = EncodedCorpus.from_sentences([rng.integers(0, V, size=rng.integers(1, M + 1)) for _ in range(60)])
    feats = SentenceFeatures.build(corpus, V, "w+c+ws+cpw", word_class=np.array([0, 0, 1, 1]))
    lam = rng.normal(scale=scale, size=feats.n_features)
    vocab = Vocabulary(["<unk>", "a", "b", "c"])
    trf = SentenceTRF(vocab, feats, smoothed_length_law(corpus.lengths, M), lam, np.zeros(M))
    log_z = np.array([exact_log_z(trf, j) for j in range(1, M + 1)])
    trf.zeta = log_z - log_z[0]  # AugSA's zeta exact: zeta_j + log Z_1 = log Z_j
    return trf, log_z, corpus


@pytest.fixture(scope="module")
def tiny():
    return _model()


def test_exact_log_z_matches_enumeration(tiny):
    trf, log_z, _ = tiny
    for j in (1, 2, 3):
        brute = np.logaddexp.reduce([trf.features.feature_vector(list(s)) @ trf.lam
                                     for s in itertools.product(range(V), repeat=j)])
        assert np.isclose(log_z[j - 1], brute, atol=1e-9)
    assert np.isclose(log_z[0], trf.log_z1())
    with pytest.raises(ValueError, match="enumeration limit"):
        exact_log_z(trf, 5, limit=100)


@pytest.mark.parametrize("base", ["unigram", "uniform"])
def test_forward_and_reverse_ais_bracket_the_exact_log_z_at_every_length(tiny, base):
    """Every length 1..5 by bidirectional AIS (exact_limit=0): lower <= exact log Z_j <= upper.

    The interval is [forward - 3 se_f, reverse + 3 se_r]; with exact reverse starts each side misses with
    probability about Phi(-3) = 0.13% or less (the bias of both estimates points outwards), so the 10
    one-sided checks here fail together with probability below 1.4% for a random seed (seed fixed).
    The check is silent because AugSA's zeta is exact here."""
    trf, log_z, _ = tiny
    check = check_normalisers(trf, range(1, M + 1), n_temperatures=60, n_chains=30, seed=7, exact_limit=0,
                              parallel=False, base=base)
    assert check.method == ["bdmc"] * M and check.base == base
    assert np.all(check.lower <= log_z) and np.all(log_z <= check.upper), (check.lower, log_z, check.upper)
    assert np.all(check.upper - check.lower < 1.5)  # informative: a 2-nat error cannot hide inside
    assert check.flagged.size == 0 and check.warning() is None
    assert check.reverse_failed.size == 0 and check.bracket_warning() is None
    # negative control: the interval of a different model (lambda x 1.3) misses this model's log Z_j
    other = SentenceTRF(trf.vocab, trf.features, trf.pi, trf.lam * 1.3, trf.zeta)
    wrong = check_normalisers(other, range(1, M + 1), n_temperatures=60, n_chains=30, seed=7, exact_limit=0,
                              parallel=False, base=base)
    assert np.any((log_z < wrong.lower) | (log_z > wrong.upper))


def test_a_reverse_estimate_below_the_forward_one_is_reported_as_a_failed_upper_bound(tiny):
    """Reverse AIS started from samples that have not reached the model can land far below the forward
    estimate (fortunes, 900 s check: length 20 forward 203.1 +- 1.0, reverse 177.1 +- 0.8); beyond z standard
    errors each the check names those lengths instead of quietly swapping the interval's ends.  "Beyond" is
    where the two estimates' interval ends cross, each at the t quantile of its 20 chains (3.45 standard errors for
    z = 3): a gap of 3.2 standard errors each, which the normal z would flag, is the chains' noise."""

    trf, _, _ = tiny
    check = check_normalisers(trf, range(1, M + 1), n_temperatures=30, n_chains=20, seed=3, exact_limit=0,
                              parallel=False)
    assert check.reverse_failed.size == 0 and check.bracket_warning() is None
    t = t_multiplier(check.z, 20)
    assert t == pytest.approx(3.45, abs=0.01)
    se = check.forward_se + check.reverse_se
    reverse = check.reverse.copy()
    reverse[2] = check.forward[2] - t * se[2] - 5.0       # length 3: far below
    reverse[3] = check.forward[3] - 0.5 * t * se[3]       # length 4: below, but within the standard errors
    reverse[4] = check.forward[4] - 0.5 * (check.z + t) * se[4]  # length 5: beyond z, within the t quantile
    bad = check.replaced(reverse=reverse)
    assert list(bad.reverse_failed) == [3]
    text = bad.bracket_warning()
    assert "at 1 of 5 lengths (3)" in text and "worst at length 3" in text and "no upper bound" in text
    rows = bad.rows()
    assert [r["reverse_failed"] for r in rows] == [False, False, True, False, False]
    assert rows[2]["forward_se"] == pytest.approx(check.forward_se[2])


def test_forward_ais_still_rising_with_temperatures_is_reported(tiny):
    """The half run (forward AIS at T/2) against the full one: converged AIS shows no significant rise at any
    length (false alarms at z = 3: none over 5 lengths); a forward estimate that doubling the temperatures
    raised beyond z standard errors (fortunes at the default budget: every long length) is named, with the
    first-order extrapolation ``forward + rise`` beside the checked value -- unless the checked value there is the
    SMC bracket, which does not rest on AIS."""

    trf, log_z, corpus = tiny
    kw = dict(n_temperatures=60, n_chains=20, seed=5, exact_limit=0, parallel=False)
    check = check_normalisers(trf, range(1, M + 1), csmc_particles=0, **kw)
    assert check.forward_half is not None and check.still_rising.size == 0 and check.rising_warning() is None
    np.testing.assert_allclose(check.extrapolated, check.checked)
    se = np.hypot(check.forward_se, check.forward_half_se)
    t = t_multiplier(check.z, 20)  # each standard error from 20 chains: 3.45 for z = 3
    half = check.forward_half.copy()
    half[4] = check.forward[4] - t * se[4] - 3.0          # length 5: rose by 3 nats beyond its noise
    half[1] = check.forward[1] - 0.5 * check.z * se[1]    # length 2: a rise within the standard errors
    half[2] = check.forward[2] - 0.5 * (check.z + t) * se[2]  # length 3: beyond z standard errors, within t
    bad = check.replaced(forward_half=half)
    assert list(bad.still_rising) == [5]
    text = bad.rising_warning()
    assert "at 1 of 5 lengths (5)" in text and "with 30 temperatures" in text and "raise --check-seconds" in text
    assert bad.extrapolated[4] == pytest.approx(2 * check.forward[4] - half[4])
    np.testing.assert_allclose(bad.extrapolated[:4], check.checked[:4])
    assert [r["still_rising"] for r in bad.rows()] == [False, False, False, False, True]
    ppl = bad.perplexities(trf, corpus)
    assert ppl["extrapolated"] > ppl["checked"]  # a larger log Z_5: a worse perplexity
    bracketed = check_normalisers(trf, range(1, M + 1), **kw)
    assert 5 in bracketed.csmc_bracketed
    rise = t * np.hypot(bracketed.forward_se, bracketed.forward_half_se) + 3
    rising = bracketed.replaced(forward_half=bracketed.forward - rise)
    assert 5 in rising.still_rising and np.array_equal(rising.extrapolated, rising.checked)
    off = check_normalisers(trf, [2], n_temperatures=20, n_chains=5, exact_limit=0, parallel=False,
                            half_run=False)
    assert off.forward_half is None and off.still_rising.size == 0


def test_degenerate_ais_weights_make_the_check_inconclusive(tiny):
    """A length whose forward weights have an effective sample size below 20% of the chains is named, and the
    headline falls back to the interval's high end even when the interval itself is narrow (fortunes at the
    default budget: standard errors saturated near 1 nat at ESS ~ 1 while the estimates were 30 nats low)."""

    from trf.lm.check import headline_perplexity

    trf, _, corpus = tiny
    check = check_normalisers(trf, range(1, M + 1), n_temperatures=60, n_chains=20, seed=5, exact_limit=0,
                              parallel=False, csmc_particles=0)  # no conditional SMC: the checked value may rest on AIS
    assert np.all(check.forward_ess >= 4) and check.degenerate.size == 0 and check.degenerate_warning() is None
    ppl = check.perplexities(trf, corpus)
    assert ppl["degenerate_lengths"] == 0 and headline_perplexity(ppl)[1] == "checked normalisers"
    ess = check.forward_ess.copy()
    ess[3] = 1.2  # length 4
    # the SMC estimate at length 4 just below the AIS midpoint: the checked value rests on AIS there
    midpoint = np.maximum(check.forward, 0.5 * (check.forward + check.reverse))
    smc = check.smc.copy()
    smc[3] = midpoint[3] - 0.01
    bad = check.replaced(forward_ess=ess, smc=smc)
    assert list(bad.degenerate) == [4] and [r["forward_ess"] for r in bad.rows()][3] == pytest.approx(1.2)
    assert "at 1 of 5 lengths (4)" in bad.degenerate_warning() and "ESS 1.20" in bad.degenerate_warning()
    assert "settled SMC" not in bad.degenerate_warning()
    ppl_bad = bad.perplexities(trf, corpus)
    assert ppl_bad["degenerate_lengths"] == 1
    value, label, inconclusive = headline_perplexity(ppl_bad)
    assert inconclusive and value == ppl_bad["high"] and "inconclusive" in label
    # a settled SMC estimate above the AIS midpoint covers the length: the checked value does not rest on AIS
    smc[3] = midpoint[3] + 0.01
    covered = bad.replaced(smc=smc)
    assert 4 in covered.smc_covered and "settled SMC estimate" in covered.degenerate_warning()
    assert covered.perplexities(trf, corpus)["degenerate_lengths"] == 0
    spread = covered.smc_spread.copy()
    spread[3] = 2.0  # ... unless SMC has not settled there
    assert 4 not in covered.replaced(smc_spread=spread).smc_covered


@pytest.mark.parametrize("shift", [2.0, -2.0])
def test_zeta_shifted_by_two_nats_triggers_the_warning(tiny, shift):
    trf, log_z, _ = tiny
    zeta = trf.zeta.copy()
    zeta[3] += shift  # length 4
    shifted = SentenceTRF(trf.vocab, trf.features, trf.pi, trf.lam, zeta)
    check = check_normalisers(shifted, range(1, M + 1), n_temperatures=60, n_chains=30, seed=7, exact_limit=0,
                              parallel=False, margin=0.5)
    assert list(check.flagged) == [4]
    assert "length 4" in check.warning() and "outside the checked interval by more than 0.5 nats" in check.warning()


def test_exact_normaliser_on_tiny_vocabularies_and_perplexity_interval(tiny):
    trf, log_z, corpus = tiny
    check = check_normalisers(trf, range(1, M + 1), seed=0)  # V^j <= 1024: exact by default
    assert check.method == ["exact"] * M
    np.testing.assert_allclose(check.checked, log_z, atol=1e-9)
    np.testing.assert_allclose(check.lower, check.upper)
    ppl = check.perplexities(trf, corpus)
    assert np.isclose(ppl["augsa"], ppl["checked"]) and ppl["unchecked_sentences"] == 0
    # a zeta too low by 1 nat at every length makes the AugSA perplexity too good by exp(n/n_predicted)
    low = SentenceTRF(trf.vocab, trf.features, trf.pi, trf.lam, trf.zeta - np.r_[0.0, np.ones(M - 1)])
    ppl_low = check_normalisers(low, range(1, M + 1)).perplexities(low, corpus)
    n_long = int(np.count_nonzero(corpus.lengths > 1))
    assert np.isclose(ppl_low["checked"], ppl["checked"])
    assert np.isclose(ppl_low["augsa"], ppl["checked"] * np.exp(-n_long / corpus.n_predicted))
    by_ais = check_normalisers(trf, range(1, M + 1), n_temperatures=40, n_chains=20, seed=1, exact_limit=0,
                               parallel=False)
    interval = by_ais.perplexities(trf, corpus)
    assert interval["low"] <= ppl["checked"] <= interval["high"]
    assert interval["low"] <= interval["checked"] <= interval["high"]


class StepClock:
    """A clock that advances ``step`` seconds at every reading: what the budget plan measures is then a function of
    its own readings, not of the machine's speed or load (a loaded machine gave length 4 twenty temperatures)."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_check_budget_picks_temperatures_and_bad_input(tiny):
    trf, _, _ = tiny
    check = check_normalisers(trf, [2, 3], time_budget=0.5, n_chains=5, exact_limit=0, seed=0,
                              parallel=False, clock=StepClock(0.01))
    assert np.all((20 <= check.temperatures) & (check.temperatures <= 5000)) and "budget" in check.notes[0]
    assert "re-planned before each length from the measured cost" in check.notes[0]
    again = check_normalisers(trf, [2, 3], time_budget=0.5, n_chains=5, exact_limit=0, seed=0,
                              parallel=False, clock=StepClock(0.01))
    np.testing.assert_array_equal(again.temperatures, check.temperatures)  # the same clock, the same plan
    roomy = check_normalisers(trf, [2, 4], time_budget=1.0, n_chains=5, exact_limit=0, seed=0, parallel=False,
                              clock=StepClock(0.01))
    assert np.all(roomy.temperatures > 20) and "growing with length" in roomy.describe()
    # a budget the pilot alone exceeds: the minimum temperatures, and the notes say the budget was not kept
    tight = check_normalisers(trf, [2, 4], time_budget=1e-4, n_chains=5, exact_limit=0, seed=0, parallel=False,
                              clock=StepClock(0.01))
    assert np.all(tight.temperatures == 20)
    assert tight.notes[0].startswith("20 temperatures (in proportion to length)")  # one value, not "20-20"
    assert roomy.notes[0].startswith(f"{roomy.temperatures.min()}-{roomy.temperatures.max()} temperatures")
    assert any("too small" in note for note in tight.notes) and "x its 0 s budget" in tight.notes[-1]
    with pytest.raises(ValueError, match="base"):
        check_normalisers(trf, [2], n_temperatures=5, exact_limit=0, base="zipf")
    with pytest.raises(ValueError, match="lengths"):
        check_normalisers(trf, [M + 1])
    with pytest.raises(ValueError, match="n_chains"):
        check_normalisers(trf, [1], n_chains=1)
    with pytest.raises(ValueError, match="which"):
        check.log_z_table("middle")


def _overrun_check(tiny, step, monkeypatch, on_note):
    """The check on lengths 2 and 4 by AIS with a 60 s budget and a StepClock of ``step`` s per reading; every AIS
    run (not the pilot's) is recorded as "ais" in the returned event list, after any note ``on_note`` recorded."""
    import trf.lm.check.run as run

    trf, _, _ = tiny
    events: list[str] = []
    real = run.bidirectional_estimates

    def recorded(*args, **kwargs):
        events.append("ais")
        return real(*args, **kwargs)

    monkeypatch.setattr(run, "bidirectional_estimates", recorded)
    check = check_normalisers(trf, [2, 4], time_budget=60.0, n_chains=5, exact_limit=0, seed=0, parallel=False,
                              clock=StepClock(step), on_note=lambda note: (events.append(note), on_note(note)))
    return check, events


def test_a_budget_the_minimum_effort_overruns_is_said_before_the_ais_runs(tiny, monkeypatch):
    """On a time budget the check never goes below 20 AIS temperatures per length.  When the pilot's cost model
    predicts that minimum to take more than 1.5 x the budget, one note goes to ``on_note`` before the first AIS run
    (predicted seconds, budget, the flags that fix it) and stays in the result's notes; a fast cost gives none.

    The costs are injected (StepClock: every clock reading is ``step`` s later, whatever the machine): the pilot
    times 6 temperatures per length as one step, both lengths alike, so the model is ``step / 6 * j / 4`` s per
    temperature at length j and the minimum AIS effort ``(1.25 * 20 + 0.5 * 10) * step / 6 * (2 + 4) / 4 = 7.5 step``
    (20 temperatures plus the quarter-size half run, 10 burn-in sweeps at half a temperature each)."""
    shown: list[str] = []
    slow, events = _overrun_check(tiny, 10.0, monkeypatch, shown.append)  # minimum AIS effort 75 s
    notes = [e for e in events if e != "ais"]
    assert len(notes) == 1 and shown == notes and events.index(notes[0]) < events.index("ais")
    note = notes[0]
    assert note.startswith("the 60 s budget is too small for the check's minimum effort: 20 AIS temperatures at "
                           "each of 2 lengths take about 75 s by the pilot's cost model (833 ms-1.67 s per temperature)")
    total = float(note.split(" s in all")[0].rsplit(" ", 1)[1])  # "165 s in all": SMC and the pilot read the clock too
    assert total >= 75 + 10 and f"{total / 60:.1f} x the budget" in note
    assert f"--check-seconds {int(np.ceil(total))};" in note and "--check-effort T,P[,C] with T < 20" in note
    assert note in slow.notes and np.all(slow.temperatures == 20)
    # the same check at a tenth of the cost: the minimum (7.5 s of AIS) fits 1.5 x 60 s, no note; temperatures grow
    fast, events = _overrun_check(tiny, 1.0, monkeypatch, shown.append)
    assert events.count("ais") == 2 and len(events) == 2 and len(shown) == 1
    assert not any("too small" in n for n in fast.notes) and np.all(fast.temperatures > 20)


def test_without_on_note_the_overrun_note_is_a_warning_on_the_check_logger(tiny, caplog):
    trf, _, _ = tiny
    with caplog.at_level("WARNING", logger="trf.lm.check"):
        check = check_normalisers(trf, [2, 4], time_budget=60.0, n_chains=5, exact_limit=0, seed=0, parallel=False,
                                  clock=StepClock(10.0))
    assert [r.getMessage() for r in caplog.records] == [n for n in check.notes if "minimum effort" in n]
    assert len(caplog.records) == 1


def test_the_cli_prints_the_overrun_note_at_once_and_once(tiny, monkeypatch, capsys):
    """``mcsa trf eval`` / ``train`` print the early note on stderr as ``prog: check: ...`` when it is made (before
    the AIS runs) and do not repeat it with the other notes at the end."""
    import trf.lm.check.run as run
    from trf.lm.check import checked_perplexity
    from trf.lm.cli import _CheckNotes, _print_checked

    trf, _, corpus = tiny
    notes = _CheckNotes("mcsa trf eval")
    long_enough = EncodedCorpus.from_sentences([s for s in corpus if len(s) in (2, 4)])
    real = run.bidirectional_estimates

    def recorded(*args, **kwargs):
        print("<AIS run>", file=sys.stderr)
        return real(*args, **kwargs)

    monkeypatch.setattr(run, "bidirectional_estimates", recorded)
    checked = checked_perplexity(trf, long_enough, time_budget=60.0, n_chains=5, exact_limit=0, seed=0,
                                 parallel=False, clock=StepClock(10.0), on_note=notes)
    _print_checked(checked, notes)
    err = capsys.readouterr().err.splitlines()
    early = [i for i, line in enumerate(err) if "budget is too small for the check's minimum effort" in line]
    assert len(early) == 1 and err[early[0]].startswith("mcsa trf eval: check: the 60 s budget")
    assert early[0] < err.index("<AIS run>")
    assert any(line.startswith("mcsa trf eval: check: ") and "x its 60 s budget" in line for line in err)


def test_budget_plan_is_in_proportion_to_length_and_fits():
    """The temperature plan: T_j = clip(round(c j), 20, 5000) with the largest c whose predicted cost (a + b j
    per temperature, 1.25 temperatures with the half run, burn-in at half a temperature per sweep) fits; a
    re-plan of the remaining lengths with a measured/predicted factor of 2 halves their share."""
    from trf.lm.check import BudgetPlan as _BudgetPlan

    lengths = np.arange(2, 41)
    plan = _BudgetPlan(lengths, 0.01 + 0.0015 * lengths, extra=0.25, burn_in=10)
    temps = plan.solve(100.0)
    assert np.all(np.diff(temps) >= 0) and temps[0] == 20 and temps[-1] > 20
    assert plan.cost(temps) <= 100.0 < plan.cost(plan.temperatures(1.05 * temps[-1] / lengths[-1]))
    np.testing.assert_allclose(temps[lengths >= 20] / lengths[lengths >= 20], temps[-1] / 40, atol=0.04)  # rounding
    share = plan.cost(temps[20:], 20)  # lengths 22-40: their planned seconds, now at twice the measured cost
    rest = plan.solve(share, first=20, factor=2.0)
    assert rest.size == 19 and 2.0 * plan.cost(rest, 20) <= share and rest[-1] < 0.55 * temps[-1]
    assert np.all(plan.solve(1e-3) == 20)  # too small a budget: the floor everywhere


def test_unigram_base_is_exact_for_a_unigram_only_model(tiny):
    """With lambda zero outside the unigram features the base is the model: log Z_0 = log Z_j exactly and
    every AIS weight is 1 (zero variance); with the full lambda the base only carries the unigram part."""
    trf, _, _ = tiny
    u, is_unigram = unigram_base(trf)
    assert 0 < is_unigram.sum() < is_unigram.size
    uni = SentenceTRF(trf.vocab, trf.features, trf.pi, np.where(is_unigram, trf.lam, 0.0), trf.zeta)
    for j in (1, 3):
        res = ais_log_z(uni, j, n_temperatures=5, n_chains=4, seed=0)
        assert np.isclose(res.log_partition_start, exact_log_z(uni, j), atol=1e-9)
        np.testing.assert_allclose(res.log_weights, 0.0, atol=1e-9)
    # u scores a sentence's unigram features: u[x].sum() == lambda_uni . f(x)
    sentence = [1, 3, 0, 2]
    f = trf.features.feature_vector(sentence)
    assert np.isclose(u[sentence].sum(), f[is_unigram] @ trf.lam[is_unigram])


def test_pooled_sentences_with_a_positive_log_probability_are_left_out_of_the_checked_perplexity(tiny):
    """The pooled m+ normaliser covers the sampled lengths m+1, m+2 only (Sec. 5.4), so a much longer sentence
    can get log p > 0 with it (KJV, SMC-trained model: a 69-word verse at +20.6): such sentences have no valid
    probability and are left out of every checked perplexity and counted; the others are scored as before."""
    trf, log_z, _ = tiny
    pi = np.append(trf.pi * 0.9, 0.1)
    pooled = SentenceTRF(trf.vocab, trf.features, pi, trf.lam, np.append(trf.zeta, -60.0), pooled=True)
    check = check_normalisers(pooled, range(1, M + 1), seed=0)
    assert check.method == ["exact"] * M
    short = [np.array([1, 2]), np.array([3, 1, 2, 0])]
    long_ = np.array([1, 2, 3] * 6)  # 18 words: dimension m+1
    one_long = EncodedCorpus.from_sentences([long_])
    excess = pooled.log_prob(one_long, allow_positive=True)[0]
    assert excess > 0
    with pytest.raises(ValueError, match=rf"sentences\[0\].*length\(s\) 18 \(>= {excess:.2f} nats\)"):
        pooled.log_prob(one_long)  # the library refuses it too, naming the length and the excess
    both = check.perplexities(pooled, EncodedCorpus.from_sentences(short + [long_]))
    alone = check.perplexities(pooled, EncodedCorpus.from_sentences(short))
    assert both["excluded_sentences"] == 1 and both["unchecked_sentences"] == 1 and alone["excluded_sentences"] == 0
    assert both["checked"] == pytest.approx(alone["checked"]) and both["high"] == pytest.approx(alone["high"])
    assert both["impossible_checked"] == 0
    # a long sentence with a possible probability stays in
    fine = SentenceTRF(trf.vocab, trf.features, pi, trf.lam, np.append(trf.zeta, 200.0), pooled=True)
    kept = check.perplexities(fine, EncodedCorpus.from_sentences(short + [long_]))
    assert kept["excluded_sentences"] == 0 and kept["checked"] != pytest.approx(alone["checked"])


def test_a_fixed_effort_is_kept_and_stated(tiny):
    """``effort=CheckEffort(T, P, C)``: T temperatures at every AIS length, P particles per SMC run, C per
    conditional run, whatever the machine; the notes and the report state them; bad efforts name the field."""
    from trf.lm.check import CheckEffort, checked_perplexity

    trf, _, corpus = tiny
    effort = CheckEffort(12, 150, 90)
    check = check_normalisers(trf, [2, 3], effort=effort, n_chains=5, exact_limit=0, seed=0, parallel=False)
    assert np.all(check.temperatures == 12) and check.smc_particles == 150
    assert set(check.csmc_particles[check.csmc_particles > 0].tolist()) <= {90}
    assert "a fixed effort: 12 temperatures per AIS run, 5 chains" in check.notes[0]
    report = checked_perplexity(trf, corpus, effort=effort, n_chains=5, exact_limit=0, seed=0, parallel=False)
    stated = report.summary()["normaliser_check"]["effort"]
    assert stated["temperatures"] == [12, 12] and stated["smc_particles"] == 150 and stated["chains"] == 5
    assert CheckEffort.parse("30,400") == CheckEffort(30, 400) and CheckEffort(30, 4000).csmc_particles == 1000
    for text in ("30", "1,400", "a,b", "3,4,5,6"):
        with pytest.raises(ValueError, match="TEMPERATURES|temperatures"):
            CheckEffort.parse(text)
    with pytest.raises(ValueError, match="effort.particles"):
        check_normalisers(trf, [2], effort=CheckEffort(5, -1), exact_limit=0)


def test_a_conclusive_check_reports_its_ais_shortfalls_as_one_note(tiny):
    """Where the check is conclusive, AIS that missed mass, is still rising or has degenerate weights is one note
    (the checked values there do not rest on AIS), not a row of warnings; an inconclusive check keeps the warnings
    and says why."""
    from trf.lm.check import checked_perplexity

    trf, _, corpus = tiny
    report = checked_perplexity(trf, corpus, n_temperatures=40, n_chains=10, exact_limit=0, seed=1, parallel=False)
    assert not report.inconclusive
    check = report.check
    smc = check.smc.copy()
    fwd, est = check.estimates["forward"], check.estimates["smc"]
    smc[0] = check.forward[0] + fwd.half_width(check.z)[0] + est.half_width(check.z)[0] + 0.01  # AIS missed mass, j = 1
    smc[1] = check.forward[1] + check.z * (check.smc_se[1] + check.forward_se[1]) + 0.01  # beyond z, within t: noise
    missed = check.replaced(smc=smc)
    assert list(missed.ais_missed) == [1]
    shown = report._replace(check=missed)  # the verdict stays conclusive: only the report's wording is tested
    notes = [n for n in shown.notes() if "AIS side fell short" in n]
    assert len(notes) == 1 and "missed probability mass" in notes[0] and "1 of 5 lengths (1)" in notes[0]
    assert not any("missed probability mass" in w for w in shown.warnings())
    loud = shown._replace(inconclusive=True)
    assert any("forward AIS missed probability mass" in w for w in loud.warnings())
    assert any("the check is inconclusive at this effort" in w for w in loud.warnings())
    assert not any("AIS side fell short" in n for n in loud.notes())

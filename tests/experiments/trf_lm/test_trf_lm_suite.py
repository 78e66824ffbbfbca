"""The trf-lm harness suites: measured test perplexities, reproducible seeds, registration (a generated corpus,
so the test needs no Debian fortune packages)."""

from __future__ import annotations

import numpy as np
import pytest

from samplers.harness import Study, list_suites

WORDS = ["the", "a", "cat", "dog", "sat", "ran", "home", "down", "big", "red"]


def _corpus(rng, n):
    """Sentences of 2-6 words from a first-order chain over WORDS (so there is structure to learn)."""
    out = []
    for _ in range(n):
        w = [int(rng.integers(0, 2))]
        for _ in range(int(rng.integers(1, 6))):
            w.append((w[-1] + int(rng.choice([1, 2, 3], p=[0.6, 0.3, 0.1]))) % len(WORDS))
        out.append(" ".join(WORDS[i] for i in w))
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    from experiments.trf_lm.suite import CorpusProblem

    folder = tmp_path_factory.mktemp("corpus")
    rng = np.random.default_rng(0)
    paths = {}
    for split, n in (("train", 300), ("valid", 40), ("test", 40)):
        paths[split] = folder / f"{split}.txt"
        paths[split].write_text(_corpus(rng, n))
    # a vocabulary smaller than the word set, so <unk> occurs in training as well as in test
    return CorpusProblem("toy", paths["train"], paths["valid"], paths["test"], vocab=8)


@pytest.mark.filterwarnings("ignore:KneserNey order:trf.ngram.DiscountFallbackWarning")  # KN3 on an 8-word vocabulary
def test_study_rows_are_perplexities_and_reproducible(problem):
    from experiments.trf_lm.suite import LMMethod

    methods = [LMMethod("kn"), LMMethod("trf", classes=3, samples=20, chains=2, check_temperatures=10)]
    budgets = {"kn": [3], "trf": [30]}
    res = Study([problem], methods, budgets=budgets, replicates=2, seed=5).run(progress=False)
    rows = [r for r in res.rows if r["target"] == "test_ppl"]
    assert len(rows) == 4 and not res.failures
    for row in rows:
        # a perplexity is a number >= 1; the uniform law over 8 words + <unk> + </s> gives 10
        assert row["exact"] is None and np.isfinite(row["estimate"]) and 1.0 <= row["estimate"] < 10.0
    trf = [r["estimate"] for r in rows if r["estimator"] == "trf"]
    kn = [r["estimate"] for r in rows if r["estimator"] == "kn"]
    assert kn[0] == kn[1] and trf[0] != trf[1]  # KN is deterministic; TRF replicates use their own seeds
    again = Study([problem], methods, budgets=budgets, replicates=2, seed=5).run(progress=False)
    assert [r["estimate"] for r in again.rows if r["target"] == "test_ppl"] == [r["estimate"] for r in rows]


def test_registered_and_bad_input():
    from experiments.trf_lm.suite import LMMethod

    assert {"trf-lm-fortunes", "trf-lm-quick"} <= set(list_suites())
    with pytest.raises(ValueError, match="label"):
        LMMethod("rnn")

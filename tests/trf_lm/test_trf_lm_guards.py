"""Divergence guards and data-derived step sizes on the toy corpus of docs/trf-lm.md (issue 17, items 3-4)."""

from __future__ import annotations

import numpy as np
import pytest

from samplers.cli import main
from trf.lm.backend import lm_config
from trf.lm.check import check_normalisers
from trf.lm.corpus import Vocabulary, encode_file
from trf.lm.train import train_lm
from trf.ngram import KneserNey, perplexity

DOCS_TOY = "\n".join(["the cat sat", "the dog sat down", "a cat ran home", "the end"] * 20)
# KN3, the yardstick here, takes the stated fallback discounts on the docs' 9-word toy corpus (counts-of-counts empty)
pytestmark = pytest.mark.filterwarnings("ignore:KneserNey order:trf.ngram.DiscountFallbackWarning")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    path = tmp_path_factory.mktemp("toy") / "train.txt"
    path.write_text(DOCS_TOY)
    vocab = Vocabulary.build(path)
    corpus = encode_file(path, vocab)
    kn3 = perplexity(KneserNey(order=3).fit(corpus, len(vocab)).log_prob(corpus), corpus.n_predicted)
    return path, corpus, kn3


def _train(path, t_max, **kw):
    return train_lm(path, valid_path=path, features="w+c+ws+cs+cpw", classes=3,
                    config=lm_config(n_samples=20, t_max=t_max, t_c=100.0, t0=10, **kw.pop("config", {})),
                    n_chains=2, progress=False, parallel=False, **kw)


def test_docs_example_gives_a_sane_perplexity(toy):
    """The docs example with the defaults (data-derived variance floor, guards, zeta refinement): the
    perplexity with the exact normalisers (V^j <= 10^4 here, so log Z_j is enumerated) is within 2x of KN3
    on the training text (it was 1.7e85 with AugSA's zeta before), and no sentence gets log p > 0."""
    path, corpus, kn3 = toy
    model, result = _train(path, 30)
    check = check_normalisers(model, range(1, model.m + 1))
    assert check.method == ["exact"] * model.m
    ppl = check.perplexities(model, corpus)
    assert 1.0 <= ppl["checked"] <= 2.0 * kn3, (ppl, kn3)
    assert np.all(model.log_prob(corpus) <= 0) and model.perplexity(corpus) >= 1.0
    assert model.meta["variance_floor"] == pytest.approx(1 / 80)
    assert model.meta["zeta_refinement_iterations"] > 0


@pytest.mark.parametrize("t_max", [100, 300])
def test_paper_step_rule_on_the_toy_corpus_ends_with_a_clear_message(toy, t_max):
    """The divergent cases of issue 17 (variance floor 1e-15, t_max 100 / 300 gave log p(the cat sat) =
    +2330): the guard stops training with a message, and the kept parameters give log p <= 0 everywhere."""
    path, corpus, _ = toy
    model, result = _train(path, t_max, step_rule="fixed", config={"on_violation": "stop"})
    assert result.guard_message is not None and "training stopped" in result.guard_message
    assert model.meta["guard_message"] == result.guard_message
    assert np.all(model.log_prob(corpus) <= 1e-9)
    assert model.meta["zeta_refinement_iterations"] == 0  # no refinement of a stopped run


def test_cli_train_prints_the_guard_message(toy, tmp_path, capsys):
    path, _, _ = toy
    args = ["trf", "train", "--train", str(path), "--out", str(tmp_path / "m.npz"), "--classes", "3", "--features",
            "w+c+ws+cs+cpw", "--max-iterations", "100", "--samples", "20", "--t-c", "100", "--t0",
            "10", "--quiet", "--step-rule", "fixed", "--on-violation", "stop"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "mcsa trf train: training stopped:" in err and "divergence guard" in err
    with pytest.raises(SystemExit):  # argparse rejects an unknown choice (exit status 2)
        main(args[:-4] + ["--step-rule", "sideways"])
    assert "invalid choice: 'sideways'" in capsys.readouterr().err


def test_the_guard_names_the_feature_behind_max_abs_lambda(toy):
    """A guard fired by ``max |lambda|`` names the feature (its index and text, with the words) and its value at the
    last passing check, so a user can see which template ran away; the named one is the largest of the lambda that
    failed the check (recomputed here from the message's value)."""
    import re

    path, _, _ = toy
    model, result = _train(path, 60, config={"max_abs_lambda": 0.4, "on_violation": "stop"}, refine=0)
    message = result.guard_message
    assert message is not None and "max |lambda| = " in message, message
    found = re.search(r"max \|lambda\| = ([0-9.e+-]+) > max_abs_lambda = 0.4 \(feature (\d+): (.*); lambda "
                      r"(-?[0-9.e+-]+), (-?[0-9.e+-]+) at iteration (\d+)\)", message)
    assert found, message
    biggest, index, text, value = float(found[1]), int(found[2]), found[3], float(found[4])
    assert text == model.features.feature_text(index, model.vocab.words)
    assert "training occurrence" in text
    assert abs(value) == pytest.approx(biggest, rel=1e-2)
    assert abs(float(found[5])) <= 0.4  # the last passing check's value is within the bound

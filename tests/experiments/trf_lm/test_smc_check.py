"""experiments/trf_lm/smc_check.py: the exact two-word sum against enumeration, the printed table, the gap to AugSA's
normaliser against exact log Z_j (the probe of issue 27), checkpoints and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from experiments.trf_lm.smc_check import exact_two_word, main
from trf.lm.check import exact_log_z
from trf.lm.model import SentenceTRF


@pytest.fixture
def lm(tmp_path, random_lm):
    model, path = random_lm("w+c+ws+cpw")
    test = tmp_path / "test.txt"
    test.write_text("w1 w2\nw3 w1 w4\n")
    return model, path, test


def test_exact_two_word_sum_and_the_table(lm, capsys):
    model, path, test = lm
    assert np.isclose(logsumexp(exact_two_word(model)), exact_log_z(model, 2), atol=1e-9)
    assert main(["--model", str(path), "--test", str(test), "--particles", "2000", "--runs", "2", "--exact-z2"]) == 0
    out = capsys.readouterr().out
    assert f"exact log Z_2 = {exact_log_z(model, 2):.3f}" in out and "test PPL (2 sentences" in out


def test_the_conditional_column_brackets_the_exact_values(lm, capsys):
    """--conditional-particles adds the upper side: at every length the SMC estimate is at most and the conditional
    one at least the exact log Z_j, within 0.2 nats (4 runs of 2000 particles on 6 words), and the perplexity with
    the conditional normalisers is printed beside the SMC one."""
    model, path, test = lm
    assert main(["--model", str(path), "--test", str(test), "--particles", "2000", "--runs", "4",
                 "--conditional-particles", "2000"]) == 0
    out = capsys.readouterr().out
    assert "conditional SMC: 4 runs x 2000 particles per length" in out and "midpoint" in out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit() and len(line.split()) == 7]
    assert [int(r[0]) for r in rows] == [1, 2, 3, 4]
    for r in rows:
        exact = exact_log_z(model, int(r[0]))
        smc, csmc = float(r[1]), float(r[3])
        assert smc - 0.2 <= exact <= csmc + 0.2 and csmc - smc < 0.4, (r, exact)


@pytest.fixture
def low(tmp_path, random_lm):
    """A random model with ``zeta_j`` set ``j - 1`` nats below the exact ``log Z_j - log Z_1``."""
    model, _ = random_lm("w+c+ws+tied")
    exact = np.array([exact_log_z(model, j) for j in range(1, model.m + 1)])
    model = SentenceTRF(model.vocab, model.features, model.pi, model.lam,
                        exact - model.log_z1() - np.arange(model.m, dtype=float))
    path = tmp_path / "low.npz"
    model.save(path)
    return model, path


def _gaps(out: str) -> dict[int, float]:
    """The SMC-AugSA column of the printed table (runs without conditional SMC or AIS columns)."""
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit() and len(line.split()) == 5]
    return {int(r[0]): float(r[4]) for r in rows}


@pytest.mark.parametrize("proposal", ["exact", "partial"])
def test_the_gap_column_measures_how_far_zeta_lies_below_log_z(low, capsys, proposal):
    """A model whose zeta_j lies j - 1 nats below the exact log Z_j: with 2000 particles on six words both
    proposals report gaps of j - 1 within 0.1 nats, and --show prints sentences of the asked length."""
    model, path = low
    assert main(["--model", str(path), "--particles", "2000", "--runs", "2", "--show", "3",
                 "--proposal", proposal]) == 0
    out = capsys.readouterr().out
    gaps = _gaps(out)
    assert sorted(gaps) == [1, 2, 3, 4]
    np.testing.assert_allclose([gaps[j] for j in (1, 2, 3, 4)], [0.0, 1.0, 2.0, 3.0], atol=0.1)
    shown = [line.split() for line in out.split("kept by the heaviest run")[1].splitlines()[1:]]
    assert shown and all(len(words) == 3 for words in shown)


def test_a_checkpoints_parameters_and_bad_input(low, tmp_path, capsys):
    model, path = low
    ckpt = tmp_path / "c.npz"
    np.savez(ckpt, lam=model.lam, zeta=model.zeta + np.arange(model.m, dtype=float))  # zeta_j = log Z_j - log Z_1
    assert main(["--model", str(path), "--checkpoint", str(ckpt), "--particles", "2000", "--runs", "2"]) == 0
    np.testing.assert_allclose(list(_gaps(capsys.readouterr().out).values()), 0.0, atol=0.1)
    assert main(["--model", str(tmp_path / "missing.npz")]) == 2
    assert "smc_check: error: --model" in capsys.readouterr().err
    junk = tmp_path / "junk.npz"
    junk.write_bytes(bytes(range(256)))
    assert main(["--model", str(path), "--checkpoint", str(junk)]) == 2
    assert "smc_check: error: --checkpoint" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--model", str(path), "--runs", "1"])

"""experiments/trf_lm/smc_check.py: the exact two-word sum against enumeration, and the printed table."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from experiments.trf_lm.smc_check import exact_two_word, main
from trf.lm.check import exact_log_z


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
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit() and len(line.split()) == 6]
    assert [int(r[0]) for r in rows] == [1, 2, 3, 4]
    for r in rows:
        exact = exact_log_z(model, int(r[0]))
        smc, csmc = float(r[1]), float(r[3])
        assert smc - 0.2 <= exact <= csmc + 0.2 and csmc - smc < 0.4, (r, exact)

"""experiments/trf_lm/probe.py: the gap to AugSA's normaliser against exact log Z_j, checkpoints, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.trf_lm.probe import main
from trf.lm.check import exact_log_z
from trf.lm.model import SentenceTRF


@pytest.fixture
def lm(tmp_path, random_lm):
    """The random model with ``zeta_j`` set ``j - 1`` nats below the exact ``log Z_j - log Z_1``."""
    model, _ = random_lm("w+c+ws+tied")
    exact = np.array([exact_log_z(model, j) for j in range(1, model.m + 1)])
    model = SentenceTRF(model.vocab, model.features, model.pi, model.lam,
                        exact - model.log_z1() - np.arange(model.m, dtype=float))
    path = tmp_path / "low.npz"
    model.save(path)
    return model, path


def _gaps(out: str, proposal: str) -> dict[int, float]:
    lines = out.splitlines()
    row = lines[next(i for i, line in enumerate(lines) if line.startswith(proposal)) + 1]
    return {int(k): float(v) for k, v in (item.split(":") for item in row.split("AugSA:")[1].split())}


def test_the_probe_measures_how_far_zeta_lies_below_log_z(lm, capsys):
    """A model whose zeta_j lies j - 1 nats below the exact log Z_j: with 2000 particles on six words both
    proposals report gaps of j - 1 within 0.1 nats, and --show prints sentences of the asked length."""
    model, path = lm
    assert main(["--model", str(path), "--particles", "2000", "--runs", "2", "--show", "3"]) == 0
    out = capsys.readouterr().out
    for proposal in ("partial", "exact"):
        gaps = _gaps(out, proposal)
        assert sorted(gaps) == [1, 2, 3]
        np.testing.assert_allclose([gaps[j] for j in (1, 2, 3)], [0.0, 1.0, 2.0], atol=0.1)
    shown = [line.split() for line in out.splitlines() if line.startswith("    ")]
    assert shown and all(len(words) == 3 for words in shown)


def test_the_probe_reads_a_checkpoints_parameters_and_refuses_bad_input(lm, tmp_path, capsys):
    model, path = lm
    ckpt = tmp_path / "c.npz"
    np.savez(ckpt, lam=model.lam, zeta=model.zeta + np.array([0.0, 1.0, 2.0, 3.0]))  # now zeta_j = log Z_j - log Z_1
    assert main(["--model", str(path), "--checkpoint", str(ckpt), "--particles", "2000", "--runs", "2",
                 "--proposals", "exact"]) == 0
    np.testing.assert_allclose(list(_gaps(capsys.readouterr().out, "exact").values()), 0.0, atol=0.1)
    assert main(["--model", str(tmp_path / "missing.npz")]) == 2
    assert "probe: error: --model" in capsys.readouterr().err
    junk = tmp_path / "junk.npz"
    junk.write_bytes(bytes(range(256)))
    assert main(["--model", str(path), "--checkpoint", str(junk)]) == 2
    assert "probe: error: --checkpoint" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--model", str(path), "--runs", "1"])

"""``experiments/trf_lm/batch_genealogy.py``: its batch statistics, its run weights, and the table it prints."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

import trf.lm.smc as smc
from experiments.trf_lm import batch_genealogy
from trf.lm.backend import lm_config
from trf.lm.train import train_lm

TEXT = "\n".join(["the cat sat", "the dog sat down", "a cat ran home", "the end", "a dog ran"] * 12)


def test_batch_stats_count_sentences_prefixes_and_lengths():
    """Four sentences: four distinct, three distinct 3-word prefixes ((1, 2, 3) twice; a 2-word sentence is its
    own prefix), at most two sharing one prefix, at most two of one length."""
    tokens = np.array([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 0, 0], [2, 2, 2, 0]])
    assert batch_genealogy._batch_stats(tokens, np.array([4, 4, 2, 3])) == (4, 3, 2, 2)
    assert batch_genealogy._batch_stats(tokens[[0, 0, 0]], np.array([4, 4, 4])) == (1, 1, 3, 3)


def test_run_weights_record_the_effective_number_of_runs(monkeypatch):
    """Equal run estimates give as many effective runs as runs; one finite estimate gives one."""
    spy = batch_genealogy._RunWeights()
    monkeypatch.setattr(batch_genealogy, "_PICK", lambda *a: None)
    spy(np.zeros(4), None, 2, 10, None)
    spy(np.array([0.0, -np.inf, -np.inf]), None, 2, 5, None)
    assert spy.effective == [(pytest.approx(4.0), 10), (pytest.approx(1.0), 5)]


def test_the_table_has_a_row_per_config_and_the_sampler_is_restored(tmp_path, capsys):
    """On a tiny trained model the script prints one row per config and the independent reference, with effective
    runs between 1 and the runs, distinct sentences at most K and distinct prefixes at most the sentences; the
    sampler's pick is the original again afterwards."""
    path = tmp_path / "train.txt"
    path.write_text(TEXT + "\n")
    model, _ = train_lm(path, features="w+c", classes=3, config=lm_config(n_samples=20, t_max=20, t0=20),
                        sampler="smc", smc_particles=30, refine=0, progress=False, seed=1)
    model.save(tmp_path / "m.npz")
    assert batch_genealogy.main(["--model", str(tmp_path / "m.npz"), "--configs", "2x30", "6x10", "--samples", "20",
                                 "--batches", "2", "--reference-particles", "20", "--reference-batches", "1"]) == 0
    assert smc._pick_sentences is batch_genealogy._PICK
    rows = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert [r[0].strip() for r in rows[1:]] == ["2 x 30", "6 x 10", "independent (20 runs x 20, one draw each)"]
    for row in rows[1:3]:
        runs = int(row[0].split("x")[0])
        sentences, prefixes = (float(row[k].split("+-")[0]) for k in (2, 3))
        assert 1 <= float(row[1]) <= runs and 1 <= sentences <= 20 and 1 <= prefixes <= sentences
        assert "+-" in row[2] and "+-" not in rows[3][2]  # two batches have a standard error, one has none
    assert batch_genealogy.main(["--model", str(tmp_path / "m.npz"), "--configs", "2x30", "--samples", "20",
                                 "--batches", "2", "--reference-batches", "1", "--smc-lengths", "stratified"]) == 0
    stratified = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines() if line.startswith("| 2 x")]
    pi = np.load(tmp_path / "m.npz")["pi"]
    assert int(stratified[0][5].split("(")[0].strip().split(".")[0]) <= int(np.floor(20 * pi.max())) + 1
    assert rows[3][1].strip() == "-" and rows[3][6].strip().endswith(" of 1") and rows[1][6].strip().endswith(" of 2")


def test_each_proposal_gets_its_row_with_its_smallest_ess(tmp_path, capsys, monkeypatch):
    """``--proposals exact trimmed-skips``: a row per config and proposal, named, each drawn by a sampler of that
    proposal and threshold, its last column the median smallest ESS (between 0 and the particles); the reference
    row has none."""
    path = tmp_path / "train.txt"
    path.write_text(TEXT + "\n")
    model, _ = train_lm(path, features="w+c+ws+tied", classes=3, config=lm_config(n_samples=20, t_max=20, t0=20),
                        sampler="smc", smc_particles=30, refine=0, progress=False, seed=1)
    model.save(tmp_path / "m.npz")
    made = []
    real = smc.SMCSampler

    def spy(*args, **kwargs):
        made.append((kwargs["proposal"], kwargs["trim"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(smc, "SMCSampler", spy)
    assert batch_genealogy.main(["--model", str(tmp_path / "m.npz"), "--configs", "2x30", "--samples", "20",
                                 "--batches", "3", "--reference-particles", "20", "--reference-batches", "1",
                                 "--proposals", "exact", "trimmed-skips", "--trim", "0.3"]) == 0
    out = capsys.readouterr().out
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| ")]
    assert [r[0].strip() for r in rows[1:]] == ["2 x 30, exact", "2 x 30, trimmed-skips",
                                                 "independent (20 runs x 20, one draw each)"]
    assert made == [("exact", 0.3), ("trimmed-skips", 0.3), ("exact", 0.3)]
    assert all(0.0 < float(r[8]) <= 30.0 for r in rows[1:3]) and rows[3][8].strip() == "-"
    assert "proposals exact trimmed-skips (trim 0.3)" in out


def test_the_mean_carries_its_standard_error():
    assert batch_genealogy._mean_se(np.array([1.0, 3.0])) == "2.0 +- 1.0"
    assert batch_genealogy._mean_se(np.array([5.0])) == "5.0"


def test_a_crowded_batch_is_named_with_its_most_common_sentence():
    """Three of four draws at length 2, two of them 'a b': named; two of four at one length: not crowded."""
    words = ["<unk>", "a", "b", "c"]
    tokens = np.array([[1, 2, 0], [1, 2, 0], [3, 3, 0], [1, 2, 3]])
    assert (batch_genealogy._crowded(tokens, np.array([2, 2, 2, 3]), words)
            == "3 of 4 draws at length 2, 2 of them 'a b'")
    assert batch_genealogy._crowded(tokens, np.array([2, 2, 3, 3]), words) is None


@pytest.mark.parametrize("text", ["8", "8x", "0x10", "ax3"])
def test_a_bad_config_names_the_form(text):
    with pytest.raises(argparse.ArgumentTypeError, match="RUNSxPARTICLES|must be >= 1"):
        batch_genealogy._config(text)

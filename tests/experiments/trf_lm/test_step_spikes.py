"""``experiments/trf_lm/step_spikes.py``: the batch mean it infers from a step (Eq. 38 solved for it) is the batch's."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.trf_lm import step_spikes
from trf.lm import backend as backend_module

TEXT = "\n".join(["the cat sat", "the dog sat down", "a cat ran home", "the end", "a dog ran"] * 12)


def test_the_inferred_batch_mean_is_the_batch_s_weighted_mean(tmp_path, monkeypatch, capsys):
    """The recorder's batch mean of the feature with the largest step equals ``K^-1 sum_k (pi_j / pi0_j) f(x_k)``
    of the batch that made the step (captured from the backend), and a clipped step is shown as clipped; the
    script prints its table and the quantiles."""
    path = tmp_path / "train.txt"
    path.write_text(TEXT + "\n")
    batches = {}
    original = backend_module.SentenceBackend.sample

    def capture(self, lam, zeta, pi0, n_samples, length_weight, seed):
        batch = original(self, lam, zeta, pi0, n_samples, length_weight, seed)
        batches[len(batches) + 1] = np.asarray(batch.feature_sum, dtype=np.float64) / n_samples
        return batch

    monkeypatch.setattr(backend_module.SentenceBackend, "sample", capture)
    recorded = []
    original_call = step_spikes.StepRecorder.__call__

    def keep(self, trainer, t, record):
        result = original_call(self, trainer, t, record)
        recorded.append(self)
        return result

    monkeypatch.setattr(step_spikes.StepRecorder, "__call__", keep)
    assert step_spikes.main(["--train", str(path), "--valid", str(path), "--iterations", "30", "--classes", "3",
                             "--log-every", "10", "--top", "3", "--max-sentence-move", "1e300"]) == 0
    out = capsys.readouterr().out
    assert "largest steps of 29 iterations" in out and "largest |d lambda| per iteration: median" in out
    # a bound no sentence reaches: Eq. (38)'s steps (the batch means below), and the moves it measured
    assert "largest move of a batch sentence's log-weight per iteration (before the bound): median" in out
    assert "shortened the steps of 0 sentences in 0 iterations" in out
    rows = recorded[-1].rows
    assert len(rows) == 29
    for t, _step, feature, _lam, mean, _raw in rows:
        assert mean == pytest.approx(batches[t][feature], rel=1e-6, abs=1e-9)
    assert step_spikes.main(["--train", str(path), "--valid", str(path), "--iterations", "30", "--classes", "3",
                             "--clip", "1e-4", "--top", "3"]) == 0
    assert "| clipped |" in capsys.readouterr().out
    batches.clear()
    assert step_spikes.main(["--train", str(path), "--valid", str(path), "--iterations", "30", "--classes", "3",
                             "--top", "3", "--smc-lengths", "stratified", "--smc-runs", "3", "--moment-bound"]) == 0
    out = capsys.readouterr().out
    assert "moment bound on, SMC lengths stratified" in out and "the moment bound shortened" in out
    for t, _step, feature, _lam, mean, _raw in recorded[-1].rows:
        assert mean == pytest.approx(batches[t][feature], rel=1e-6, abs=1e-9)


def test_the_batch_mean_behind_a_bounded_step_is_recovered():
    """With AugSA's moment bound a step is ``max(Eq. 38's step, log(p~ / b))``; the recorder tells the two apart and
    recovers ``b`` (and the Eq. 38 step the bound shortened) from either, for steps made by the trainer's own
    update."""
    from types import SimpleNamespace

    from trf.augsa import AugSA, AugSAConfig, SampleBatch

    p = np.array([2 / 27_990, 0.4, 0.01])
    backend = SimpleNamespace(n_features=3, m=1, pi=np.array([1.0]), empirical_mean=p,
                              feature_variance=p * (1 - p), initial_zeta=lambda: np.zeros(1), sample=None)
    trainer = AugSA(backend, AugSAConfig(n_samples=100, t_c=500.0, beta_lambda=0.0, t0=10**6, l2=4e-5,
                                         moment_bound=True), progress=False)
    recorder = step_spikes.StepRecorder()
    recorder.previous = np.array([1.65, 0.2, -0.3])
    state = trainer.init(recorder.previous, np.zeros(1))
    batch_mean = np.array([3.5, 0.45, 0.0])
    new, info = trainer.update(state, SampleBatch(np.ones(100, dtype=int), batch_mean * 100, {}))
    assert info["lambda_bounded"] == 1
    step = new.lam - state.lam
    b, raw = recorder.batch_mean(trainer, info, 0, step[0])
    assert b == pytest.approx(3.5, rel=1e-9) and raw < step[0] - 40          # bounded: -62.5 became -10.8
    for i in (1, 2):
        b, raw = recorder.batch_mean(trainer, info, i, step[i])
        assert b == pytest.approx(batch_mean[i], abs=1e-9) and raw is None   # Eq. 38 itself

"""Summaries of array targets: the bias (an L2 norm, so named in the table) never lies outside its own
interval, roundoff of an exact method is a zero error (not ``1.57e-16 [0, 0]``); plot ticks are plain."""

from __future__ import annotations

import re

import numpy as np

from samplers.harness import FunctionEstimator, FunctionProblem, Study

TRUTH = np.array([0.1, 0.2, 0.3, 0.4]) / 3.0


def _study(estimate, replicates=6):
    problem = FunctionProblem("p", lambda: {"probs": TRUTH, "z": 1.0 / 3.0})
    est = FunctionEstimator("e", estimate, warmup=False)
    return Study([problem], [est], budgets=[10, 1000], replicates=replicates, seed=4).run(progress=False)


def test_roundoff_of_an_exact_method_is_a_zero_error():
    def recomputed(p, n, s):  # the same numbers by another order of operations: errors of ~1e-17
        return {"probs": (np.array([0.1, 0.2, 0.3, 0.4]) * (1.0 / 3.0)) * (1 + (s % 3) * 1e-16),
                "z": 1.0 / 3.0 * (1 + (s % 3) * 1e-16)}

    res = _study(recomputed)
    assert any(r["error"] > 0 for r in res.rows), "negative control: the rows do carry roundoff errors"
    for cell in res.summary():
        assert cell["bias"] == cell["bias_lo"] == cell["bias_hi"] == cell["mse"] == cell["rmse"] == 0.0, cell
    table = res.to_markdown()
    assert "e-16" not in table and "e-17" not in table
    assert "L2 0 [0, 0]" in table


def test_array_bias_lies_in_its_interval_and_the_table_says_l2():
    def noisy(p, n, s):
        rng = np.random.default_rng(s)
        return {"probs": TRUTH + rng.normal(0, 1 / np.sqrt(n), TRUTH.size) + 1e-4, "z": 1 / 3 + rng.normal(0, 0.1)}

    res = _study(noisy)
    cells = res.summary()
    assert len(cells) == 4
    for cell in cells:
        assert cell["bias_lo"] <= cell["bias"] <= cell["bias_hi"], cell
    table = res.to_markdown()
    assert "bias [95% CI] (L2 norm for array targets)" in table.splitlines()[0]
    probs_lines = [ln for ln in table.splitlines() if "| probs |" in ln]
    z_lines = [ln for ln in table.splitlines() if "| z |" in ln]
    assert all("| L2 " in ln for ln in probs_lines) and not any("| L2 " in ln for ln in z_lines)


def test_log_axes_have_plain_non_overlapping_tick_labels():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from samplers.harness.writers import legible_log_ticks

    fig, ax = plt.subplots()
    ax.plot([3e4, 5e4], [0.031, 0.049])  # less than a decade on both axes
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        legible_log_ticks(axis)
    fig.canvas.draw()
    for axis in (ax.xaxis, ax.yaxis):
        lo, hi = sorted(axis.get_view_interval())
        major = [t.get_text() for t, v in zip(axis.get_ticklabels(), axis.get_majorticklocs()) if lo <= v <= hi]
        minor = [t.get_text() for t in axis.get_ticklabels(minor=True)]
        assert major and all(re.fullmatch(r"[0-9.e+-]+", m) for m in major), major
        assert not any(minor), minor
        assert len(major) == len(set(major))
    plt.close(fig)


def test_a_zero_mean_error_keeps_its_interval_around_it():
    """Errors +d, -d, +d, ... average to (about) zero while most resamples' mean errors have a positive
    norm: the interval still holds its point estimate (it is widened to, where needed)."""
    from samplers.harness import run_seed

    replicate = {run_seed(4, "p", "e", b, r): r for b in (10, 1000) for r in range(6)}
    d = np.array([0.01, -0.02, 0.03, 0.005])

    def alternating(p, n, s):
        sign = 1.0 if replicate[s] % 2 else -1.0
        return {"probs": TRUTH + sign * d, "z": 1.0 / 3.0 + sign * 0.01}

    cells = _study(alternating).summary()
    for cell in cells:
        assert cell["bias_lo"] <= cell["bias"] <= cell["bias_hi"], cell
    probs = [c for c in cells if c["target"] == "probs"]
    assert all(c["bias"] < 1e-12 and c["bias_lo"] <= c["bias"] and c["bias_hi"] > 1e-3 for c in probs)

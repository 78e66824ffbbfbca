"""The pruning bias-vs-time figure script: the dominance rule and the --summary path."""

from __future__ import annotations

import csv
import sys

from experiments.pruning_bias import figure


def _row(problem, estimator, budget, seconds, rmse):
    return {"problem": problem, "estimator": estimator, "budget": budget, "mean_seconds": seconds, "rmse": rmse}


def test_randomized_wins_only_against_fixed_masks_that_ran_no_slower():
    rows = [_row("p", "fixed-posterior", 1, 0.10, 2.0), _row("p", "fixed-posterior", 2, 0.50, 0.5),
            _row("p", "randomized", 4, 0.20, 1.0),     # beats the 0.10 s mask; the 0.50 s mask is slower
            _row("p", "randomized", 8, 0.60, 0.8)]     # the 0.50 s mask ran no slower and is better
    wins = figure.dominance(rows)
    assert len(wins) == 1 and wins[0].startswith("randomized 4 masks at 0.200 s")


def test_summary_path_prints_the_table_and_writes_the_figure(tmp_path, monkeypatch, capsys):
    summary = tmp_path / "summary.csv"
    rows = [_row("pcfg-a", "fixed-fom", 1, 0.01, 0.3), _row("pcfg-a", "randomized", 2, 0.02, 0.1),
            _row("pcfg-a", "exact", 1, 0.5, 0.0)]
    with open(summary, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    png = tmp_path / "fig.png"
    monkeypatch.setattr(sys, "argv", ["figure", "--summary", str(summary), "--out", str(png)])
    figure.main()
    out = capsys.readouterr().out
    assert "| pcfg-a | randomized | 2 | 0.0200 | 0.1000 |" in out
    assert "randomized 2 masks at 0.020 s: error 0.1 < best fixed 0.3" in out
    assert png.stat().st_size > 1000

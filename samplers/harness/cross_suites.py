"""The cross-family suites ``cross-quick`` (part of ``make demo``) and ``cross``: one problem of each
kind handed to every registered estimator that supports it (:mod:`samplers.harness.cross`), scored
against the ``trivial`` baseline; :func:`leaderboard` turns a study's summary into one table per
problem kind and target at matched warm cost.

The families are imported only when a suite is built (rdp needs torch; without it the rdp
estimators are skipped with a warning).
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .cross import load_estimators
from .registry import Suite

#: Cost caps (seconds per run, warm) of the leaderboard's matched-cost columns.
COST_CAPS = (0.003, 0.03, 0.3, 3.0, 30.0)


def _problems(full: bool) -> list:
    from ..models import Grammar, ising_grid, potts_grid, random_mrf
    from ..problems import ChainCRF, ChainCRFProblem, PairwiseMRFProblem, PCFGProblem

    problems = []
    if full:
        problems += [ChainCRFProblem("crf-T20-N20", ChainCRF.random(20, 20, scale=1.0, seed=1)),
                     ChainCRFProblem("crf-T20-N50-emb", ChainCRF.random(20, 50, scale=1.0, embedding_dim=8, seed=2)),
                     PairwiseMRFProblem("ising-10x10-J0.4", ising_grid(10, 10, coupling=0.4, field=0.1)),
                     PairwiseMRFProblem("potts-6x6-q3", potts_grid(6, 6, n_states=3, coupling=0.6, field=0.2)),
                     PairwiseMRFProblem("random-12-q3", random_mrf(12, 3, density=0.3, scale=0.7, seed=3))]
        gram = Grammar.random(10, 20, seed=4)
        problems += [PCFGProblem("pcfg-NT10-T10", gram, [f"w{i}" for i in (0, 3, 7, 1, 12, 5, 9, 2, 18, 4)]),
                     PCFGProblem("pcfg-split-NT12-T8", Grammar.random_split(6, 2, 20, seed=5),
                                 [f"w{i}" for i in (2, 11, 5, 0, 17, 3, 8, 14)])]
    else:
        problems += [ChainCRFProblem("crf-T8-N10", ChainCRF.random(8, 10, seed=0)),
                     PairwiseMRFProblem("ising-4x4", ising_grid(4, 4, coupling=0.4, field=0.1)),
                     PCFGProblem("pcfg-NT6-T6", Grammar.random(6, 8, seed=0), "w0 w1 w2 w3 w4 w5")]
    try:
        from trf.estimators import TRFProblem
    except ImportError:  # pragma: no cover - trf is part of mcsa
        return problems
    problems.append(TRFProblem.random("trf-V4-m6", "abcd", m=6))
    if full:
        problems.append(TRFProblem.random("trf-V6-m8", "abcdef", m=8, seed=7))
    return problems


def _suite(full: bool, replicates: int) -> Suite:
    estimators = load_estimators()
    budgets = {e.name: list(getattr(e, "budgets" if full else "quick_budgets", (1,))) for e in estimators}
    problems = _problems(full)
    kinds = sorted({p.kind for p in problems})
    return Suite(problems=problems, estimators=estimators, budgets=budgets, replicates=replicates,
                 description=("every estimator that supports a problem, on one problem of each kind "
                              f"({', '.join(kinds)}); score against the trivial baseline"),
                 baseline="trivial", extra={"kinds": {p.name: p.kind for p in problems}})


def cross_quick_suite(replicates: int = 3) -> Suite:
    """Small problems of every kind (chain CRF T=8 N=10, Ising 4x4, PCFG NT=6 T=6, TRF V=4 m=6),
    two budgets per estimator, 3 replicates: under a minute on 2 cores."""
    return _suite(False, replicates)


def cross_suite(replicates: int = 6) -> Suite:
    """The cross leaderboard: chain CRFs (N = 20, N = 50 with embeddings), Ising 10x10 and Potts 6x6
    (exact by junction tree), a random MRF, two PCFGs, two TRFs; four budgets per estimator."""
    return _suite(True, replicates)


# -- leaderboard -------------------------------------------------------------------------------------
def _float(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def leaderboard(summary: Sequence[dict[str, Any]], kinds: dict[str, str], caps: Sequence[float] = COST_CAPS) -> str:
    """Markdown leaderboard: per problem kind and target, each estimator's pooled score (mean over
    the kind's problems of the UAI-style 0-100 score) and RMSE with its bootstrap interval at the
    best budget whose warm mean time is within each cost cap.

    Parameters
    ----------
    summary : list of dict
        Rows of ``summary.csv`` (or :meth:`Results.summary`).
    kinds : dict
        ``{problem name: kind}`` (the suite's ``extra["kinds"]``).
    """
    cells: dict[tuple, list] = {}
    for row in summary:
        kind = kinds.get(row["problem"])
        if kind is None:
            continue
        cells.setdefault((kind, row["target"]), []).append(row)
    out = []
    for (kind, target) in sorted(cells):
        rows = cells[(kind, target)]
        problems = sorted({r["problem"] for r in rows})
        estimators = sorted({r["estimator"] for r in rows})
        out += [f"### {kind}: {target}", "",
                f"Problems: {', '.join(problems)}.  Cell: pooled score (mean over problems; RMSE "
                "[95% interval] when there is one problem) of the best budget whose mean warm time "
                "is within the cap; '-' = no budget that cheap.", "",
                "| estimator | " + " | ".join(f"<= {c:g} s" for c in caps) + " |",
                "| --- | " + " | ".join("---" for _ in caps) + " |"]
        for est in estimators:
            line = []
            for cap in caps:
                per_problem = []
                for prob in problems:
                    ok = [r for r in rows if r["problem"] == prob and r["estimator"] == est
                          and _float(r["mean_seconds"]) is not None and _float(r["mean_seconds"]) <= cap
                          and _float(r["rmse"]) is not None]
                    if ok:
                        per_problem.append(min(ok, key=lambda r: _float(r["rmse"])))
                if len(per_problem) < len(problems):
                    line.append("-")
                    continue
                scores = [_float(r.get("score")) for r in per_problem]
                score = "n/a" if any(s is None for s in scores) else f"{np.mean(scores):.0f}"
                if len(problems) == 1:
                    r = per_problem[0]
                    lo, hi = _float(r.get("rmse_lo")), _float(r.get("rmse_hi"))
                    interval = f" [{lo:.3g}, {hi:.3g}]" if lo is not None and hi is not None else ""
                    line.append(f"{score} ({_float(r['rmse']):.3g}{interval})")
                else:
                    line.append(score)
            out.append(f"| {est} | " + " | ".join(line) + " |")
        out.append("")
        if len(problems) > 1:
            out += ["Per problem, each estimator's smallest RMSE over its budgets: RMSE [95% interval] "
                    "(budget; mean warm seconds; evaluations).", "",
                    "| estimator | " + " | ".join(problems) + " |", "| --- | " + " | ".join("---" for _ in problems) + " |"]
            for est in estimators:
                line = []
                for prob in problems:
                    ok = [r for r in rows if r["problem"] == prob and r["estimator"] == est
                          and _float(r["rmse"]) is not None]
                    if not ok:
                        line.append("-")
                        continue
                    r = min(ok, key=lambda r: (_float(r["rmse"]), _float(r["mean_seconds"]) or 0.0))
                    lo, hi = _float(r.get("rmse_lo")), _float(r.get("rmse_hi"))
                    interval = f" [{lo:.3g}, {hi:.3g}]" if lo is not None and hi is not None else ""
                    evals = _float(r.get("mean_evaluations"))
                    cost = f"; {evals:.3g}" if evals is not None else ""
                    line.append(f"{_float(r['rmse']):.3g}{interval} ({r['budget']}; {_float(r['mean_seconds']):.3g} s"
                                f"{cost})")
                out.append(f"| {est} | " + " | ".join(line) + " |")
            out.append("")
    return "\n".join(out)


def leaderboard_from_dir(folder: str | Path, *, suite: str = "cross") -> str:
    """The :func:`leaderboard` of a study folder written by ``mcsa bench run --out folder``."""
    folder = Path(folder)
    path = folder / "summary.csv"
    if not path.is_file():
        raise ValueError(f"{folder} holds no summary.csv; run `mcsa bench run --suite {suite} --out {folder}` first")
    with open(path, newline="", encoding="utf-8") as fh:
        summary = list(csv.DictReader(fh))
    kinds = {p.name: p.kind for p in _problems(suite == "cross")}
    return leaderboard(summary, kinds)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m samplers.harness.cross_suites FOLDER [cross|cross-quick]``: print the leaderboard."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or len(args) > 2 or args[0] in ("-h", "--help"):
        print("usage: python -m samplers.harness.cross_suites FOLDER [cross|cross-quick]", file=sys.stderr)
        return 2
    suite = args[1] if len(args) == 2 else "cross"
    if suite not in ("cross", "cross-quick"):
        print(f"error: the suite must be cross or cross-quick, got {suite!r}", file=sys.stderr)
        return 2
    try:
        print(leaderboard_from_dir(args[0], suite=suite))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into head
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

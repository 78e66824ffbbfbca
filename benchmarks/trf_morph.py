"""Word-morphology benchmark (Sec. 6 of Wang, Ou & Tan 2017): accuracy table, TransMS speed, time split.

Runs ``trf.morph.run_morph`` on the web2 split (139K / 15K words, m = 25, K = 100, t_c = 100,
beta_lambda = 0.8, beta_zeta = 0.6, t0 = 200, t_max = 1000), prints the NLL table (exact normalisers,
ratios vs quasi-Newton), AugSA's TransMS throughput and sampling/update split, and copies the Fig.-3
plots to ``docs/figures/trf_*.png``.

    NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/trf_morph.py [--out /tmp/trf-morph] [--iters 1000]
    .venv/bin/python benchmarks/trf_morph.py --from-metrics /tmp/trf-morph/metrics.json   # reprint only
    .venv/bin/python benchmarks/trf_morph.py --exact-gradient-sa   # schedule diagnostic only (~1 min)

``--exact-gradient-sa`` runs the lambda recursion of Eq. (16) with the same learning rates and
variance rescaling but the exact model expectation p_lambda[f] instead of K sampled words, showing
how much of AugSA's gap to quasi-Newton at t_max is the schedule itself rather than sampling noise.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np

from trf import exact
from trf.augsa import AugSAConfig, learning_rates
from trf.data import ENGLISH_LOWER, Alphabet, encode_words, web2_split
from trf.model import TRF
from trf.morph import MorphSettings, metrics_table, run_morph
from trf.transms import WordBackend

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "figures"


def report(metrics: dict) -> str:
    lines = [f"web2 split: {metrics['n_train']} train / {metrics['n_test']} test words, m = {metrics['m']}, "
             f"d = {metrics['d']} features {metrics['feature_templates']}", "", metrics_table(metrics), ""]
    for key in ("augsa_empirical_pi0", "augsa_eq26_pi0"):
        r = metrics[key]
        total = r["sampling_seconds"] + r["update_seconds"]
        lines.append(f"{key}: TransMS {r['samples_per_second']:,.0f} samples/s, jump acceptance "
                     f"{r['jump_acceptance']:.1%}; time {total:.2f} s = sampling {r['sampling_seconds']:.2f} s "
                     f"({r['sampling_seconds'] / total:.0%}) + updates {r['update_seconds']:.2f} s")
    qn, wb3 = metrics["quasi_newton"], metrics["wb3"]
    lines.append(f"quasi-Newton: {qn['iterations']} L-BFGS iterations, max |grad| {qn['grad_norm']:.2g}, "
                 f"{qn['wall_seconds']:.1f} s; WB3 fit+eval {wb3['wall_seconds']:.1f} s")
    return "\n".join(lines)


def exact_gradient_sa(iters: int, seed: int) -> None:
    """Eq. (16) with exact expectations and the paper's schedule; prints the exact train NLL."""
    train_words, _ = web2_split(seed=seed)
    train = encode_words(train_words, Alphabet(ENGLISH_LOWER), 25)
    backend = WordBackend(train, n_chains=1)
    cfg = AugSAConfig()
    sigma = np.maximum(backend.feature_variance, cfg.variance_floor)
    lam = np.zeros(backend.n_features)
    for t in range(1, iters + 1):
        gamma, _ = learning_rates(t, cfg.t_c, cfg.beta_lambda, cfg.beta_zeta, cfg.t0)
        _, expect = exact.log_partition_and_expectations(backend.features, lam, backend.pi)
        lam += gamma / sigma * (backend.empirical_mean - expect)
        if t in (100, 300, iters):
            print(f"exact-gradient SA, t = {t}: train NLL {TRF(backend.features, backend.pi, lam).nll(train):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/trf-morph")
    parser.add_argument("--iters", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--from-metrics", help="print the report of an existing metrics.json")
    parser.add_argument("--no-figures", action="store_true", help="do not copy plots into docs/figures")
    parser.add_argument("--exact-gradient-sa", action="store_true", help="run only the schedule diagnostic")
    args = parser.parse_args()
    if args.exact_gradient_sa:
        exact_gradient_sa(args.iters, args.seed)
        return
    if args.from_metrics:
        metrics = json.loads(Path(args.from_metrics).read_text())
        out = Path(args.from_metrics).parent
    else:
        train_words, test_words = web2_split(seed=args.seed)
        alphabet = Alphabet(ENGLISH_LOWER)
        train, test = (encode_words(w, alphabet, 25) for w in (train_words, test_words))
        out = Path(args.out)
        metrics = run_morph(train, test, out, MorphSettings(iters=args.iters, seed=args.seed, progress=False))
    print(report(metrics))
    if not args.no_figures:
        FIGURES.mkdir(parents=True, exist_ok=True)
        for png in sorted(out.glob("fig3*.png")):
            shutil.copy(png, FIGURES / f"trf_{png.name}")


if __name__ == "__main__":
    main()

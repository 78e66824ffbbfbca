"""Word-morphology benchmark (Sec. 6 of Wang, Ou & Tan 2017): accuracy table, TransMS speed, time split.

Runs ``experiments.trf_morph.morph.run_morph`` on a random split of an installed English word list (``--words``:
the 154K most frequent ``wordfreq`` words, default, or the ``english-words`` web2 dictionary;
139K / 15K words, m = 25, K = 100, t_c = 100, beta_lambda = 0.8, beta_zeta = 0.6, t0 = 200,
t_max = 1000), ``--replicates`` AugSA seeds per variant, prints the NLL table (exact normalisers,
ratios vs quasi-Newton; AugSA cells mean ± se over the seeds), AugSA's TransMS throughput and
sampling/update split, and copies the Fig.-3 plots (first seed) to ``docs/figures/trf_*.png``
(``--figures-prefix``).

    NUMBA_CACHE_DIR=.numba_cache .venv/bin/python -m experiments.trf_morph.benchmark [--words web2] [--replicates 5]
    .venv/bin/python -m experiments.trf_morph.benchmark --from-metrics /tmp/trf-morph/metrics.json   # reprint only
    .venv/bin/python -m experiments.trf_morph.benchmark --exact-gradient-sa   # schedule diagnostic only (~1 min)

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

from experiments.trf_morph.morph import MorphSettings, metrics_table, run_morph
from trf import exact
from trf.augsa import AugSAConfig, learning_rates
from trf.data import ENGLISH_LOWER, WORD_LISTS, Alphabet, encode_words
from trf.model import TRF
from trf.transms import WordBackend

FIGURES = Path(__file__).resolve().parents[2] / "docs" / "figures"


def report(metrics: dict) -> str:
    lines = [f"{metrics.get('words', 'word list')} split: {metrics['n_train']} train / {metrics['n_test']} test words, m = {metrics['m']}, "
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


def exact_gradient_sa(iters: int, seed: int, words: str) -> None:
    """Eq. (16) with exact expectations and the paper's schedule; prints the exact train NLL."""
    train_words, _ = WORD_LISTS[words](seed=seed)
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
    parser.add_argument("--seed", type=int, default=0, help="split seed and first AugSA seed")
    parser.add_argument("--words", choices=sorted(WORD_LISTS), default="wordfreq")
    parser.add_argument("--replicates", type=int, default=5, help="AugSA seeds per variant")
    parser.add_argument("--figures-prefix", default="trf_", help="docs/figures/PREFIXfig3*.png")
    parser.add_argument("--from-metrics", help="print the report of an existing metrics.json")
    parser.add_argument("--no-figures", action="store_true", help="do not copy plots into docs/figures")
    parser.add_argument("--exact-gradient-sa", action="store_true", help="run only the schedule diagnostic")
    args = parser.parse_args()
    if args.exact_gradient_sa:
        exact_gradient_sa(args.iters, args.seed, args.words)
        return
    if args.from_metrics:
        metrics = json.loads(Path(args.from_metrics).read_text())
        out = Path(args.from_metrics).parent
    else:
        train_words, test_words = WORD_LISTS[args.words](seed=args.seed)
        alphabet = Alphabet(ENGLISH_LOWER)
        train, test = (encode_words(w, alphabet, 25) for w in (train_words, test_words))
        out = Path(args.out)
        metrics = run_morph(train, test, out, MorphSettings(iters=args.iters, seed=args.seed, progress=False,
                                                            replicates=args.replicates))
        metrics["words"] = args.words
        (out / "metrics.json").write_text(json.dumps(metrics, indent=1))
    print(report(metrics))
    if not args.no_figures:
        FIGURES.mkdir(parents=True, exist_ok=True)
        for png in sorted(out.glob("fig3*.png")):
            shutil.copy(png, FIGURES / f"{args.figures_prefix}{png.name}")


if __name__ == "__main__":
    main()

"""Experiment 1 (Sec. 5, Fig. 4 style): word inference from keyboard gestures.

Basic Gibbs, u-Gibbs (smart restarts) and the strong Doeblin sampler (eps = 1 / budget T), each
trained and tested at the same (expected) number of transitions per chain: T Gibbs sweeps for the
Gibbs methods, a u draw and then Geometric(1/T) sweeps (mean T) for Doeblin, as in the paper's
Sec. 5; 16 chains per example, first half of every chain burn-in, one setting (learning rate,
epochs, data) for all. Training as in the paper: the plug-in gradient for the two Gibbs
methods, Algorithm 1 with the exp(-(D+1)) weights for Doeblin ("doeblin"); "doeblin-cv" is Algorithm 1
with the leave-one-out control variate (same expectation, far lower variance); "doeblin-plugin" is an
ablation, the Doeblin chain trained with the Gibbs methods' plug-in gradient; "doeblin-cv-restarts" is
doeblin-cv's model tested as a strong Doeblin chain with in-chain restarts instead of the paper's
test-time sampler (a u draw, then Geometric(1/T) sweeps). u is fitted once and shared by all
methods; ``--train-u`` also trains it with Algorithm 1's dlog u term (Doeblin only). Accuracies: the
paper's per-sample word and character accuracy (fraction of post-burn-in samples with the right word /
mean character accuracy of the samples), and the same for the decoded (most frequent) word; "+-" is a
standard error over test examples. Paired differences (Doeblin minus a peer, same test examples) pool the examples of all seeds. The trend
table evaluates the models after each epoch at the first budget (epoch 0 = the Assumption 4.3 start).

``--gradient-variance`` instead measures how much the control variate lowers the variance of
Algorithm 1's gradient on real gestures.

Run (one core): NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache \\
    .venv/bin/python -m experiments.doeblin_gestures.benchmark
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from experiments.doeblin_gestures.model import (
    ACCURACIES,
    GestureModel,
    doeblin_gradient,
    fit_u,
    generate_gestures,
    make_lexicon,
    per_example_accuracy,
    train_gestures,
)

# label -> (sampler, Doeblin gradient estimator)
VARIANTS = {"basic-gibbs": ("basic-gibbs", "algorithm1"), "u-gibbs": ("u-gibbs", "algorithm1"),
            "doeblin": ("doeblin", "algorithm1"), "doeblin-cv": ("doeblin", "algorithm1-cv"),
            "doeblin-plugin": ("doeblin", "contrastive"), "doeblin-cv-restarts": ("doeblin-restarts", "algorithm1-cv")}

SHORT = {"sample_word_acc": "sample word", "sample_char_acc": "sample char", "word_acc": "decoded word",
         "char_acc": "decoded char"}
ORDER = ("sample_word_acc", "sample_char_acc", "word_acc", "char_acc")


def mean_se(v: np.ndarray) -> str:
    return f"{v.mean():.3f} +- {v.std(ddof=1) / np.sqrt(v.size):.3f}"


def load() -> str:
    return "load average " + " ".join(f"{a:.2f}" for a in os.getloadavg())


def seed_setup(args, seed: int):
    """Seed ``seed``'s lexicon, training gestures and the Assumption 4.3 start (u fitted, A = u)."""
    lex = make_lexicon(args.vocab, seed=seed)
    train = generate_gestures(lex, args.train, seed=seed + 1)
    return lex, train, fit_u(GestureModel(lex), train, n_epochs=args.u_epochs, seed=seed + 3)


def run_seed(args, seed: int, results: dict, trend: dict) -> None:
    t0 = time.perf_counter()
    lex, train, base = seed_setup(args, seed)
    test = generate_gestures(lex, args.test, seed=seed + 2)
    print(f"\nseed {seed}: u fitted ({args.u_epochs} epochs) in {time.perf_counter() - t0:.1f} s")
    print("| budget | method | " + " | ".join(SHORT[k] for k in ORDER) + " | train s |")
    print("| --- | --- | " + " | ".join("---" for _ in ORDER) + " | --- |")
    T_trend = args.budgets[0]

    def evaluate(model, method, T):
        return per_example_accuracy(model, test, method, T, n_chains=args.chains, seed=seed + 4)

    for T in args.budgets:
        for label in args.methods:
            method, estimator = VARIANTS[label]
            on_epoch = None
            if T == T_trend:
                trend.setdefault((label, 0), []).append(evaluate(base, method, T))
                on_epoch = lambda e, m, label=label, method=method, T=T: trend.setdefault((label, e), []).append(
                    evaluate(m, method, T))
            t = time.perf_counter()
            model = train_gestures(base, train, method, T, n_chains=args.chains, n_epochs=args.epochs, lr=args.lr,
                                   seed=seed + 5, doeblin_estimator=estimator, train_u=args.train_u,
                                   on_epoch=on_epoch)
            dt = time.perf_counter() - t
            acc = trend[(label, args.epochs)][-1] if T == T_trend else evaluate(model, method, T)
            results.setdefault((T, label), []).append(acc)
            print(f"| {T} | {label} | " + " | ".join(mean_se(acc[k]) for k in ORDER) + f" | {dt:.1f} |", flush=True)


def gradient_variance(args) -> None:
    """Spread of Algorithm 1's gradient estimate (``args.chains`` chains per call) without and with the
    leave-one-out control variate: total variance sum_j Var(g_j / Z) over ``args.repeats`` calls,
    for A's weights, on the first ``args.examples`` training gestures of seed ``args.seeds[0]`` at
    the Assumption 4.3 start (u fitted, A = u)."""
    seed = args.seeds[0]
    _, train, model = seed_setup(args, seed)
    print(f"Algorithm 1 gradient for A's weights, {args.chains} chains per call, {args.repeats} calls per cell; "
          f"total variance of g / Z, and the norm of its mean; start {load()}\n")
    print("| budget T (eps = 1/T) | word | plain: variance | plain: norm of mean | control variate: variance "
          "| control variate: norm of mean | variance ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ratios = []
    for T in args.budgets:
        for x, word in train[:args.examples]:
            cells = []
            for cv in (False, True):
                rng = np.random.default_rng(seed + 6)
                G = []
                for _ in range(args.repeats):
                    g, _, Z, _ = doeblin_gradient(model, x, word, 1.0 / T, args.chains, control_variate=cv, seed=rng)
                    G.append(g / Z)
                G = np.array(G)
                cells.append((float(((G - G.mean(0)) ** 2).sum(1).mean()), float(np.linalg.norm(G.mean(0)))))
            ratios.append(cells[0][0] / cells[1][0])
            print(f"| {T} | {word} | {cells[0][0]:.3g} | {cells[0][1]:.3g} | {cells[1][0]:.3g} | {cells[1][1]:.3g} "
                  f"| {ratios[-1]:.1f} |", flush=True)
    print(f"\nvariance ratio plain / control variate: median {np.median(ratios):.1f}, range {min(ratios):.1f}-"
          f"{max(ratios):.1f}; end {load()}")


def pooled(accs: list[dict], key: str) -> np.ndarray:
    return np.concatenate([a[key] for a in accs])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", type=int, default=2000)
    parser.add_argument("--train", type=int, default=300)
    parser.add_argument("--test", type=int, default=150)
    parser.add_argument("--chains", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--u-epochs", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--budgets", type=int, nargs="+", default=[20, 50, 100])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--train-u", action="store_true", help="Doeblin (Algorithm 1) also trains u's weights")
    parser.add_argument("--gradient-variance", action="store_true",
                        help="instead: the spread of Algorithm 1's gradient without and with the control variate")
    parser.add_argument("--examples", type=int, default=8, help="gestures for --gradient-variance")
    parser.add_argument("--repeats", type=int, default=30, help="gradient calls per cell for --gradient-variance")
    args = parser.parse_args()
    if args.gradient_variance:
        gradient_variance(args)
        return
    t0, c0 = time.perf_counter(), time.process_time()
    print(f"vocab {args.vocab} web2 words (length 3-6, Zipf s=1), train {args.train}, test {args.test} per seed, "
          f"{args.chains} chains/example, {args.epochs} epochs of A (lr {args.lr}), u {args.u_epochs} epochs"
          f"{' (then trained by Algorithm 1 too)' if args.train_u else ''}, "
          f"seeds {args.seeds}; start {load()}")
    results: dict = {}
    trend: dict = {}
    for seed in args.seeds:
        run_seed(args, seed, results, trend)

    n = args.test * len(args.seeds)
    print(f"\nAll seeds pooled ({n} test gestures): mean +- se")
    print("| budget | method | " + " | ".join(SHORT[k] for k in ORDER) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in ORDER) + " |")
    for T in args.budgets:
        for label in args.methods:
            accs = results[(T, label)]
            print(f"| {T} | {label} | " + " | ".join(mean_se(pooled(accs, k)) for k in ORDER) + " |")

    print("\nPaired differences, method minus peer (same test gestures, all seeds pooled): mean +- se")
    print("| budget | method | peer | " + " | ".join(SHORT[k] for k in ORDER) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in ORDER) + " |")
    ours = [m for m in args.methods if m.startswith("doeblin")]
    peers = [m for m in args.methods if not m.startswith("doeblin")]
    pairs = [(a, b) for a in ours for b in peers] + [(a, b) for i, a in enumerate(peers) for b in peers[:i]]
    for T in args.budgets:
        for label, peer in pairs:
            d = {k: pooled(results[(T, label)], k) - pooled(results[(T, peer)], k) for k in ACCURACIES}
            print(f"| {T} | {label} | {peer} | " + " | ".join(
                f"{d[k].mean():+.3f} +- {d[k].std(ddof=1) / np.sqrt(n):.3f}" for k in ORDER) + " |")

    print(f"\nTraining trend at budget {args.budgets[0]} (all seeds pooled; epoch 0 = Assumption 4.3 start): "
          "sample word / sample char accuracy")
    print("| epoch | " + " | ".join(args.methods) + " |")
    print("| --- | " + " | ".join("---" for _ in args.methods) + " |")
    for e in range(args.epochs + 1):
        cells = [f"{pooled(trend[(m, e)], 'sample_word_acc').mean():.3f} / "
                 f"{pooled(trend[(m, e)], 'sample_char_acc').mean():.3f}" for m in args.methods]
        print(f"| {e} | " + " | ".join(cells) + " |")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU; end {load()}")


if __name__ == "__main__":
    main()

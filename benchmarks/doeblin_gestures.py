"""Experiment 1 (Sec. 5, Fig. 4 style): word inference from keyboard gestures.

Basic Gibbs, u-Gibbs (smart restarts) and the strong Doeblin chain (eps = 1 / budget), each trained
and tested at the same number of transitions per chain (one transition = one Gibbs sweep or one
restart from u). Decoding: most frequent output word among the post-burn-in samples of all chains;
"sample word acc" is the paper's measure (fraction of post-burn-in samples with the right word).

Run: PYTHONPATH=. NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/doeblin_gestures.py
"""

from __future__ import annotations

import argparse
import time

from doeblin.gestures import (METHODS, GestureModel, evaluate_gestures, fit_u, generate_gestures,
                              make_lexicon, train_gestures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vocab", type=int, default=2000)
    parser.add_argument("--train", type=int, default=300)
    parser.add_argument("--test", type=int, default=150)
    parser.add_argument("--chains", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--budgets", type=int, nargs="+", default=[20, 50, 100])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    t0 = time.perf_counter()
    lex = make_lexicon(args.vocab, seed=args.seed)
    train = generate_gestures(lex, args.train, seed=args.seed + 1)
    test = generate_gestures(lex, args.test, seed=args.seed + 2)
    base = fit_u(GestureModel(lex), train, seed=args.seed + 3)
    print(f"vocab {args.vocab} web2 words (length 3-6, Zipf s=1), train {args.train}, test {args.test}, "
          f"{args.chains} chains/example, {args.epochs} epochs; u fitted in {time.perf_counter() - t0:.1f} s")
    print("| budget | method | word acc (untrained A) | char acc (untrained A) | word acc | char acc | sample word acc | train s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for T in args.budgets:
        for method in METHODS:
            before = evaluate_gestures(base, test, method, T, n_chains=args.chains, seed=args.seed + 4)
            t = time.perf_counter()
            model = train_gestures(base, train, method, T, n_chains=args.chains, n_epochs=args.epochs,
                                   seed=args.seed + 5)
            dt = time.perf_counter() - t
            after = evaluate_gestures(model, test, method, T, n_chains=args.chains, seed=args.seed + 4)
            print(f"| {T} | {method} | {before['word_acc']:.3f} | {before['char_acc']:.3f} | "
                  f"{after['word_acc']:.3f} | {after['char_acc']:.3f} | {after['sample_word_acc']:.3f} | {dt:.1f} |", flush=True)
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()

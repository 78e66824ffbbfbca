"""Time per randomized-pruning mask vs exact inside-outside: PCFG sentences and ITG sentence pairs.

Run: NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/pruning_speed.py

"aggressive" masks: M' = all ambiguous spans (confidence 0), so about 2/3 of the current tree's
constituents are selected positives each iteration; "default" masks: M' = up to n-2 mutually
compatible high-posterior spans of the coarse grammar.  Time per mask includes the selection step,
CreateMask, pruned inside, pruned outside and the tree draw.
"""

from __future__ import annotations

import time

import numpy as np

from samplers.pruning import Grammar, expected_counts, randomized_pruning
from samplers.pruning.itg import itg_expectations, itg_randomized_pruning
from samplers.pruning.suites import sentence_pair_problems

SETTINGS = {"default": {}, "aggressive": {"confidence": 0.0, "max_candidates": 10**9, "compatible": False}}


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    grammar = Grammar.random_split(5, 3, 20, seed=1, concentration=0.05, noise=1.0)
    rng = np.random.default_rng(0)
    expected_counts(grammar, ["w0", "w1", "w2"])  # compile
    randomized_pruning(grammar, ["w0", "w1", "w2", "w3"], 2, seed=0)
    print(f"grammar: {grammar.n_nonterminals} nonterminals, {grammar.n_binary} binary rules, "
          f"{len(grammar.terminals)} terminals")
    print("| length | exact s | masks | per-mask s (default) | kept (default) | ratio (default) "
          "| per-mask s (aggressive) | kept (aggressive) | ratio (aggressive) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in (10, 20, 30, 40):
        words = [grammar.terminals[i] for i in rng.integers(0, len(grammar.terminals), n)]
        exact = best_of(lambda words=words: expected_counts(grammar, words))
        row = [f"{n}", f"{exact:.4f}", "20"]
        for opts in SETTINGS.values():
            res = randomized_pruning(grammar, words, 20, seed=0, **opts)
            per_mask = float(np.median(res.trace["seconds"]))
            row += [f"{per_mask:.5f}", f"{res.trace['kept_fraction'].mean():.3f}", f"{exact / per_mask:.1f}x"]
        print("| " + " | ".join(row) + " |")
    itg_table()


def itg_table() -> None:
    """ITG sentence pairs: exact O(p^3 q^3) inside-outside vs one randomized-pruning mask."""
    problems = sentence_pair_problems([10, 16, 20, 24])
    itg_randomized_pruning(problems[0].itg, problems[0].e[:3], problems[0].f[:3], 2, seed=0)  # compile
    print()
    print("| p x q | p*q | exact s | per-mask s | |M'| | selected positives | ratio |")
    print("|---|---|---|---|---|---|---|")
    for prob in problems:
        exact = best_of(lambda prob=prob: itg_expectations(prob.itg, prob.e, prob.f), repeats=1)
        res = itg_randomized_pruning(prob.itg, prob.e, prob.f, 20, seed=0, confidence=0.02)
        per_mask = float(np.median(res.trace["seconds"]))
        print(f"| {len(prob.e)} x {len(prob.f)} | {len(prob.e) * len(prob.f)} | {exact:.3f} | {per_mask:.5f} | "
              f"{len(res.high_confidence)} | {res.trace['n_positive'].mean():.1f} | {exact / per_mask:.0f}x |")


if __name__ == "__main__":
    main()

"""Where the exact SMC proposal's work goes on a trained TRF LM, and whether its local tables could be reused.

Issue 27, item 2: the full feature set trains at 0.20-0.28x the iterations per second of ``w+c``, nearly all of it
in the SMC draw, whose cost is the successor entries that each history's local law visits (docs/trf-lm.md,
"Training speed").  For ``--runs`` SMC runs of ``--particles`` over lengths 1..m on ``--model``'s lambda (each run
is what one thread draws in one training iteration, so consecutive runs stand in for consecutive iterations of a
model that has stopped moving), this prints

* per template row, its share of the successor entries visited, and the share of its visited entries whose
  ``|lambda|`` is below 0.1 and 0.3 (what the trimmed proposal leaves out at those thresholds);
* how often a history's *context tuple* (the context index of every row: all that its local law depends on)
  repeats: within a run, among the histories the run has tabled before, and against the histories of the previous
  1, 5 and 20 runs -- by histories and by successor entries, and the longest window's repeats by history length.  A repeat is a table that a cache keyed by the tuple
  could reuse (within a run exactly, across iterations as an importance proposal weighed back by the new weights).

The instrumented run is the kernel's own position loop (``_smc_kernels.smc_log_z``'s steps, exact proposal) with
each distinct history's contexts read once more after its weighting; its ``log Z-hat_j`` are compared with the
kernel's at the same seed (printed: the largest difference), so the counts are of the run the trainer makes.

    .venv/bin/python benchmarks/trf_smc_work.py --model full.npz --runs 21
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from numba import njit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from trf.lm import _smc_kernels as K  # noqa: E402
from trf.lm.model import SentenceTRF  # noqa: E402
from trf.lm.smc import _NO_KEEP, SMCOutput, _smc_model, _smc_settings  # noqa: E402

THRESHOLDS = (0.1, 0.3)
LAGS = (1, 5, 20)


@njit(cache=True)
def _tuple_hash(found):
    h = np.int64(1469598103934665603)
    for r in range(found.size):
        h = (h ^ (found[r] + 7)) * np.int64(1099511628211)
    return h


@njit(cache=True)
def _record(model, now, scratch, p, visits, hashes, costs, n_rec):
    """For each distinct history at ``p``: its context tuple's hash, its entry count and its number of words
    ``p - 1`` (``costs[:, 0]``, ``costs[:, 1]``), and each row's visits."""
    ctx_start, succ_lam = model.succ.ctx_start, model.succ_lam
    for n in range(scratch.log_w.size):
        if scratch.first[now.ident[n]] != n:
            continue
        K.find_contexts(model, now.w[n], now.c[n], p, scratch.work)
        found = scratch.work.found
        listed = 0
        for r in range(found.size):
            k = found[r]
            if k < 0:
                continue
            lo, hi = ctx_start[k], ctx_start[k + 1]
            listed += hi - lo
            visits[r, 0] += hi - lo
            if K.word_final(model, r):
                for s in range(lo, hi):
                    for t in range(visits.shape[1] - 1):
                        if abs(succ_lam[s]) < THRESHOLDS[t]:
                            visits[r, t + 1] += 1
        hashes[n_rec[0]] = _tuple_hash(found)
        costs[n_rec[0], 0] = listed
        costs[n_rec[0], 1] = p - 1
        n_rec[0] += 1


@njit(cache=True)
def _instrumented_run(model, run, output, visits, hashes, costs, n_rec):
    """``smc_log_z``'s exact-proposal position loop, with :func:`_record` after each weighting."""
    stop = np.zeros(1, dtype=np.int64)
    np.random.seed(run.seed)
    now = K.new_particles(run, model.n_words, model.n_classes)
    children = K.new_particles(run, model.n_words, model.n_classes)
    scratch = K.new_scratch(run, model)
    log_prefix = 0.0
    for p in range(1, run.max_length + 2):
        if p <= run.max_length:
            K.weigh_particles(model, now, scratch, p, stop)
            _record(model, now, scratch, p, visits, hashes, costs, n_rec)
        else:
            K.end_weights(model, now, scratch, p, stop)
        if p >= 2:
            K.record_length(now, scratch, p - 1, log_prefix, output, run.known)
        if p > run.max_length:
            break
        log_prefix += K.log_mean_exp(scratch.log_w)
        K.resample(scratch, False)
        K.propagate(model, now, children, scratch, p, run.reference, stop)
        now, children = children, now


def _row_name(fa, r: int) -> str:
    n = fa.row_len[r]
    return " ".join(f"{'wc'[t]}{o}" for t, o in zip(fa.row_type[r, :n], fa.row_off[r, :n]))


def _repeats(runs: list[tuple[np.ndarray, np.ndarray]], lag: int) -> tuple[float, float, Counter]:
    """Shares (of histories, of entries) whose tuple was tabled earlier in the run or in the ``lag`` runs before
    (runs ``lag..`` only, so that every run counted has its full window), and the repeats by history length."""
    hit_n = hit_c = total_n = total_c = 0
    by_words: Counter = Counter()
    for i in range(lag, len(runs)):
        seen: set[int] = set()
        for h, _ in runs[i - lag:i]:
            seen.update(h.tolist())
        for h, (c, words) in zip(runs[i][0].tolist(), runs[i][1].tolist()):
            total_n += 1
            total_c += c
            if h in seen:
                hit_n += 1
                hit_c += c
                by_words[words] += 1
            seen.add(h)
    return hit_n / max(total_n, 1), hit_c / max(total_c, 1), by_words


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a trained model (mcsa trf train --out)")
    parser.add_argument("--runs", type=int, default=21, help="SMC runs (consecutive ones stand for iterations)")
    parser.add_argument("--particles", type=int, default=400, help="particles per run (the recipe's 400)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.runs < 1 or args.particles < 1:
        parser.error("--runs and --particles must be >= 1")
    path = Path(args.model)
    if not path.is_file():
        parser.error(f"--model {args.model!r}: no such file")
    try:
        _measure(path, args)
    except KeyboardInterrupt:
        raise SystemExit("trf_smc_work: interrupted; nothing is printed for an unfinished measurement (rerun with "
                         "fewer --runs)") from None


def _measure(path: Path, args: argparse.Namespace) -> None:
    model = SentenceTRF.load(path)
    bundle, _ = _smc_model(model)
    fa, m = bundle.features, model.m
    visits = np.zeros((fa.row_len.size, 1 + len(THRESHOLDS)), dtype=np.int64)
    runs, worst = [], 0.0
    start = time.perf_counter()
    for i in range(args.runs):
        settings = _smc_settings(args.particles, m, args.seed + i)
        hashes = np.zeros(args.particles * m, dtype=np.int64)
        costs = np.zeros((hashes.size, 2), dtype=np.int64)
        n_rec = np.zeros(1, dtype=np.int64)
        mine = SMCOutput(np.zeros(m), np.zeros(m), _NO_KEEP)
        _instrumented_run(bundle, settings, mine, visits, hashes, costs, n_rec)
        kernel = SMCOutput(np.zeros(m), np.zeros(m), _NO_KEEP)
        K.smc_log_z(bundle, settings, kernel, np.zeros(1, dtype=np.int64))
        worst = max(worst, float(np.max(np.abs(mine.log_z - kernel.log_z))))
        runs.append((hashes[:n_rec[0]], costs[:n_rec[0]]))
    n_hist = sum(h.size for h, _ in runs)
    print(f"{path.name}: {fa.row_len.size} template rows, m = {m}; {args.runs} runs of {args.particles} particles, "
          f"{n_hist:,} distinct histories tabled ({time.perf_counter() - start:.0f} s)")
    print(f"the instrumented runs against the kernel's at the same seeds: largest |log Z-hat_j difference| {worst:.1e}"
          + ("" if worst < 1e-9 else "  ** NOT THE KERNEL'S RUNS: the counts below do not describe it **"))
    total = visits[:, 0].sum()
    print(f"\nsuccessor entries per history: {total / max(n_hist, 1):,.0f}\n")
    print("| row | share of entries | " + " | ".join(f"of them |lambda| < {t}" for t in THRESHOLDS) + " |")
    print("|---|---|" + "---|" * len(THRESHOLDS))
    for r in range(fa.row_len.size):
        if visits[r, 0] == 0:
            continue
        word = K.word_final(bundle, r)
        shares = " | ".join(f"{visits[r, t + 1] / visits[r, 0]:.2f}" if word else "(class-final)"
                            for t in range(len(THRESHOLDS)))
        print(f"| {_row_name(fa, r)} | {visits[r, 0] / total:.3f} | {shares} |")
    print("| all | 1.000 | " + " | ".join(f"{visits[:, t + 1].sum() / total:.2f}" for t in range(len(THRESHOLDS)))
          + " |\n")
    print("| tables kept from | repeats, of histories | repeats, of entries |")
    print("|---|---|---|")
    by_words: Counter = Counter()
    for lag in (0, *LAGS):
        if lag >= len(runs):
            continue
        by_n, by_c, by_words = _repeats(runs, lag)
        last = lag
        where = "this run" if lag == 0 else f"this run and the {lag} before"
        print(f"| {where} | {by_n:.3f} | {by_c:.3f} |")
    if by_words:
        print(f"\nthe repeats against {last} runs by history length (words: histories): "
              + ", ".join(f"{k}: {v:,}" for k, v in sorted(by_words.items())))


if __name__ == "__main__":
    main()

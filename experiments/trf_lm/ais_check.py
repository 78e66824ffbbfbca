"""AIS check of a trained sentence TRF over *every* length: perplexity with AIS normalisers.

``experiments/trf_lm/benchmark.py`` checks the AugSA normalisers by AIS on short lengths only (its time budget).
This script takes the saved model and the prepared corpus of that benchmark and estimates
``log Z_j`` by separate AIS (:func:`trf.lm.check.ais_log_z`) for every length j = 1..m, in
parallel over lengths, then prints per length the AugSA and AIS values, the model's total mass
``sum_j pi_j Z_j(AIS) / Z_j(AugSA)`` (1 when the AugSA zeta are right), and the test perplexity of the
TRF and of the valid-tuned linear mixture TRF + KN5 with the AugSA and with the AIS normalisers.

    NUMBA_NUM_THREADS=1 .venv/bin/python experiments/trf_lm/ais_check.py --model /tmp/mcsa-fortunes/trf-lm-final.npz \
        --temperatures 1000 --jobs 2
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed


def _ais_one(model_path: str, j: int, temperatures: int, chains: int, seed: int) -> tuple[int, float, float]:
    import trf
    from trf.lm.check import ais_log_z

    model = trf.load(model_path)
    result = ais_log_z(model, j, n_temperatures=temperatures, n_chains=chains, seed=seed + j)
    return j, float(result.log_partition), float(result.stderr)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model saved by experiments/trf_lm/benchmark.py (--out)")
    parser.add_argument("--data-dir", default="/tmp/mcsa-fortunes", help="train/valid/test.txt of that benchmark")
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--temperatures", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1000)
    args = parser.parse_args(argv)

    import trf
    from trf.lm.check import log_prob_with_log_z
    from trf.lm.corpus import Vocabulary, encode_file
    from trf.lm.rescore import interpolate_linear, tune_linear_weight
    from trf.ngram import KneserNey, perplexity

    start = time.perf_counter()
    model = trf.load(args.model)
    data_dir = Path(args.data_dir)
    vocab = Vocabulary.build(data_dir / "train.txt", max_size=args.vocab)
    data = {k: encode_file(data_dir / f"{k}.txt", vocab) for k in ("train", "valid", "test")}
    lengths = list(range(model.m, 0, -1))          # longest first: better load balance
    rows = Parallel(n_jobs=args.jobs)(delayed(_ais_one)(args.model, j, args.temperatures, args.chains, args.seed)
                                      for j in lengths)
    ais = np.empty(model.m)
    se = np.empty(model.m)
    for j, log_z, err in rows:
        ais[j - 1], se[j - 1] = log_z, err
    augsa = model.zeta + model.log_z1()
    print(f"## separate AIS for every length 1..{model.m} ({args.chains} chains x {args.temperatures} "
          f"temperatures, {time.perf_counter() - start:.0f} s with {args.jobs} jobs)")
    print("| j | pi_j | AugSA log Z_j | AIS log Z_j | AIS stderr | AIS - AugSA |")
    print("|---|---|---|---|---|---|")
    for j in range(1, model.m + 1):
        print(f"| {j} | {model.pi[j - 1]:.4f} | {augsa[j - 1]:.2f} | {ais[j - 1]:.2f} | {se[j - 1]:.2f} | "
              f"{ais[j - 1] - augsa[j - 1]:+.2f} |")
    mass = float(np.sum(model.pi * np.exp(ais - augsa)))
    print(f"\ntotal mass of the TRF with the AugSA zeta, by AIS: {mass:.3f} (1 = normalised)")

    kn5 = KneserNey(5).fit(data["train"], len(vocab))
    print("\n| model | normalisers | test PPL |")
    print("|---|---|---|")
    kn_test, kn_valid = kn5.log_prob(data["test"]), kn5.log_prob(data["valid"])
    print(f"| KN5 | - | {perplexity(kn_test, data['test'].n_predicted):.2f} |")
    for name, log_z in (("AugSA", augsa), ("AIS", ais)):
        lp = {k: log_prob_with_log_z(model, data[k], log_z) for k in ("valid", "test")}
        print(f"| TRF | {name} | {perplexity(lp['test'], data['test'].n_predicted):.2f} |")
        w = tune_linear_weight(lp["valid"], kn_valid, data["valid"].n_predicted)
        mix = perplexity(interpolate_linear(lp["test"], kn_test, w), data["test"].n_predicted)
        print(f"| TRF + KN5 (linear, TRF weight {w:.2f} tuned on valid) | {name} | {mix:.2f} |")
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

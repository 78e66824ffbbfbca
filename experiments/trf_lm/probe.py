"""Probe a sentence TRF for mass its sampler misses: independent SMC runs over every length, their spread, and how far
AugSA's normaliser lies below them (issue 27, session 14).

For each proposal, ``--runs`` SMC runs of ``--particles`` particles (:func:`trf.lm.smc.smc_log_z`) estimate every
``log Z_j``; their pooled estimate is unbiased for ``Z_j`` (its log errs low), so ``SMC - (zeta_j + log Z_1)`` is (in
expectation) a lower bound of how far the model's own normaliser lies below the true one, and a spread of several
nats between runs means that a rare run found mass the others missed (the heaviest run's kept sentences are printed
with ``--show``).  ``--checkpoint`` swaps in the lambda and zeta of a training checkpoint (``mcsa trf train
--checkpoint``) of the same feature set, to probe a run while it trains.

    python -m experiments.trf_lm.probe --model full.npz --checkpoint full.ckpt --particles 3000 --runs 4 --show 20
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

LENGTHS = (1, 2, 3, 5, 8, 10, 15, 20, 30, 40)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="model file written by mcsa trf train")
    parser.add_argument("--checkpoint", default=None, help="training checkpoint whose lambda and zeta to probe")
    parser.add_argument("--particles", type=int, default=3000, help="particles per SMC run")
    parser.add_argument("--runs", type=int, default=4, help="independent SMC runs per proposal (>= 2)")
    parser.add_argument("--proposals", nargs="+", default=["partial", "exact"], choices=["exact", "partial"])
    parser.add_argument("--show", type=int, default=0, metavar="J", help="print the heaviest run's kept sentences at "
                        "length J (0: none)")
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args(argv)
    if args.particles < 1 or args.runs < 2:
        parser.error("--particles must be >= 1 and --runs >= 2")

    from trf.lm.model import SentenceTRF
    from trf.lm.smc import smc_log_z

    try:
        model = SentenceTRF.load(args.model)
    except (OSError, ValueError) as exc:
        print(f"probe: error: --model: {exc}", file=sys.stderr)
        return 2
    if args.checkpoint is not None:
        try:
            with np.load(args.checkpoint, allow_pickle=False) as state:
                lam, zeta = state["lam"], state["zeta"]
            model = SentenceTRF(model.vocab, model.features, model.pi, lam, zeta, model.meta, pooled=model.pooled)
        except (OSError, ValueError, KeyError, EOFError) as exc:
            print(f"probe: error: --checkpoint {args.checkpoint!r} is not a training checkpoint of --model's feature "
                  f"set (mcsa trf train --checkpoint): {exc}", file=sys.stderr)
            return 2
    if not 0 <= args.show <= model.m:
        parser.error(f"--show must be a length in 1..{model.m} (or 0)")
    lengths = [j for j in LENGTHS if j <= model.m]
    print(f"max |lambda| {np.abs(model.lam).max():.2f}; lengths {lengths}")
    for proposal in args.proposals:
        res = smc_log_z(model, n_particles=args.particles, n_replicates=args.runs, seed=args.seed,
                        proposal=proposal, n_keep=4 if args.show else 0)
        gap = res.log_z - (model.zeta + model.log_z1())[:res.log_z.size]
        print(f"{proposal}, {args.runs} x {args.particles} particles, {res.seconds:.1f} s")
        print("  SMC log Z - AugSA:", " ".join(f"{j}:{gap[j - 1]:+.2f}" for j in lengths))
        print("  spread of runs:   ", " ".join(f"{j}:{res.spread[j - 1]:.2f}" for j in lengths))
        if args.show:
            heavy = int(np.argmax(res.replicates[:, args.show - 1]))
            assert res.kept is not None
            for sentence in res.kept[heavy, args.show - 1, :, :args.show]:
                print("   ", " ".join(model.vocab.words[w] for w in sentence))
    return 0


if __name__ == "__main__":
    sys.exit(main())

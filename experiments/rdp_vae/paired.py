"""Paired comparison of two trained runs of ``experiments.rdp_vae.run`` on the same sentences.

Loads the checkpoints ``OUT/ckpt/<run>-s<seed>.pt``, re-estimates every sentence's log-likelihood
with the same importance-sampling settings as ``run.py`` (``--samples``, seed ``seed + 1000`` for test,
``seed`` for dev: the estimates are the ones behind the Table 5 numbers) and prints the mean
per-sentence NLL difference with its paired standard error (sentence-to-sentence variation cancels).

    python -m experiments.rdp_vae.paired /tmp/H-vae-reduced RDP-2000 TOPK-2000 --eval-limit 200 --samples 10
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path


def load_model(path: Path):
    """A :class:`experiments.rdp_vae.model.StructuredVAE` with the weights of a ``train_vae`` checkpoint (default BiLSTM encoder
    of ``run.py``: 64 units per direction; the checkpoint records the weights, not the encoder class)."""
    import torch

    from experiments.rdp_vae.model import StructuredVAE

    if not path.is_file():
        raise SystemExit(f"no checkpoint {path}")
    state = torch.load(path, weights_only=False)
    cfg = dict(state["model_config"])
    model = StructuredVAE(cfg.pop("vocab_size"), cfg.pop("n_states"), **cfg)
    model.load_state_dict(state["model"])
    return model


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", choices=("dev", "test"), default="test")
    p.add_argument("--eval-limit", type=int, default=200)
    p.add_argument("--samples", type=int, default=10)
    args = p.parse_args(argv)
    import torch

    from experiments.rdp_vae.model import evaluate_nll

    from .data import load_corpus

    torch.set_num_threads(1)
    _, data = load_corpus(limits={"train": 1, "dev": args.eval_limit, "test": args.eval_limit})
    seed = args.seed + (1000 if args.split == "test" else 0)
    lls = {}
    for run in (args.run_a, args.run_b):
        model = load_model(Path(args.out, "ckpt", f"{run.replace('/', '_')}-s{args.seed}.pt"))
        res = evaluate_nll(model, data[args.split], n_samples=args.samples, seed=seed)
        lls[run] = res["log_likelihoods"]
        print(f"{run}: {args.split} NLL {res['nll']:.2f} +- {res['se']:.2f} (sentences), IS error {res['is_se']:.3f}")
    diff = [b - a for a, b in zip(lls[args.run_a], lls[args.run_b])]  # NLL(a) - NLL(b)
    m = len(diff)
    mean = sum(diff) / m
    se = math.sqrt(sum((d - mean) ** 2 for d in diff) / (m - 1) / m)
    print(f"NLL({args.run_a}) - NLL({args.run_b}) = {mean:.3f} +- {se:.3f} (paired SE over {m} sentences; "
          f"{sum(d < 0 for d in diff)} sentences favour {args.run_a})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

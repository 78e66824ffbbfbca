"""Train and evaluate the structured VAE variants of Table 5 / Fig. 2 of the RDP paper on the fortunes corpus.

Each (run, seed) trains with :func:`experiments.rdp_vae.model.train_vae` (checkpointed under ``OUT/ckpt``, resumed when
interrupted), then writes ``OUT/results/<run>-s<seed>.json`` with dev and test NLL (importance
sampling, :func:`experiments.rdp_vae.model.evaluate_nll`) and the aggregated posterior's state counts over the
training subset (:func:`experiments.rdp_vae.model.aggregated_posterior`).  Finished (run, seed) pairs are skipped, so
the command can be re-run after an interruption.  ``python -m experiments.rdp_vae.table OUT`` prints
the tables and draws the figure.

Runs (K = budget x N states per step; "a/b" = K1/K2 as percentages of K, Fig. 2):

* ``FULL-100``; ``TOPK-100`` (100/0); ``RDP-100`` (50/50, the paper's K1 = K2); ``RDP-100-99/1``;
  ``RDP-100-10/90``: N = ``--n-small``, budget ``--budget-small``;
* ``TOPK-2000``, ``RDP-2000``: N = ``--n-large``, budget ``--budget-large``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

RUNS = ("FULL-100", "TOPK-100", "RDP-100", "RDP-100-99/1", "RDP-100-10/90", "TOPK-2000", "RDP-2000")
SHARES = {"TOPK": 1.0, "RDP": 0.5, "RDP-99/1": 0.99, "RDP-10/90": 0.10}


def variant_of(run: str, n_small: int, n_large: int, budget_small: float, budget_large: float):
    """(N, experiments.rdp_vae.model.Variant) of a run name in :data:`RUNS`."""
    from experiments.rdp_vae.model import Variant

    if run not in RUNS:
        raise ValueError(f"run must be one of {RUNS}, got {run!r}")
    kind, size, *split = run.split("-")
    n, budget = (n_small, budget_small) if size == "100" else (n_large, budget_large)
    if kind == "FULL":
        return n, Variant.full()
    if kind == "TOPK":
        return n, Variant.from_fractions("topk", n, budget)
    share = SHARES["RDP-" + split[0]] if split else SHARES["RDP"]
    k = max(2, round(budget * n))
    k1 = min(k - 1, round(share * k))  # at least one sampled state
    return n, Variant.rdp(k1, k - k1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="output folder (checkpoints, results/*.json)")
    parser.add_argument("--runs", nargs="+", default=list(RUNS), help=f"subset of {RUNS}")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--n-small", type=int, default=100)
    parser.add_argument("--n-large", type=int, default=2000)
    parser.add_argument("--budget-small", type=float, default=0.2, help="K / N at N small (paper: 0.2)")
    parser.add_argument("--budget-large", type=float, default=0.2, help="K / N at N large (paper: 0.2)")
    parser.add_argument("--steps-small", type=int, default=3000)
    parser.add_argument("--steps-large", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--train-limit", type=int, default=0, help="first this many training sentences (0: all)")
    parser.add_argument("--eval-limit", type=int, default=0, help="first this many dev/test sentences (0: all)")
    parser.add_argument("--posterior-limit", type=int, default=2000, help="training sentences for Fig. 2 counts")
    parser.add_argument("--samples", type=int, default=100, help="importance samples per sentence")
    parser.add_argument("--state-dim", type=int, default=64)
    parser.add_argument("--word-dim", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--encoder-hidden", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args(argv)
    bad = [r for r in args.runs if r not in RUNS]
    if bad:
        parser.error(f"--runs: unknown {bad}; choose from {RUNS}")
    for flag in ("n_small", "n_large", "steps_small", "steps_large", "batch_size", "samples", "threads"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be >= 1")

    import torch

    from experiments.rdp_vae.model import StructuredVAE, TrainConfig, aggregated_posterior, evaluate_nll, train_vae

    from .data import load_corpus

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    (out / "results").mkdir(parents=True, exist_ok=True)
    limits = {}
    if args.train_limit:
        limits["train"] = args.train_limit
    if args.eval_limit:
        limits["dev"] = limits["test"] = args.eval_limit
    vocab, data = load_corpus(limits=limits)
    (out / "settings.json").write_text(json.dumps(vars(args), indent=1))
    print(f"corpus: vocab {len(vocab)}, " + ", ".join(f"{k} {len(v)} sentences" for k, v in data.items()),
          flush=True)
    for seed in args.seeds:
        for run in args.runs:
            tag = f"{run.replace('/', '_')}-s{seed}"
            result_path = out / "results" / f"{tag}.json"
            if result_path.is_file():
                continue
            n, variant = variant_of(run, args.n_small, args.n_large, args.budget_small, args.budget_large)
            torch.manual_seed(seed)
            model = StructuredVAE(len(vocab), n, state_dim=args.state_dim, word_dim=args.word_dim,
                                  hidden_size=args.hidden, encoder_hidden=args.encoder_hidden)
            steps = args.steps_small if run.endswith("100") or "-100-" in run else args.steps_large
            config = TrainConfig(steps=steps, batch_size=args.batch_size, lr=args.lr, seed=seed, checkpoint_every=50)
            start = time.perf_counter()
            history = train_vae(model, data["train"], variant, config, checkpoint=out / "ckpt" / f"{tag}.pt",
                                progress=args.progress)
            train_s = time.perf_counter() - start
            start = time.perf_counter()
            dev = evaluate_nll(model, data["dev"], n_samples=args.samples, seed=seed)
            test = evaluate_nll(model, data["test"], n_samples=args.samples, seed=seed + 1000)
            counts = aggregated_posterior(model, data["train"].subset(min(args.posterior_limit, len(data["train"]))),
                                          seed=seed)
            eval_s = time.perf_counter() - start
            tail = history[-50:]
            result = {"run": run, "seed": seed, "n_states": n, "variant": variant.label, "k1": variant.k1,
                      "k2": variant.k2, "steps": steps, "train_seconds": train_s, "eval_seconds": eval_s,
                      "final_neg_elbo": sum(h[1] for h in tail) / len(tail), "dev": dev, "test": test,
                      "state_counts": counts.tolist(), "inactive_states": int((counts == 0).sum())}
            result_path.write_text(json.dumps(result))
            print(f"{run} seed {seed}: {variant.label} -ELBO {result['final_neg_elbo']:.2f}  dev NLL "
                  f"{dev['nll']:.2f} +- {dev['se']:.2f}  test NLL {test['nll']:.2f} +- {test['se']:.2f}  inactive "
                  f"{result['inactive_states']}/{n}  train {train_s:.0f}s eval {eval_s:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

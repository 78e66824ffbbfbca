"""How many independent sentences an AugSA batch from SMC holds: runs x particles against independent draws.

Training draws its K sentences per iteration from ``n_runs`` SMC runs (:class:`trf.lm.smc.SMCSampler`): a length's
draws pick a run with probability ``∝ Z-hat_j`` of that run, then one of the sentences it resampled at that length.
The sentences of one run share ancestors, so a batch repeats a few prefixes (experiments/trf_lm/methods.md, "Why the guard
fires").  For a trained model (its lambda and zeta, as the trainer's last iteration saw them) this prints, per
``--configs`` entry ``RUNSxPARTICLES``, over ``--batches`` batches of ``--samples`` sentences: the effective number
of runs the draws came from (``1 / sum p_r^2`` of the run probabilities, averaged over the drawn lengths), the
distinct sentences and distinct 3-word prefixes per batch (mean +- its standard error over the batches), the most
sentences of one batch sharing a 3-word prefix, and the most of one length (the draws' lengths follow the runs'
``Z-hat_j``, so one heavy sentence found at one length pulls the batch there), and how many batches put over half
their draws at one length; after the table, each such batch with its most common sentence.  The reference row
``independent`` draws each sentence from its own run of ``--reference-particles`` (``--samples`` runs per batch):
what a batch of independent draws looks like.  ``--smc-lengths stratified`` allots the lengths as ``mcsa trf train --smc-lengths stratified`` does (with ``pi0 = pi``).  A pooled model
(``--max-length``) is drawn over lengths ``1..m`` here, its sub-model ``m+`` as length ``m`` only.
``--proposals`` draws every config with each SMC proposal named (``mcsa trf train --smc-proposal``; ``--trim`` the
trimmed ones' threshold), one row each; the last column is the median over the batches of the smallest
end-of-sentence ESS over lengths and runs (what ``mcsa trf train --log-every`` prints).

    .venv/bin/python -m experiments.trf_lm.batch_genealogy --model full.npz --configs 2x400 8x100 32x25 8x400
    .venv/bin/python -m experiments.trf_lm.batch_genealogy --model full.npz --configs 2x400 \
        --proposals exact trimmed-skips --trim 0.5 --batches 40 --reference-batches 3
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import trf
import trf.lm.smc as smc
from samplers.argtypes import positive_float, positive_int
from trf.lm.backend import SMC_LENGTHS


def _config(text: str) -> tuple[int, int]:
    try:
        runs, particles = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected RUNSxPARTICLES such as 8x100, got {text!r}") from None
    if runs < 1 or particles < 1:
        raise argparse.ArgumentTypeError(f"runs and particles must be >= 1, got {text!r}")
    return runs, particles


class _RunWeights:
    """Wraps :func:`trf.lm.smc._pick_sentences` to record each length's effective number of runs."""

    def __init__(self) -> None:
        self.effective: list[tuple[float, int]] = []

    def __call__(self, log_z_j, keep_j, j, n, rng):
        p = smc._probabilities(log_z_j)
        self.effective.append((1.0 / float((p ** 2).sum()), n))
        return _PICK(log_z_j, keep_j, j, n, rng)


_PICK = smc._pick_sentences


def _batch_stats(tokens: np.ndarray, lengths: np.ndarray) -> tuple[int, int, int, int]:
    """Distinct sentences, distinct 3-word prefixes, the largest number sharing one prefix, and the largest number
    of one length."""
    sentences = [tuple(row[:j]) for row, j in zip(tokens, lengths)]
    prefixes = [s[:3] for s in sentences]
    _, counts = np.unique(np.array([p + (-1,) * (3 - len(p)) for p in prefixes]), axis=0, return_counts=True)
    return len(set(sentences)), int(counts.size), int(counts.max()), int(np.bincount(lengths).max())


def _mean_se(values: np.ndarray) -> str:
    """``mean +- standard error`` over the batches (the mean alone for one batch)."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return f"{values.mean():.1f}"
    return f"{values.mean():.1f} +- {values.std(ddof=1) / np.sqrt(values.size):.1f}"


def _crowded(tokens: np.ndarray, lengths: np.ndarray, words: list[str]) -> str | None:
    """For a batch with over half its draws at one length: that length, its count and its most common sentence."""
    counts = np.bincount(lengths)
    j = int(counts.argmax())
    if 2 * counts[j] <= lengths.size:
        return None
    sentences, n = np.unique(tokens[lengths == j, :j], axis=0, return_counts=True)
    top = sentences[n.argmax()]
    return (f"{counts[j]} of {lengths.size} draws at length {j}, {n.max()} of them "
            f"'{' '.join(words[t] for t in top)}'")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a trained sentence TRF (.npz)")
    parser.add_argument("--configs", nargs="+", type=_config, default=[(2, 400), (8, 100), (32, 25), (8, 400)],
                        help="RUNSxPARTICLES per batch (default: 2x400 8x100 32x25 8x400)")
    parser.add_argument("--samples", type=positive_int, default=100, help="K, sentences per batch (default 100)")
    parser.add_argument("--batches", type=positive_int, default=5)
    parser.add_argument("--reference-particles", type=positive_int, default=400)
    parser.add_argument("--reference-batches", type=positive_int, default=None,
                        help="batches of the independent reference row (default --batches; each costs --samples runs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--proposals", nargs="+", choices=smc.PROPOSALS, default=["exact"],
                        help="SMC proposals to draw every config with, one row each (default: exact)")
    parser.add_argument("--trim", type=positive_float, default=smc.TRIM,
                        help=f"the trimmed proposals' threshold on |lambda| (default {smc.TRIM})")
    parser.add_argument("--smc-lengths", choices=SMC_LENGTHS, default="drawn",
                        help="drawn (default) or stratified: K pi_j draws of each length j, as mcsa trf train "
                             "--smc-lengths stratified with pi0 = pi (the reference row draws its lengths)")
    args = parser.parse_args(argv)
    model = trf.load(args.model)
    m = model.pi.size
    log_len_weight = np.log(model.pi) - model.zeta
    strata = (np.arange(m), model.pi) if args.smc_lengths == "stratified" else None
    print(f"model {args.model}: {model.features.n_features} features, m = {m}; K = {args.samples}, "
          f"{args.batches} batches per row ({args.reference_batches or args.batches} for the reference); lengths "
          f"{args.smc_lengths}; proposals {' '.join(args.proposals)}"
          + (f" (trim {args.trim:g})" if set(args.proposals) & set(smc.TRIMMED) else ""))
    print("| runs x particles | effective runs | distinct sentences | distinct 3-word prefixes | most sharing one "
          "prefix | most of one length | batches with over half at one length | seconds per batch | smallest ESS "
          "(median) |")
    print("|---|---|---|---|---|---|---|---|---|")
    named = len(args.proposals) > 1 or args.proposals != ["exact"]
    rows = [(f"{r} x {p}" + (f", {proposal}" if named else ""), r, p, args.batches, proposal)
            for r, p in args.configs for proposal in args.proposals]
    rows.append((f"independent ({args.samples} runs x {args.reference_particles}, one draw each)", 0,
                 args.reference_particles, args.reference_batches or args.batches, "exact"))
    notes: list[str] = []
    for label, runs, particles, batches, proposal in rows:
        spy = _RunWeights()
        smc._pick_sentences = spy
        stats, seconds, crowded, ess = [], [], [], []
        try:
            sampler = smc.SMCSampler(model.features, m, n_particles=particles, n_runs=max(runs, 1), proposal=proposal,
                                     trim=args.trim)
            for b in range(batches):
                started = time.perf_counter()
                seed = args.seed + 1000 * b
                if runs:
                    tokens, lengths, info = sampler.draw(model.lam, log_len_weight, args.samples, seed, strata)
                    ess.append(info["smc_min_ess"])
                else:
                    draws = [sampler.draw(model.lam, log_len_weight, 1, seed + k)[:2] for k in range(args.samples)]
                    tokens = np.concatenate([t for t, _ in draws])
                    lengths = np.concatenate([n for _, n in draws])
                seconds.append(time.perf_counter() - started)
                stats.append(_batch_stats(tokens, lengths))
                crowded.append(_crowded(tokens, lengths, model.vocab.words))
        finally:
            smc._pick_sentences = _PICK
        eff = np.array(spy.effective)
        effective = "-" if not runs else f"{np.average(eff[:, 0], weights=eff[:, 1]):.1f}"
        s = np.array(stats)
        print(f"| {label} | {effective} | {_mean_se(s[:, 0])} | {_mean_se(s[:, 1])} | {s[:, 2].mean():.1f} "
              f"(max {s[:, 2].max()}) | {s[:, 3].mean():.1f} (max {s[:, 3].max()}) | "
              f"{(2 * s[:, 3] > args.samples).sum()} of {len(s)} | {np.mean(seconds):.2f} | "
              f"{f'{np.median(ess):.1f}' if ess else '-'} |")
        notes += [f"{label}, batch {b}: {text}" for b, text in enumerate(crowded) if text is not None]
    if notes:
        print("\nbatches with over half their draws at one length:")
        print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())

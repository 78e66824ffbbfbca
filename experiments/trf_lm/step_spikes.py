"""The largest lambda steps of AugSA training (Eq. 16 / 38): which features take them, and why.

Trains a sentence TRF (``w+c`` by default, the schedule of ``mcsa trf train --recipe full``'s base stage: K = 100,
t_c = 500, beta_lambda = 0, SMC with 400 particles, the ``features`` step rule) for ``--iterations`` iterations of the
first stage and records, at every iteration, the feature whose lambda moved most.  The step is Eq. (38),
``d lambda = gamma / (sigma + mu) (p~ - K^-1 sum_k (pi_j / pi0_j) f(x_k) - mu lambda)``, so the batch's weighted mean
of the feature, ``K^-1 sum_k ...``, follows from the step, the rate ``gamma`` and the variance ``sigma`` the trainer
used (a clipped step, ``--clip``, hides it: printed as ``clipped``, or ``shortened`` in an iteration where
``--max-sentence-move`` shortened steps).  The table lists the largest steps, each with the
feature (:meth:`trf.lm.features.SentenceFeatures.feature_text`), its training mean ``p~``, its variance and that batch
mean; then the quantiles of the per-iteration largest step and the dev log-likelihood every ``--log-every``
iterations (AugSA's zeta).

    .venv/bin/python -m experiments.trf_lm.step_spikes --train train.txt --valid valid.txt --iterations 3000
    .venv/bin/python -m experiments.trf_lm.step_spikes --train train.txt --valid valid.txt --iterations 3000 --clip 1
    .venv/bin/python -m experiments.trf_lm.step_spikes --train train.txt --valid valid.txt --iterations 3000 \
        --smc-lengths stratified
    .venv/bin/python -m experiments.trf_lm.step_spikes --train train.txt --valid valid.txt --iterations 3000 \
        --smc-known 1e-4

``--out`` saves the model, for a checked perplexity (``mcsa trf eval``) that does not read AugSA's zeta.
"""

from __future__ import annotations

import argparse
import logging
import sys

import numpy as np

from samplers.argtypes import positive_float, positive_int
from trf.lm.backend import SMC_LENGTHS, lm_config
from trf.lm.train import train_lm


class StepRecorder:
    """An AugSA callback that keeps, per iteration, the largest ``|d lambda|`` and what it implies of the batch."""

    def __init__(self) -> None:
        self.previous: np.ndarray | None = None
        self.rows: list[tuple[int, float, int, float, float | None, float | None]] = []
        self.trainer = None

    def __call__(self, trainer, t, record) -> bool:
        lam = trainer.state.lam
        if self.previous is not None and self.previous.size == lam.size and trainer.state.t == t:
            step = lam - self.previous
            i = int(np.argmax(np.abs(step)))
            self.rows.append((t, float(step[i]), i, float(lam[i]), *self.batch_mean(trainer, record, i, step[i])))
        self.previous = lam.copy()
        self.trainer = trainer
        return False

    def batch_mean(self, trainer, record, i: int, step: float) -> tuple[float | None, float | None]:
        """The batch mean ``b`` of feature ``i`` that made ``step``, and the step Eq. (38) gave before the moment
        bound shortened it (None when it did not): ``(None, None)`` for a clipped step.

        Eq. (38)'s step ``d(b) = gamma / (sigma + mu) (p~ - mu lambda - b)`` falls with ``b``; the moment bound
        (:attr:`trf.augsa.AugSAConfig.moment_bound`) replaces it by ``log(p~ / b)`` when that is larger, so a bounded
        step means ``b = p~ e^-step`` with ``d(b) < step``, and otherwise ``d(b) = step`` solves for ``b``.  In an
        iteration where the sentence-move bound (:attr:`trf.augsa.AugSAConfig.max_sentence_move`) shortened steps,
        the step no longer says ``b``: ``(None, None)`` too."""
        cfg = trainer.config
        if cfg.clip is not None and abs(step) >= cfg.clip * (1 - 1e-9) or record.get("sentences_bounded"):
            return None, None
        p, prev = float(trainer.backend.empirical_mean[i]), float(self.previous[i])
        mu = trainer.feature_l2(i)
        scale = record["gamma_lambda"] / (float(trainer.sigma[i]) + mu)
        if cfg.moment_bound and step < 0 and p > 0:
            b = p * np.exp(-step)
            raw = scale * (p - mu * prev - b)
            if raw < step * (1 + 1e-9):
                return float(b), float(raw)
        return p - mu * prev - step / scale, None  # Eq. (38) solved for the batch mean


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--valid", required=True)
    parser.add_argument("--features", default="w+c")
    parser.add_argument("--vocab-size", type=positive_int, default=10000)
    parser.add_argument("--classes", type=positive_int, default=None, help="default 200 (or the vocabulary size)")
    parser.add_argument("--iterations", type=positive_int, default=3000)
    parser.add_argument("--clip", type=positive_float, default=None, help="AugSA's clip (default: none)")
    parser.add_argument("--moment-bound", action="store_true",
                        help="AugSA's moment bound on each step (AugSAConfig.moment_bound; default off)")
    parser.add_argument("--max-sentence-move", type=positive_float, default=None, metavar="NATS",
                        help="AugSA's bound on each batch sentence's move (AugSAConfig.max_sentence_move; default off)")
    parser.add_argument("--max-length", type=positive_int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--top", type=positive_int, default=12)
    parser.add_argument("--log-every", type=positive_int, default=500)
    parser.add_argument("--out", default=None, help="also save the trained model (for mcsa trf eval)")
    parser.add_argument("--smc-lengths", choices=SMC_LENGTHS, default="drawn",
                        help="how the SMC batch gets its lengths (train_lm's smc_lengths; default drawn)")
    parser.add_argument("--smc-known", type=positive_float, default=None,
                        help="weigh the training sentences whose share of Z_j is at least this exactly (train_lm's "
                             "smc_known; default off)")
    parser.add_argument("--smc-runs", type=positive_int, default=None,
                        help="SMC runs per iteration (default one per Numba thread)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    recorder = StepRecorder()
    config = lm_config(n_samples=100, t_c=500.0, beta_lambda=0.0, t_max=args.iterations, t0=args.iterations,
                       clip=args.clip, moment_bound=args.moment_bound,
                       max_sentence_move=args.max_sentence_move)
    model, result = train_lm(args.train, valid_path=args.valid, vocab_size=args.vocab_size, features=args.features,
                        classes=args.classes, config=config, sampler="smc", smc_particles=400, step_rule="features", refine=0,
                        smc_lengths=args.smc_lengths, smc_runs=args.smc_runs, smc_known=args.smc_known,
                        progress=False, callbacks=[recorder], seed=args.seed, max_length=args.max_length,
                        log_every=args.log_every)
    if args.out is not None:
        model.save(args.out)
    backend = recorder.trainer.backend
    rows = sorted(recorder.rows, key=lambda r: -abs(r[1]))
    bounded = sum(r.get("lambda_bounded", 0) for r in result.history)
    print(f"\nlargest steps of {len(recorder.rows)} iterations (features {args.features}, clip {args.clip}, "
          f"moment bound {'on' if args.moment_bound else 'off'}, SMC lengths {args.smc_lengths}, known sentences "
          f"{args.smc_known or 'off'}):")
    print("| iteration | d lambda | Eq. 38 step (bounded) | lambda after | p~ (training mean) | variance | batch mean | "
          "feature |")
    print("|---|---|---|---|---|---|---|---|")
    for t, step, i, lam, mean, raw in rows[:args.top]:
        shown = ("shortened" if args.max_sentence_move else "clipped") if mean is None else f"{mean:.4f}"
        print(f"| {t} | {step:+.2f} | {'' if raw is None else f'{raw:+.2f}'} | {lam:+.2f} | "
              f"{backend.empirical_mean[i]:.2e} | {recorder.trainer.sigma[i]:.2e} | {shown} | "
              f"{model.features.feature_text(i, model.vocab.words)} |")
    sizes = np.abs([r[1] for r in recorder.rows])
    q = np.quantile(sizes, [0.5, 0.9, 0.99])
    print(f"largest |d lambda| per iteration: median {q[0]:.2f}, 90% {q[1]:.2f}, 99% {q[2]:.2f}, max {sizes.max():.2f}")
    if args.moment_bound:
        raws = [r[5] for r in recorder.rows if r[5] is not None]
        print(f"the moment bound shortened {bounded} steps (of every feature) in {len(recorder.rows)} iterations; "
              f"the largest step of {len(raws)} iterations, longest before it: "
              f"{min(raws, default=float('nan')):+.2f}")
    moves = np.array([r["largest_sentence_move"] for r in result.history if "largest_sentence_move" in r])
    if moves.size:
        q = np.quantile(moves, [0.5, 0.9, 0.99])
        print(f"largest move of a batch sentence's log-weight per iteration (before the bound): median {q[0]:.2f}, "
              f"90% {q[1]:.2f}, 99% {q[2]:.2f}, max {moves.max():.2f} nats; the bound "
              f"({args.max_sentence_move:g}) shortened the steps of "
              f"{sum(r['sentences_bounded'] for r in result.history if 'sentences_bounded' in r)} sentences in "
              f"{int(sum(1 for r in result.history if r.get('sentences_bounded')))} iterations")
    return 0


if __name__ == "__main__":
    sys.exit(main())

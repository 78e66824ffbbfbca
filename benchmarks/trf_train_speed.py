"""Training speed: AugSA iterations per second of a TRF LM with ``w+c`` against the paper's full feature set.

Issue 27, item 2: training with ``w+c+ws+cs+wsh+csh+tied`` (Table 3's best set) should run at >= 0.5 x the
iterations per second of ``w+c`` on the same corpus and sampler.  For each feature set the script builds the
features on ``--train`` (one sentence per line; the same vocabulary and exchange classes for every set), makes
the sentence backend with the default sampler (SMC, one run per Numba thread, so both cores work) and an AugSA
trainer with the documented fast schedule (K = ``--samples``, ``t_c`` 500, ``beta_lambda`` 0), and first trains
``--warm-iterations`` untimed iterations, so that lambda has left 0 and the sampler meets the contexts of a model
that is learning (the cost of an SMC table grows with the successor lists of the contexts it visits; at lambda = 0
the particles write uniform words, whose contexts are rare).  Then ``--repeats`` rounds time ``--block`` iterations
of each set in turn (A B A B ...; Numba compiled before), and the table prints the median iterations per second,
the median share of the time spent in the parallel SMC runs (the rest is serial: the bundle, the feature sum, the
update), and the median of the per-round ratios full / ``w+c``.  The machine
is shared, so absolute rates are noisy: read the ratios taken in the same run.

    .venv/bin/python benchmarks/trf_train_speed.py --train /tmp/mcsa-fortunes/train.txt

``--reference REV`` adds, after the warm-up, one SMC run of the SMC kernel of git revision ``REV``
(``trf/lm/_smc_kernels.py``, ``trf/lm/_feature_kernels.py`` and ``trf/lm/smc.py`` extracted with ``git show``;
revisions from dc3cb0e on, whose kernel takes ``(model, run, output, stop)``) against the current one on each
trainer's lambda and proposal, each kernel on the bundle its own revision builds (a proposal other than ``exact``
needs a revision that has it): whether both keep the same sentences, the largest difference of their estimates, and
the median time ratio over ``--repeats`` interleaved runs.

``--model FILE`` starts every trainer from a trained model (``mcsa trf train --out``, on the same ``--train``): its
vocabulary and word classes replace ``--vocab`` / ``--classes``, and each feature set starts from the model's weights
of its features (a set whose types open the model's, such as ``w+c`` in the full set) and the model's zeta.  The
cost of an SMC table grows as a model learns (a trained full-set model's histories visit about 9,000 word successors
per position on fortunes), so this times the speed at which most of a training run's time is spent.

``--proposals exact partial trimmed trimmed-skips`` trains each feature set with each SMC proposal (:data:`trf.lm.smc.PROPOSALS`; a
set that the partial proposal draws whole, such as ``w+c``, not with the partial one unless it comes first), the table adding each run's median
smallest end-of-sentence ESS; ``--quality-runs R`` then times ``R`` single-thread SMC runs of each proposal on each
trainer's lambda and prints their mean ESS and the spread of their ``log Z-hat_j`` (median over lengths), with
``spread^2 x seconds``, the work that a given error costs -- speed at equal statistical quality.

``--stop-every 1 10 --valid FILE`` also times, in every round, one train-dev gap of the Appendix-E stop rule on each
trainer's parameters (the two ``log_likelihood`` calls that ``AugSA`` makes for it: the whole ``--train`` and the
``--valid`` text scored) and prints the second stage's iterations per second when a gap is taken at every N-th
iteration (``AugSAConfig.stop_every``): ``1 / (seconds per iteration + seconds per gap / N)``.  The rounds above time
the first stage, which takes no gaps; a run's second stage (Eq. 24's decreasing rate, after ``t0``) pays them.

``--smc-known 1e-4 --smc-remember --max-sentence-move 500 --step-rule recipe`` give every trainer the settings of a
protocol run (experiments/trf_lm/seeds.py: the heavy training sentences, and the heavy drawn ones, weighed exactly in
every batch; the sentence-move bound and the step rules of ``--recipe full``, whose smaller steps keep a trained
model's lambda, and so the cost of its SMC tables, where a run spends its time); with ``--model`` give more than 50
``--warm-iterations``, since the known set is first chosen at the 51st draw.  With ``--stop-every 10 --valid FILE``
as well, the last table is the second stage of a protocol run less its divergence guard, progress log and
checkpoints (experiments/trf_lm/methods.md, "Where a full-set iteration's time goes").

The fortunes files are written by ``benchmarks/trf_score_speed.py`` (or ``experiments/trf_lm/benchmark.py``) from the
Debian packages ``fortunes fortunes-min fortune-anarchism``; any text with one sentence per line serves.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _trainer(train, vocab_size: int, word_class: np.ndarray, spec: str, proposal: str, args, model=None):
    from trf.augsa import AugSA
    from trf.lm.backend import SentenceBackend, lm_config
    from trf.lm.features import SentenceFeatures
    from trf.lm.train import step_rule_config

    feats = SentenceFeatures.build(train, vocab_size, spec, word_class=word_class)
    backend = SentenceBackend(train, feats, args.dev, sampler="smc", smc_particles=args.particles, smc_proposal=proposal,
                              max_length=args.max_length, smc_known=args.smc_known, smc_remember=args.smc_remember)
    backend.smc.trim = args.trim
    config = lm_config(n_samples=args.samples, t_c=500.0, beta_lambda=0.0, t0=10 ** 9, stop_window=None,
                       guard_every=0, seed=args.seed, max_sentence_move=args.max_sentence_move)
    trainer = AugSA(backend, step_rule_config(_rule(args.step_rule, spec), config, backend, train), progress=False)
    if model is not None:
        try:
            at = model.features.positions_of(feats)
        except ValueError as exc:
            raise SystemExit(f"--model {args.model!r}: {exc}; give --features that open its types "
                             f"({'+'.join(model.features.types)})") from None
        if model.zeta.size != trainer.zeta.size:
            raise SystemExit(f"--model {args.model!r} has {model.zeta.size} lengths, --train {trainer.zeta.size}: "
                             "give the text it was trained on")
        trainer.state = trainer.init(model.lam[at], model.zeta, 0)
    return feats, trainer


def _rule(step_rule: str, spec: str) -> str:
    """The lambda step rule of feature set ``spec``: ``step_rule``, or with ``"recipe"`` the one ``mcsa trf train
    --recipe full`` gives it (its base set's rule for the base set, ``w+c``; its own for any other)."""
    if step_rule != "recipe":
        return step_rule
    from trf.lm.cli import RECIPES

    recipe = RECIPES["full"]
    return recipe["base_step_rule"] if spec == recipe["base_features"] else recipe["step_rule"]


def _block(trainer, n: int) -> tuple[float, float, list[float]]:
    """Seconds of ``n`` iterations, the seconds spent in their SMC runs (the parallel part; NaN from a revision that
    does not report it) and each iteration's smallest SMC end-of-sentence ESS (over lengths and runs)."""
    start = time.perf_counter()
    ess, smc = [], 0.0
    for _ in range(n):
        trainer.state, info = trainer.step(trainer.state)
        ess.append(info["smc_min_ess"])
        smc += info.get("smc_seconds", np.nan)
    return time.perf_counter() - start, smc, ess


def _gap_seconds(trainer) -> float:
    """Seconds of one train-dev gap of the Appendix-E stop rule on the trainer's parameters (what ``AugSA`` computes
    for it: the mean log-likelihood of the training text and of the development text)."""
    start = time.perf_counter()
    for split in ("train", "dev"):
        trainer.backend.log_likelihood(trainer.lam, trainer.zeta, split)
    return time.perf_counter() - start


def _proposal_quality(trainer, proposals, particles: int, replicates: int, trim: float):
    """On the trainer's lambda, ``replicates`` SMC runs (one thread) of each proposal (``trim``: the trimmed one's
    threshold): CPU seconds per run (the process's, so time spent waiting for a core does not count), the mean
    end-of-sentence ESS over lengths and runs, and the median over lengths of the spread (standard deviation) of
    ``log Z-hat_j`` over the runs -- the error that a run's cost buys."""
    from trf.lm import _smc_kernels as sk
    from trf.lm.smc import TABLE_CACHE_BYTES

    smc = trainer.backend.smc
    m, stop = smc.m, np.zeros(1, dtype=np.int64)
    rows = []
    for proposal in proposals:
        bundle, _ = smc.structure.bundle(trainer.lam, proposal, trim)
        out, ess = np.zeros((replicates, m)), np.zeros((replicates, m))
        sk.smc_log_z(bundle, sk.SMCRun(particles, m, 1, np.zeros(0, dtype=np.int64), TABLE_CACHE_BYTES),
                     sk.SMCOutput(out[0], ess[0], np.zeros((m, 0, m), dtype=np.int64)), stop)  # compile
        start = time.process_time()
        for r in range(replicates):
            sk.smc_log_z(bundle, sk.SMCRun(particles, m, 100 + r, np.zeros(0, dtype=np.int64), TABLE_CACHE_BYTES),
                         sk.SMCOutput(out[r], ess[r], np.zeros((m, 0, m), dtype=np.int64)), stop)
        seconds = (time.process_time() - start) / replicates
        rows.append((proposal, seconds, float(ess.mean()), float(np.median(out.std(axis=0, ddof=1)))))
    return rows


REFERENCE_FILES = {  # reference module name -> (path at REV, import rewrites), for trf_transms_speed.load_reference
    "ref_feature_kernels": ("trf/lm/_feature_kernels.py", []),
    "ref_smc_kernels": ("trf/lm/_smc_kernels.py", [
        ("from trf.lm._feature_kernels import", "from ref_feature_kernels import"),
        ("from trf.lm._transms_kernels import HashedFeatures", "from typing import NamedTuple as HashedFeatures")]),
    "ref_smc": ("trf/lm/smc.py", [
        ("from trf.lm import _feature_kernels as fk", "import ref_feature_kernels as fk"),
        ("from trf.lm._smc_kernels import", "from ref_smc_kernels import")]),
}


def _kernel_ratio(ref, trainer, repeats: int, particles: int, proposal: str = "exact",
                  n_keep: int = 100) -> tuple[bool, float, float]:
    """One SMC run on the trainer's lambda with its ``proposal``, current kernel against the reference (``ref``: its
    modules), each on the bundle its revision builds (``exact``: as revisions before the proposals built it): whether the kept sentences are the same, the largest difference of their ``log Z_j``
    estimates, and the median time ratio current / reference.  The kernels may round differently (the current one
    sums a class's mass directly on its dense path), so a draw can differ where a uniform falls within rounding of
    a cumulative sum; then the runs part and differ by Monte Carlo noise."""
    from trf.lm import _smc_kernels as sk
    from trf.lm.smc import TABLE_CACHE_BYTES

    smc = trainer.backend.smc
    extra = () if proposal == "exact" else (proposal,)
    bundles = {"ref": ref["ref_smc"]._Structure(smc.structure.features).bundle(trainer.lam, *extra)[0],
               "new": smc.structure.bundle(trainer.lam, *extra)[0]}
    m, stop = smc.m, np.zeros(1, dtype=np.int64)
    run = sk.SMCRun(particles, m, 5, np.zeros(0, dtype=np.int64), TABLE_CACHE_BYTES)

    def go(kernel, bundle):
        out = sk.SMCOutput(np.zeros(m), np.zeros(m), np.zeros((m, n_keep, m), dtype=np.int64))
        kernel.smc_log_z(bundle, run, out, stop)
        return out

    a, b = go(ref["ref_smc_kernels"], bundles["ref"]), go(sk, bundles["new"])
    same = bool(np.array_equal(a.keep, b.keep))
    gap = float(np.abs(a.log_z - b.log_z).max())
    ratios = []
    for _ in range(repeats):
        start = time.perf_counter()
        go(ref["ref_smc_kernels"], bundles["ref"])
        middle = time.perf_counter()
        go(sk, bundles["new"])
        ratios.append((time.perf_counter() - middle) / (middle - start))
    return same, gap, float(np.median(ratios))


def _print_stop_rule_costs(runs, strides: list[int], n_dev: int) -> None:
    """The second stage's it/s when the stop rule takes a gap at every N-th iteration, from each round's iteration
    time and gap time (medians over rounds; ratios against the first run at the same N, per round)."""
    print(f"\nThe Appendix-E stop rule's train-dev gap (whole --train and {n_dev} --valid sentences scored), once per "
          "round on each trainer's parameters; second-stage it/s = 1 / (s per iteration + s per gap / N):")
    print("| features | s per iteration | s per gap | " + " | ".join(f"it/s, gap every {n} (/ first set)" for n in strides)
          + " |")
    print("|---|---|---|" + "---|" * len(strides))
    first = runs[0]
    for run in runs:
        cells = []
        for n in strides:
            rate = 1.0 / (1.0 / np.array(run["rates"]) + np.array(run["gaps"]) / n)
            base = 1.0 / (1.0 / np.array(first["rates"]) + np.array(first["gaps"]) / n)
            cells.append(f"{np.median(rate):.2f} ({np.median(rate / base):.2f})")
        print(f"| {run['spec']} / {run['proposal']} | {np.median(1.0 / np.array(run['rates'])):.3f} | "
              f"{np.median(run['gaps']):.3f} | " + " | ".join(cells) + " |")


def _corpus(args):
    """``(model, vocabulary, encoded --train, word classes)``: the ``--model``'s (None without one), or built on
    ``--train``."""
    from trf.lm.cluster import exchange_clustering
    from trf.lm.corpus import Vocabulary, encode_file

    if args.model is None:
        vocab = Vocabulary.build(args.train, max_size=args.vocab, encoding=args.encoding)
        train = encode_file(args.train, vocab, encoding=args.encoding)
        return None, vocab, train, exchange_clustering(train, len(vocab), args.classes, seed=0, max_passes=2).classes
    from trf.lm.model import SentenceTRF

    if not Path(args.model).is_file():
        raise SystemExit(f"--model {args.model!r} is not a file")
    model = SentenceTRF.load(args.model)
    args.vocab, args.classes = len(model.vocab), model.features.n_classes
    return model, model.vocab, encode_file(args.train, model.vocab, encoding=args.encoding), model.features.word_class


def _checked(args: argparse.Namespace) -> argparse.Namespace:
    """The flags checked (SystemExit naming the flag), ``args.trim`` resolved."""
    if not Path(args.train).is_file():
        raise SystemExit(f"--train {args.train!r} is not a file; write the fortunes files with "
                         "`python -m experiments.trf_lm.benchmark --prepare-only` (apt-get install fortunes fortunes-min "
                         "fortune-anarchism) "
                         "or give any text with one sentence per line")
    if args.max_length is not None and args.max_length < 1:
        raise SystemExit(f"--max-length must be >= 1, got {args.max_length}")
    for name in ("vocab", "classes", "samples", "particles", "block", "repeats"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.warm_iterations < 0:
        raise SystemExit(f"--warm-iterations must be >= 0, got {args.warm_iterations}")
    if args.stop_every and args.valid is None:
        raise SystemExit("--stop-every needs --valid, the development text whose log-likelihood the stop rule reads")
    if any(n < 1 for n in args.stop_every):
        raise SystemExit(f"--stop-every values must be >= 1, got {args.stop_every}")
    from samplers.textio import check_text_file

    for flag, path in (("--train", args.train), ("--valid", args.valid)):
        try:  # missing, a directory, empty, binary, not --encoding, an unknown --encoding: one line naming the flag
            if path is not None:
                check_text_file(path, flag, encoding=args.encoding)
        except (OSError, ValueError) as exc:
            raise SystemExit(str(exc)) from None
    if args.smc_known is not None and not 0 < args.smc_known <= 1:
        raise SystemExit(f"--smc-known is a share of a length's normaliser, in (0, 1]; got {args.smc_known:g}")
    if args.smc_remember and args.smc_known is None:
        raise SystemExit("--smc-remember needs --smc-known SHARE")
    if args.max_sentence_move is not None and not args.max_sentence_move > 0:
        raise SystemExit(f"--max-sentence-move must be > 0, got {args.max_sentence_move:g}")
    if args.quality_runs == 1 or args.quality_runs < 0:
        raise SystemExit(f"--quality-runs must be 0 or >= 2, got {args.quality_runs}")
    from trf.lm.smc import PROPOSALS, TRIM
    args.trim = TRIM if args.trim is None else args.trim
    if not args.trim >= 0:
        raise SystemExit(f"--trim must be >= 0, got {args.trim}")
    for proposal in args.proposals:
        if proposal not in PROPOSALS:
            raise SystemExit(f"--proposals: {proposal!r} is not one of {', '.join(PROPOSALS)}")
    return args


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", default="/tmp/mcsa-fortunes/train.txt", help="training text, one sentence a line")
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--classes", type=int, default=200)
    parser.add_argument("--features", nargs="+", default=["w+c", "w+c+ws+cs+wsh+csh+tied"],
                        help="feature sets; ratios are against the first")
    parser.add_argument("--samples", type=int, default=100, help="K draws per iteration")
    parser.add_argument("--max-length", type=int, default=None, help="pool longer sentences into one sub-model "
                        "(Sec. 5.4; as mcsa trf train --max-length, e.g. 40 for a KJV --model)")
    parser.add_argument("--particles", type=int, default=300, help="particles per SMC run")
    parser.add_argument("--warm-iterations", type=int, default=100, help="untimed iterations first")
    parser.add_argument("--block", type=int, default=5, help="iterations per timed block")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default=None, help="start every trainer from this trained model's weights "
                        "(its vocabulary and classes; trained on --train)")
    parser.add_argument("--reference", default=None, help="git revision whose SMC kernel to time against (A/B)")
    parser.add_argument("--proposals", nargs="+", default=["exact"], help="SMC proposals (exact, partial, trimmed, "
                        "trimmed-skips); each "
                        "feature set trains with each (a set that the partial proposal draws whole not with that one "
                        "unless it comes first)")
    parser.add_argument("--trim", type=float, default=None, help="the trimmed proposals' threshold on |lambda| "
                        "(default trf.lm.smc.TRIM, 0.1)")
    parser.add_argument("--encoding", default="utf-8", help="the text files' encoding (default utf-8)")
    parser.add_argument("--valid", default=None, help="development text (one sentence a line) for --stop-every")
    parser.add_argument("--stop-every", type=int, nargs="+", default=[], help="also time the stop rule's train-dev "
                        "gap and print the second stage's it/s with a gap every N iterations, for each N")
    parser.add_argument("--smc-known", type=float, default=None, help="weigh the training sentences of at least this "
                        "share of their length's normaliser exactly in every batch, as mcsa trf train --smc-known (the "
                        "seeds protocol's 1e-4; default off)")
    parser.add_argument("--smc-remember", action="store_true", help="with --smc-known, the heavy sentences that draws "
                        "found too (mcsa trf train --smc-remember)")
    parser.add_argument("--max-sentence-move", type=float, default=None, help="bound each draw's log-weight move, "
                        "as mcsa trf train --max-sentence-move (--recipe full: 500; default off)")
    from trf.lm.train import STEP_RULES

    parser.add_argument("--step-rule", default="fixed", choices=(*STEP_RULES, "recipe"),
                        help="the lambda step rule of every trainer (mcsa trf train --step-rule), or recipe: --recipe "
                        "full's (features for w+c, groups for a larger set); default fixed, the paper's step")
    parser.add_argument("--quality-runs", type=int, default=0, help="after the rounds, this many single SMC runs of "
                        "each proposal on each trainer's lambda: seconds, ESS and spread of log Z-hat_j")
    args = _checked(parser.parse_args(argv))
    import numba
    from trf_transms_speed import load_reference  # beside this script

    model, vocab, train, word_class = _corpus(args)
    from trf.lm.corpus import encode_file

    args.dev = None if args.valid is None else encode_file(args.valid, vocab, encoding=args.encoding)
    runs = []
    for spec in args.features:
        for proposal in args.proposals:
            feats, trainer = _trainer(train, len(vocab), word_class, spec, proposal, args, model)
            if (proposal == "partial" and proposal != args.proposals[0]
                    and trainer.backend.smc.structure.proposal_rows.all()):
                continue  # the partial proposal draws from every row: it is the exact one
            warm_start = time.perf_counter()
            _block(trainer, max(1, args.warm_iterations))   # compiles, then lets lambda leave 0
            runs.append({"spec": spec, "proposal": proposal, "feats": feats, "trainer": trainer,
                         "warm": time.perf_counter() - warm_start, "rates": [], "smc_share": [], "ess": [],
                         "gaps": []})
    for _ in range(args.repeats):
        for run in runs:
            seconds, smc, ess = _block(run["trainer"], args.block)
            run["rates"].append(args.block / seconds)
            run["smc_share"].append(smc / seconds)
            run["ess"].extend(ess)
            if args.stop_every:
                run["gaps"].append(_gap_seconds(run["trainer"]))
    base = np.array(runs[0]["rates"])
    print(f"{len(train)} sentences, vocabulary {len(vocab)}, {args.classes} classes; SMC {args.particles} particles x "
          f"{numba.get_num_threads()} runs, K = {args.samples}; "
          f"{'from ' + args.model + ', ' if args.model else ''}"
          f"{f'known sentences of share >= {args.smc_known:g}' if args.smc_known else 'no known sentences'}"
          f"{' (and remembered)' if args.smc_remember else ''}, sentence-move bound {args.max_sentence_move or 'off'}, "
          f"step rule {args.step_rule}; "
          f"{args.warm_iterations} untimed iterations, then "
          f"{args.repeats} interleaved rounds of {args.block}; load average {os.getloadavg()[0]:.1f}")
    print(f"| features (rows, features) | proposal | it/s (median) | SMC runs' share | smallest ESS (median) | "
          f"it/s / {runs[0]['spec']} (median of rounds) |")
    print("|---|---|---|---|---|---|")
    for run in runs:
        rates = np.array(run["rates"])
        print(f"| {run['spec']} ({run['feats'].rows.row_len.size}, {run['feats'].n_features:,}) | {run['proposal']} | "
              f"{np.median(rates):.2f} | {np.median(run['smc_share']):.2f} | {np.median(run['ess']):.1f} | "
              f"**{np.median(rates / base):.2f}** |")
    if args.stop_every:
        _print_stop_rule_costs(runs, args.stop_every, len(args.dev))
    if args.quality_runs:
        print(f"\n{args.quality_runs} SMC runs ({args.particles} particles, all lengths, one thread) of each proposal on "
              "each trainer's lambda:")
        print("| trained with | proposal | CPU seconds per run | mean ESS | spread of log Z-hat_j (median over j) | "
              "spread^2 x seconds (work at equal error) |")
        print("|---|---|---|---|---|---|")
        for run in runs:
            for proposal, seconds, ess, spread in _proposal_quality(run["trainer"], args.proposals, args.particles,
                                                                    args.quality_runs, args.trim):
                print(f"| {run['spec']} / {run['proposal']} | {proposal} | {seconds:.3f} | {ess:.1f} | {spread:.3f} | "
                      f"{spread ** 2 * seconds:.2e} |")
    if args.reference is None:
        return 0
    print(f"\nOne SMC run ({args.particles} particles, all lengths) on each trainer's bundle, current against "
          f"{args.reference}, median of {args.repeats} interleaved runs:")
    print("| features | proposal | same kept sentences | max abs log Z_j difference | time current / reference |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        ref = load_reference(args.reference, Path(folder), REFERENCE_FILES)
        checks = [(run["spec"], run["proposal"], *_kernel_ratio(ref, run["trainer"], args.repeats, args.particles,
                                                                run["proposal"])) for run in runs]
    for spec, proposal, same, gap, ratio in checks:
        print(f"| {spec} | {proposal} | {same} | {gap:.1e} | {ratio:.2f} |")
    return 0


if __name__ == "__main__":
    if "--reference" in sys.argv:
        from trf_transms_speed import private_numba_cache  # beside this script

        private_numba_cache()
    sys.exit(main())

"""``mcsa trf train | eval | score``: sentence TRF language models from the command line.

``train`` builds vocabulary, exchange classes and features from ``--train`` and runs AugSA (Sec. 7
defaults, SMC draws; ``--minutes`` bounds the time; ``--checkpoint`` + ``--resume`` continue an interrupted run
with the same iteration count and chain states); with ``--valid`` it then checks the normalisers on the dev
lengths as ``eval`` does (15% of the training time by default) and prints and keeps the dev perplexity.  ``eval`` prints the test perplexity (words plus one
end-of-sentence per sentence) with normalisers checked from both sides (forward and reverse AIS, or exact
on tiny vocabularies) and by sequential Monte Carlo (:func:`trf.lm.check.check_normalisers`), the
interval and the AugSA-zeta value,
warns when AugSA's zeta is outside the interval, optionally runs the older AIS variants, and writes JSON.
``score`` reads sentences on stdin and writes one natural-log probability per input line (``nan`` and one
warning on stderr for blank lines; ``--unk`` adds the number of unknown words, ``--jsonl`` writes JSON lines).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np

from samplers.argtypes import (
    flags_for,
    input_flag,
    nonnegative_float,
    nonnegative_int,
    number,
    positive_float,
    positive_int,
    text_encoding,
)
from samplers.textio import check_text_file, read_lines, write_text, write_with_fallback
from trf.io import check_model_path, check_output_file
from trf.lm.cycles import MAX_PERIOD
from trf.lm.smc import PROPOSALS, TRIM, TRIMMED
from trf.lm.train import BASE_SHARE, DEFAULT_FEATURES, FIRST_STAGE_SHARE, check_l2_by_type

#: Python argument names of ``train_lm`` whose data-dependent errors are reported with the flag (``--classes``).
TRAIN_FLAGS = {"features": "--features", "classes": "--classes", "max_size": "--vocab-size", "min_count": "--min-count",
               "max_length": "--max-length", "base_features": "--base-features", "base_share": "--base-share",
               "smc_runs": "--smc-runs", "l2_by_type": "--l2-by-type", "smc_cycles": "--smc-cycles"}

DEFAULT_MINUTES = 60.0
"""``mcsa trf train``'s time limit when neither ``--minutes`` nor ``--max-iterations`` bounds it."""

RECIPES = {
    "full": {"features": "w+c+ws+cs+wsh+csh+tied", "base_features": "w+c", "base_step_rule": "features",
             "step_rule": "groups", "samples": 100, "t_c": 500.0, "beta_lambda": 0.0,
             "smc_particles": 400, "max_sentence_move": 500.0, "first_stage_share": 0.25},
}
"""``mcsa trf train --recipe NAME``: flag values (by argparse destination) that fill the flags not given on the
command line.  ``full``: the paper's full feature set grown from ``w+c``, the settings of the measured one-command
runs of experiments/trf_lm/methods.md ("Growing the feature set"), with the sentence-move bound and the first stage ending at a
quarter of the time ("The sentence-move bound": the guard stayed quiet, checked PPL not worse)."""
UNSET_DEFAULTS = {"features": DEFAULT_FEATURES, "step_rule": "features"}
"""The defaults of the flags a recipe may set whose parser default is ``None`` (so that a given value is seen)."""


def _recipe_flag(dest: str, value) -> str:
    """``--flag value`` as a recipe's setting reads on the command line."""
    return f"--{dest.replace('_', '-')} {f'{value:g}' if isinstance(value, float) else value}"


def apply_recipe(args) -> list[str]:
    """Fill the ``mcsa trf train`` flags left unset in ``args`` from ``RECIPES[args.recipe]`` (the SMC particles only
    with ``--sampler smc``; the first stage's share of the time only with a time limit and no ``--t0``), then from
    :data:`UNSET_DEFAULTS`; return the recipe's settings that took effect, as ``--flag value`` strings."""
    applied = []
    for dest, value in (RECIPES[args.recipe] if args.recipe else {}).items():
        if getattr(args, dest) is None and _recipe_flag_applies(dest, args):
            setattr(args, dest, value)
            applied.append(_recipe_flag(dest, value))
    for dest, value in UNSET_DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, value)
    return applied


def _recipe_flag_applies(dest: str, args) -> bool:
    """Whether a recipe's value for ``dest`` goes with the flags given (``--smc-particles`` needs ``--sampler smc``;
    ``--first-stage-share`` a time limit, given or the default, and no ``--t0``), so that a recipe never causes a
    conflict the user did not write."""
    if dest == "smc_particles":
        return args.sampler == "smc"
    if dest == "first_stage_share":
        return args.t0 is None and (args.minutes is not None or args.max_iterations is None)
    return True


def _train(args) -> int:
    """``mcsa trf train``; the library's progress and guard messages (loggers under ``trf``) go to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("trf")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        return _train_logged(args)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def type_values(text: str) -> dict[str, float]:
    """``type=`` of ``--l2-by-type``: ``"w=2e-5,tied=8e-5"`` as ``{"w": 2e-5, "tied": 8e-5}`` (each a known feature
    type, once, with a finite value >= 0), refused at parse time otherwise."""
    from trf.lm.features import FEATURE_TYPES

    out: dict[str, float] = {}
    for part in text.split(","):
        name, eq, value = part.strip().partition("=")
        name = name.strip()
        if not eq or name not in FEATURE_TYPES or name in out:
            why = ("repeats" if name in out else "is not TYPE=MU with TYPE one of " + ", ".join(FEATURE_TYPES))
            raise argparse.ArgumentTypeError(f"{part.strip()!r} {why} (e.g. 'w=2e-5,tied=8e-5')")
        out[name] = nonnegative_float(value.strip())
    return out


def _check_sampler_flags(args) -> None:
    """A sampler's flags given with the other sampler are refused, not ignored."""
    other = {"smc": ("--chains", args.chains), "transms": ("--smc-particles", args.smc_particles)}
    flags = [other[args.sampler]] + ([("--smc-proposal", args.smc_proposal), ("--smc-runs", args.smc_runs),
                                      ("--smc-known", args.smc_known), ("--smc-trim", args.smc_trim),
                                      ("--smc-remember", args.smc_remember or None),
                                      ("--smc-cycles", args.smc_cycles)] if args.sampler == "transms" else [])
    for flag, value in flags:
        if value is not None:
            raise ValueError(f"{flag} does not apply to --sampler {args.sampler}")
    if args.smc_known is not None and args.smc_known > 1:
        raise ValueError(f"--smc-known is a share of a length's normaliser, in (0, 1]; got {args.smc_known:g}")
    if args.smc_trim is not None and args.sampler == "smc" and args.smc_proposal not in TRIMMED:
        raise ValueError(f"--smc-trim is the threshold of --smc-proposal trimmed or trimmed-skips; the proposal is "
                         f"{args.smc_proposal or 'exact'}: give --smc-proposal trimmed (or trimmed-skips) too, or leave out "
                         "--smc-trim")
    if args.smc_remember and args.smc_known is None:
        raise ValueError("--smc-remember needs --smc-known SHARE (the share of its length's normaliser a found "
                         "sentence must hold)")
    if args.smc_cycles is not None and args.smc_known is None:
        raise ValueError("--smc-cycles needs --smc-known SHARE (the loops join the known sentences, which hold a "
                         "share of their length's normaliser)")


def _config(args):
    """The AugSA settings of ``mcsa trf train``: :func:`trf.lm.backend.lm_config` with the flags given, the stop
    rule's window checked against its gap stride (a ValueError naming both flags)."""
    from trf.lm.backend import lm_config

    overrides = {k: v for k, v in {"n_samples": args.samples, "t_max": args.max_iterations, "t_c": args.t_c,
                               "beta_lambda": args.beta_lambda, "t0": args.t0, "l2": args.l2,
                               "clip": args.clip, "moment_bound": args.moment_bound,
                               "max_sentence_move": args.max_sentence_move or None,  # 0: no bound
                               "on_violation": args.on_violation,
                               "stop_tol": args.stop_tol}.items() if v is not None}
    if args.stop_window is not None:
        overrides["stop_window"] = args.stop_window or None  # 0: no stop rule
    if args.stop_every is not None:
        overrides["stop_every"] = args.stop_every
    config = lm_config(**overrides)
    window, every = config.stop_window, config.stop_every
    if window is not None and window % every:
        raise ValueError(f"--stop-window {window} is not a multiple of --stop-every {every} (each window of the "
                         "stop rule holds --stop-window / --stop-every train-dev gaps); give --stop-every 1, the "
                         "paper's gap at every iteration, or a divisor of --stop-window")
    return config


def _train_logged(args) -> int:
    from trf.augsa import CHECKPOINT_KIND
    from trf.io import read_npz
    from trf.lm.train import DEFAULT_CLASSES, check_growth, train_and_check

    base_given = args.base_features is not None
    applied = apply_recipe(args)
    if applied:
        print(f"mcsa trf train: note: --recipe {args.recipe}: {' '.join(applied)} (flags given on the command line "
              "take precedence)", file=sys.stderr)
    config = _config(args)
    check_output_file(args.out, "--out")
    check_output_file(args.checkpoint, "--checkpoint")
    check_text_file(args.train, "--train", encoding=args.encoding)
    if args.valid is not None:
        check_text_file(args.valid, "--valid", encoding=args.encoding)
    if args.resume:  # never train from scratch when asked to continue
        if args.checkpoint is None:
            raise ValueError("--resume needs --checkpoint FILE, the checkpoint to continue from")
        if not Path(args.checkpoint).is_file():
            raise ValueError(f"--resume: the --checkpoint file {args.checkpoint!r} does not exist (drop --resume to "
                             "train from scratch)")
        try:
            _, saved = read_npz(args.checkpoint, CHECKPOINT_KIND)
        except ValueError as exc:
            raise ValueError(f"--checkpoint {args.checkpoint!r} cannot be resumed from: {exc}") from None
        trained_minutes = float(saved.get("elapsed") or 0.0) / 60
    _check_sampler_flags(args)
    with flags_for(TRAIN_FLAGS):
        try:
            check_growth(args.features, args.base_features)  # before the notes below: a bad set is the only message
        except ValueError:
            if base_given or args.base_features is None:
                raise
            raise ValueError(f"--recipe {args.recipe} grows --features from {args.base_features}: --features "
                             f"{args.features!r} must begin with its types and add more (e.g. "
                             f"{RECIPES[args.recipe]['features']!r}); or give --base-features yourself") from None
    if args.l2_by_type:
        with flags_for(TRAIN_FLAGS):
            check_l2_by_type(args.l2_by_type, args.features, flag="l2_by_type")
    minutes = args.minutes
    if minutes is None and args.max_iterations is None:
        minutes = DEFAULT_MINUTES
        print(f"mcsa trf train: note: neither --minutes nor --max-iterations given: training for at most "
              f"{minutes:g} minutes", file=sys.stderr)
    if args.resume and minutes is not None and trained_minutes >= minutes:
        print(f"mcsa trf train: note: the --checkpoint has trained for {trained_minutes:.4g} minutes, all of --minutes "
              f"{minutes:g} (it counts the time before --resume): one more iteration, then the model; a larger "
              "--minutes trains on", file=sys.stderr)
    # with a time limit the stages follow the time (unless --t0 fixes them in iterations)
    if args.first_stage_share is not None and args.t0 is not None:
        raise ValueError("--first-stage-share and --t0 both set where the first stage ends; give one of them")
    if args.first_stage_share is not None and minutes is None:
        raise ValueError("--first-stage-share needs a time limit (--minutes); with --max-iterations alone, end the "
                         "first stage with --t0")
    share = None
    if minutes is not None and args.t0 is None:
        share = FIRST_STAGE_SHARE if args.first_stage_share is None else args.first_stage_share
    notes = _CheckNotes("mcsa trf train")
    with flags_for(TRAIN_FLAGS):
        trained = train_and_check(
            args.train, valid_path=args.valid, check=None if args.no_check else _check_kw(args, notes), valid_flag="--valid",
            features=args.features, classes=args.classes, vocab_size=args.vocab_size,
            min_count=args.min_count, max_length=args.max_length, config=config,
            n_chains=30 if args.chains is None else args.chains,
            seed=args.seed, checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every, resume=args.resume,
            time_limit=None if minutes is None else minutes * 60, first_stage_share=share,
            progress=not args.quiet, log_every=args.log_every, step_rule=args.step_rule, refine=args.refine,
            sampler=args.sampler, smc_particles=300 if args.smc_particles is None else args.smc_particles,
            smc_proposal=args.smc_proposal or "exact", smc_runs=args.smc_runs, smc_known=args.smc_known,
            smc_remember=args.smc_remember, smc_trim=TRIM if args.smc_trim is None else args.smc_trim,
            smc_cycles=MAX_PERIOD if args.smc_cycles is None else args.smc_cycles,
            base_features=args.base_features, base_share=args.base_share,
            base_step_rule=args.base_step_rule, l2_by_type=args.l2_by_type,
            encoding=args.encoding,
            save=lambda m: write_with_fallback(m.save, args.out, "--out", what="the trained model"))
    model, result = trained.model, trained.result
    if args.classes is None and model.features.n_classes < DEFAULT_CLASSES:
        print(f"mcsa trf train: note: --classes defaults to {DEFAULT_CLASSES}; the vocabulary has "
              f"{len(model.vocab)} words, so {model.features.n_classes} classes", file=sys.stderr)
    if result.guard_message:
        print(f"mcsa trf train: {result.guard_message}", file=sys.stderr)
    if model.meta["sentence_bound_iterations"] is not None:
        print(f"mcsa trf train: note: the sentence-move bound (--max-sentence-move {args.max_sentence_move:g}) shortened "
              f"the step in {model.meta['sentence_bound_iterations']:,} of {result.t:,} iterations", file=sys.stderr)
    how = f"stopped by {result.stop_reason}" if result.stopped_early else "reached t_max"
    plural = "" if result.t == 1 else "s"
    print(f"trained {result.t} iteration{plural} ({how}), {model.features.n_features} features, "
          f"{model.features.n_classes} classes, vocabulary {len(model.vocab)} -> {args.out}")
    if trained.dev_check is not None:
        if trained.dev_left_out:
            print(f"mcsa trf train: check: {trained.dev_left_out} dev sentences longer than m={model.m} words are "
                  "left out of the dev perplexity (no sub-model for them; --max-length pools them)", file=sys.stderr)
        _print_checked(trained.dev_check, notes, what="dev ")
    return 0


def _add_encoding_flag(parser, what: str) -> None:
    parser.add_argument("--encoding", type=text_encoding, default="utf-8",
                        help=f"text encoding of {what} (a Python codec name: utf-8, latin-1, utf-16, ...)")


def _add_check_flags(parser, what: str) -> None:
    """The ``--no-check`` and ``--check-*`` flags of ``eval`` (test perplexity) and ``train`` (dev perplexity)."""
    parser.add_argument("--no-check", action="store_true",
                        help=f"skip the two-sided check of the normalisers for {what} (report AugSA's zeta only)")
    parser.add_argument("--check-temperatures", type=number(int, 2), default=None,
                        help="AIS temperatures for the check at every length (default: in proportion to the length, "
                             "scaled to fit --check-seconds)")
    parser.add_argument("--check-base", choices=("unigram", "uniform"), default="unigram",
                        help="AIS base law of the check: the model's unigram part (exact draws) or uniform words")
    parser.add_argument("--check-seconds", type=positive_float, default=None,
                        help="time for the check (default 15%% of the recorded training time, at least 10 s)")
    parser.add_argument("--check-chains", type=number(int, 2), default=10, help="AIS chains per length and direction")
    parser.add_argument("--check-particles", type=nonnegative_int, default=None,
                        help="SMC particles per run of the check (0: no SMC; default: a quarter of --check-seconds' "
                             "worth)")
    parser.add_argument("--check-conditional-particles", type=nonnegative_int, default=None,
                        help="particles per conditional SMC run of the check, the upper side (0: none; default: "
                             "40%% of --check-seconds' worth)")
    parser.add_argument("--check-effort", type=_effort, default=None, metavar="T,P[,C]",
                        help="a fixed effort instead of a time budget: T AIS temperatures per run, P particles per SMC "
                             "run and C per conditional SMC run (default min(P, 1000)); the same work, and at a fixed "
                             "--seed the same result, on any machine (overrides --check-seconds, "
                             "--check-temperatures, --check-particles, --check-conditional-particles)")
    parser.add_argument("--check-margin", type=nonnegative_float, default=0.5,
                        help="nats AugSA's log Z_j may lie outside the checked interval before a warning")


def _effort(text: str):
    """``--check-effort`` as a :class:`trf.lm.check.CheckEffort` (argparse names the flag in errors)."""
    from trf.lm.check import CheckEffort

    try:
        return CheckEffort.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _CheckNotes:
    """The check's notes on stderr as ``prog: check: ...``: a note the check makes before its long work at once
    (``on_note`` of :func:`trf.lm.check.check_normalisers`, e.g. a predicted overrun of ``--check-seconds``), the
    others with the result (:func:`_print_checked`), none twice."""

    def __init__(self, prog: str) -> None:
        self.prog = prog
        self.shown: set[str] = set()

    def __call__(self, note: str) -> None:
        if note not in self.shown:
            print(f"{self.prog}: check: {note}", file=sys.stderr, flush=True)
            self.shown.add(note)


def _check_kw(args, notes: _CheckNotes) -> dict:
    """``check_normalisers`` keywords from the ``--check-*`` flags (:func:`_add_check_flags`); early notes go to
    ``notes``."""
    return dict(n_temperatures=args.check_temperatures, n_chains=args.check_chains, time_budget=args.check_seconds,
                margin=args.check_margin, seed=args.seed, base=args.check_base, smc_particles=args.check_particles,
                csmc_particles=args.check_conditional_particles, effort=args.check_effort, on_note=notes)


def _print_checked(checked, notes: _CheckNotes, what: str = "") -> None:
    """The headline on stdout; the notes not yet shown and the warnings on stderr as ``notes.prog``."""
    print(checked.headline_line(what))
    for note in checked.notes():
        notes(note)
    for warning in checked.warnings():
        print(f"{notes.prog}: warning: {warning}", file=sys.stderr)


def _eval(args) -> int:
    from trf.lm.check import checked_perplexity
    from trf.lm.check.report import augsa_perplexity
    from trf.lm.corpus import ReadStats, encode_file
    from trf.lm.model import PERPLEXITY_CONVENTION, SentenceTRF

    check_output_file(args.json, "--json")
    with input_flag("--model"):
        check_model_path(args.model)
    check_text_file(args.test, "--test", encoding=args.encoding)
    for path in args.check_known or ():
        check_text_file(path, "--check-known", encoding=args.encoding)
    with input_flag("--model"):
        model = SentenceTRF.load(args.model)
    stats = ReadStats()
    corpus = encode_file(args.test, model.vocab, encoding=args.encoding, stats=stats)
    known = [encode_file(path, model.vocab, encoding=args.encoding) for path in args.check_known or ()]
    start = time.perf_counter()
    log_probs = model.log_prob(corpus, allow_positive=True)  # augsa_perplexity flags log p > 0
    seconds = time.perf_counter() - start
    ppl, impossible, why_not = augsa_perplexity(log_probs, corpus)
    result: dict[str, object] = {"perplexity": ppl, "convention": PERPLEXITY_CONVENTION, "sentences": len(corpus),
              "predicted_tokens": corpus.n_predicted, "oov_tokens": int(np.count_nonzero(corpus.tokens == 0)),
              "log_prob_total": float(log_probs.sum()), "score_seconds": seconds,
              "empty_lines_skipped": stats.empty_lines, "model": str(args.model), "test": str(args.test)}
    result["augsa_positive_log_probs"] = impossible
    if args.no_check:
        if impossible:
            raise ValueError(f"no perplexity with the AugSA zeta: {why_not}; run without --no-check for checked "
                             "normalisers")
        print(f"perplexity {ppl:.3f} ({PERPLEXITY_CONVENTION}) with the AugSA zeta (unchecked: --no-check); "
              f"{len(corpus)} sentences")
    else:
        notes = _CheckNotes("mcsa trf eval")
        checked = checked_perplexity(model, corpus, flag="--test", log_probs=log_probs, known=known,
                                     **_check_kw(args, notes))
        result.update(checked.summary())
        _print_checked(checked, notes)
    if args.ais:
        from trf.lm.check import ais_check

        longest = min(int(corpus.lengths.max()), model.m, args.ais_max_length)
        check = ais_check(model, range(1, longest + 1), n_temperatures=args.ais_temperatures,
                          n_chains=args.ais_chains, seed=0, base=args.ais_base)
        keep = corpus.lengths <= longest
        sub = type(corpus).from_sentences([s for s, k in zip(corpus, keep) if k])
        ppl_ais = {which: float(np.exp(-check["log_prob"](sub, which).sum() / sub.n_predicted))
                   for which in ("augsa", "separate", "smoothed")}
        result["ais"] = {**{k: v for k, v in check.items() if k != "log_prob"},
                         **{f"perplexity_{which}": value for which, value in ppl_ais.items()}, "sentences": len(sub)}
        print(f"on the {len(sub)} sentences of <= {longest} words: perplexity with AugSA zeta "
              f"{ppl_ais['augsa']:.3f}, separate AIS {ppl_ais['separate']:.3f}, "
              f"smoothed AIS {ppl_ais['smoothed']:.3f}; global AIS log normaliser "
              + ("not run (pooled model)" if check["global"] is None
                 else f"{check['global']:.3f} (0 = AugSA zeta self-consistent)"))
    if args.json:
        write_text(args.json, json.dumps(result, indent=2), "--json")
    return 0


def _score(args) -> int:
    from trf.lm.model import SentenceTRF

    with input_flag("--model"):
        model = SentenceTRF.load(args.model)
    lines = read_lines(encoding=args.encoding)  # split at "\n" only: one output line per input line
    if not lines:
        raise ValueError("no lines on stdin (one sentence per line expected)")
    values, unknown, skipped = score_lines(model, lines)
    impossible = _impossible_lines(args.model, lines, values)
    if skipped:
        print(f"mcsa trf score: warning: {len(skipped)} line(s) not scored (blank, or longer than the model's "
              f"m={model.m} words without a pooled sub-model), written as "
              f"{'null' if args.jsonl else 'nan'}; first: line {skipped[0] + 1}", file=sys.stderr)
    out = sys.stdout
    for i, (value, n_unk) in enumerate(zip(values, unknown)):
        if args.jsonl:
            row = {"line": i + 1, "log_prob": None if np.isnan(value) else float(value),
                   "words": len(lines[i].split()), "unk": int(n_unk)}
            out.write(json.dumps(row) + "\n")
        else:
            text = "nan" if np.isnan(value) else f"{value:.6f}"
            out.write(f"{text}\t{n_unk}\n" if args.unk else text + "\n")
    out.flush()
    return 1 if impossible else 0


def _impossible_lines(model_path: str, lines: list[str], values: np.ndarray) -> list[int]:
    """Lines whose log-probability came out positive (``p > 1``): AugSA's normaliser of their length is too low, so
    the value is no probability.  They are set to NaN in ``values`` (written as nan / null) and named in one error
    line on stderr with the lengths and the least amount by which those lengths' values are too high; their
    indices are returned (the command then exits with status 1 after writing every line)."""
    from trf.lm.model import describe_excess

    bad = np.flatnonzero(np.nan_to_num(values, nan=-np.inf) > 0)
    if bad.size == 0:
        return []
    named = describe_excess(np.array([len(line.split()) for line in lines]), values)
    print(f"mcsa trf score: error: {bad.size} line(s) got a positive log-probability (a probability above 1), "
          f"written as nan; first: line {bad[0] + 1}.  The model's normaliser (AugSA's zeta) is too low at length(s) "
          f"{named}, so every value at those lengths is too high by at least that much: check the model with "
          f"`mcsa trf eval --model {model_path} --test FILE`, whose perplexity uses checked "
          "normalisers", file=sys.stderr)
    values[bad] = np.nan
    return bad.tolist()


def score_lines(model, lines: list[str]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Log-probabilities of ``lines`` aligned with the input: one value per line, NaN for a blank line (or
    one longer than ``m`` when the model has no pooled sub-model); also the number of ``<unk>`` tokens per
    line and the indices of the lines left unscored."""
    tokens = [line.split() for line in lines]
    index = model.vocab.index
    unknown = np.array([sum(1 for t in toks if t not in index) for toks in tokens], dtype=np.int64)
    limit = None if model.pooled else model.m
    ok = [i for i, toks in enumerate(tokens) if toks and (limit is None or len(toks) <= limit)]
    values = np.full(len(lines), np.nan)
    if ok:
        values[ok] = model.log_prob([tokens[i] for i in ok], allow_positive=True)  # the caller flags log p > 0
    keep = set(ok)
    return values, unknown, [i for i in range(len(lines)) if i not in keep]


def register(subparsers) -> None:
    """Add ``train``, ``eval`` and ``score`` to ``mcsa trf``."""
    train = subparsers.add_parser("train", help="train a sentence TRF language model")
    train.add_argument("--train", required=True, help="training text, one sentence per line")
    train.add_argument("--valid", default=None, help="development text (stop rule, progress)")
    train.add_argument("--out", "-o", required=True, help="model file to write")
    train.add_argument("--recipe", choices=tuple(RECIPES), default=None,
                       help="fill the flags not given from a measured recipe: full = "
                            + " ".join(_recipe_flag(k, v) for k, v in RECIPES["full"].items())
                            + ", the paper's full set grown from w+c as measured in docs/trf-lm.md (give --minutes; "
                            "default: none)")
    train.add_argument("--features", default=None,
                       help=f"feature templates of Table 2 joined by + (w, c, ws, cs, wsh, csh, cpw, tied; default "
                            f"{DEFAULT_FEATURES}, or the --recipe's; the paper's best: w+c+ws+cs+wsh+csh+tied, "
                            "trained by --recipe full)")
    train.add_argument("--base-features", default=None,
                       help="grow the feature set: train these first types of --features (e.g. w+c) for --base-share "
                            "of --minutes (or of --max-iterations), then all of --features from their weights (new "
                            "weights start at 0; the recommended way to train w+c+ws+cs+wsh+csh+tied; default: none)")
    train.add_argument("--base-share", type=float, default=BASE_SHARE,
                       help=f"share of the time (or iterations) spent on --base-features, in (0, 1), at most: once "
                            f"the schedule's second stage has begun, the stop rule (--stop-window) may end the base "
                            f"stage sooner, and the log says so (default {BASE_SHARE:g})")
    train.add_argument("--classes", type=positive_int, default=None,
                       help="word classes (Brown-style exchange clustering; default 200, or the vocabulary size if "
                            "smaller)")
    train.add_argument("--vocab-size", type=number(int, 2), default=None, help="keep the most frequent words, the rest <unk> (default: all)")
    train.add_argument("--min-count", type=positive_int, default=1, help="words seen fewer times become <unk>")
    train.add_argument("--max-length", type=positive_int, default=None,
                       help="pool every sentence longer than this into one sub-model (Sec. 5.4, Eq. 27)")
    train.add_argument("--samples", type=positive_int, default=None, help="K per iteration (default 300)")
    train.add_argument("--max-iterations", type=positive_int, default=None,
                       help=f"AugSA iterations t_max (default 100000; with neither this nor --minutes, training is "
                            f"bounded by --minutes {DEFAULT_MINUTES:g})")
    train.add_argument("--t-c", dest="t_c", type=nonnegative_float, default=None, help="t_c of Eq. 24 (default 3000)")
    train.add_argument("--beta-lambda", dest="beta_lambda", type=nonnegative_float, default=None,
                       help="beta_lambda of Eq. 24 (default 0.8; 0 = constant first-stage rate, Sec. 8)")
    train.add_argument("--t0", type=nonnegative_int, default=None,
                       help="t_0 of Eq. 24-25 (default 2000; with --minutes the first stage ends at half the time "
                            "instead)")
    train.add_argument("--first-stage-share", dest="first_stage_share", type=number(float, 0.0, low_open=True, high=1.0),
                       default=None, metavar="SHARE",
                       help=f"with --minutes, the share of the time spent in the first stage of Eq. 24-25 (the "
                            f"constant rate); the rate decreases after it (default {FIRST_STAGE_SHARE:g}; 1: never)")
    train.add_argument("--l2", type=nonnegative_float, default=None, help="mu of Eq. 38 (default 4e-5)")
    train.add_argument("--l2-by-type", dest="l2_by_type", type=type_values, default=None, metavar="TYPE=MU,...",
                       help="another mu of Eq. 38 for the features of some types, e.g. 'w=2e-5' or 'w=2e-5,tied=8e-5' "
                            "(types of --features; --l2 for the rest; default: --l2 for all)")
    train.add_argument("--clip", type=positive_float, default=None, help="bound on the absolute change of each lambda and zeta entry per step (default: none)")
    train.add_argument("--moment-bound", dest="moment_bound", action=argparse.BooleanOptionalAction, default=None,
                       help="never step a weight past its batch's moment match: a feature the batch holds b times as "
                            "often as the training data steps by at least log(1/b) (AugSAConfig.moment_bound; "
                            "default off: an experiment, not shown to train a better model; experiments/trf_lm/methods.md)")
    train.add_argument("--max-sentence-move", dest="max_sentence_move", type=nonnegative_float, default=None,
                       metavar="NATS",
                       help="bound on how far one step moves the log-weight of any sentence of the batch: a sentence "
                            "whose features' steps add up to more has them shortened together, so a repetition "
                            "('line line line ...') the sampler finds gets one push, not one per feature and word "
                            "(AugSAConfig.max_sentence_move; default off, 500 with --recipe full; 0: off; docs/trf-lm.md)")
    train.add_argument("--on-violation", dest="on_violation", choices=("stop", "halve"), default=None,
                       help="divergence guard action (default halve: back to the last passing parameters with "
                            "half the lambda step, at most 6 times, then stop)")
    train.add_argument("--stop-window", dest="stop_window", type=nonnegative_int, default=None,
                       help="H of the Appendix-E stop rule, run in the second stage on the train-dev gap "
                            "(default 100; 0: no stop rule, train to --max-iterations or --minutes)")
    train.add_argument("--stop-tol", dest="stop_tol", type=positive_float, default=None,
                       help="stop when S_t < STOP_TOL (default 1e-4)")
    train.add_argument("--stop-every", dest="stop_every", type=positive_int, default=None,
                       help="take the stop rule's train-dev gap (a scoring of the whole training set) at every "
                            "this many iterations; --stop-window must be a multiple (default 10; 1: every "
                            "iteration, as in the paper)")
    train.add_argument("--step-rule", dest="step_rule", choices=("features", "groups", "data", "fixed"),
                       default=None,
                       help="features (default): data, and the lambda rate scaled by a(w+c) / a(FEATURES), a = "
                            "features firing per training sentence; groups: features, and each feature's variance "
                            "times the number of features firing in exactly the same training sentences (one "
                            "step per group, not per feature); data: feature variances floored at "
                            "1/n_sentences; fixed: 1e-15 (paper)")
    train.add_argument("--base-step-rule", dest="base_step_rule", choices=("features", "groups", "data", "fixed"),
                       default=None,
                       help="--step-rule of the --base-features stage (default: --step-rule; features for a w+c base "
                            "with --step-rule groups is the measured pairing)")
    train.add_argument("--refine", type=nonnegative_float, default=0.1,
                       help="footnote-17 zeta refinement at the end: max(100, REFINE x iterations) zeta-only "
                            "iterations, counting only the iterations of the final feature set (so about REFINE x "
                            "its training time on top of --minutes; default 0.1; 0: none)")
    train.add_argument("--chains", type=positive_int, default=None,
                       help="parallel TransMS chains (--sampler transms; default 30)")
    train.add_argument("--sampler", choices=("smc", "transms"), default="smc",
                       help="how AugSA draws its samples: SMC over all lengths, which reaches the high-weight "
                            "sentences that chains miss (default), or TransMS chains (the paper's sampler)")
    train.add_argument("--smc-particles", type=positive_int, default=None,
                       help="particles per SMC run (--sampler smc; default 300; runs: --smc-runs)")
    train.add_argument("--smc-runs", type=positive_int, default=None,
                       help="independent SMC runs per iteration, shared by the threads (--sampler smc; default one "
                            "per Numba thread, so the trained model depends on NUMBA_NUM_THREADS; a fixed number "
                            "trains the same model on any thread count)")
    train.add_argument("--smc-known", type=positive_float, default=None, metavar="SHARE",
                       help="weigh exactly, in every SMC batch, the distinct training sentences that hold at least "
                            "this share of their length's normaliser (re-chosen every 50 iterations), instead of "
                            "leaving them to the runs to find now and then (--sampler smc; e.g. 1e-4; default off; "
                            "experiments/trf_lm/methods.md, 'Known sentences')")
    train.add_argument("--smc-remember", action="store_true",
                       help="with --smc-known: also weigh exactly the sentences outside the training text that "
                            "earlier SMC batches drew holding at least that share, while they keep it (a model "
                            "can hold much of a length's mass in sentences it never saw, which the runs find only "
                            "now and then; experiments/trf_lm/methods.md, 'Remembered sentences')")
    train.add_argument("--smc-cycles", type=nonnegative_int, default=None, metavar="WORDS",
                       help="with --smc-known: the known sentences also hold the loops (the cycle repeated, at every "
                            "length) of the training text's word cycles of up to this many words, e.g. 'work work "
                            "work ...': an undirected model can weigh such a repetition more with every turn and no "
                            f"draw proposes it (default {MAX_PERIOD}; 0: none; experiments/trf_lm/README.md, 'Loops "
                            "of word cycles')")
    train.add_argument("--smc-proposal", choices=PROPOSALS, default=None,
                       help="the SMC particles' proposal (--sampler smc): the model's exact local law (default), or "
                            "'partial': words "
                            "drawn from the unigram, class-final and previous-word rows, the other rows (word skips, "
                            "tied words) as importance weights (faster with the full feature set and unbiased, but "
                            "blind to the rows it leaves out: trained full-set models grew mass it misses; "
                            "experiments/trf_lm/methods.md), or 'trimmed': the exact law without the word features whose |weight| "
                            "is below --smc-trim, those weights entering at the drawn word (a bounded correction; "
                            "faster with the full feature set), or 'trimmed-skips': trimmed in the skip rows only "
                            "(word skips, tied words), the word n-grams whole; with w+c alone, the exact law")
    train.add_argument("--smc-trim", type=positive_float, default=None, metavar="T",
                       help=f"with --smc-proposal trimmed or trimmed-skips: leave out of the proposal the word features whose |weight| "
                            f"is below T (default {TRIM:g}; a larger T is faster; at 0.5, before session 47's resampling "
                            "first, it trained a worse model: docs/trf-lm.md, 'Training speed')")
    train.add_argument("--minutes", type=positive_float, default=None,
                       help=f"training time limit, counting the time before a --resume; the first stage of Eq. 24-25 "
                            f"ends at half of it unless --t0 is given (default {DEFAULT_MINUTES:g} when "
                            f"--max-iterations is not given either)")
    _add_check_flags(train, "the dev perplexity after training (with --valid)")
    train.add_argument("--checkpoint", default=None, help="checkpoint file, written atomically (default: none)")
    train.add_argument("--checkpoint-every", type=positive_int, default=50, help="iterations between checkpoints")
    train.add_argument("--resume", action="store_true", help="continue from --checkpoint (which must exist)")
    train.add_argument("--seed", "-s", type=nonnegative_int, default=0, help="random seed (same seed, same model)")
    _add_encoding_flag(train, "--train and --valid")
    train.add_argument("--log-every", type=nonnegative_int, default=0, help="print rate and dev log-likelihood every N its")
    train.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    train.add_argument("--no-progress", dest="quiet", action="store_true", help=argparse.SUPPRESS)  # old spelling
    train.set_defaults(func=_train)
    ev = subparsers.add_parser("eval", help="test perplexity of a TRF LM (and AIS checks)")
    ev.add_argument("--model", required=True, help="model file written by mcsa trf train")
    ev.add_argument("--test", required=True, help="test text, one sentence per line")
    ev.add_argument("--json", default=None, help="also write the results (per-length check included) as JSON to this "
                    "file (default: none; a failed write prints them and names a fallback file)")
    _add_check_flags(ev, "the test perplexity")
    ev.add_argument("--check-known", action="append", default=None, metavar="FILE",
                    help="a text whose sentences the check weighs exactly (--test's own sentences always count): "
                         "their weights bound its normalisers from below (a length's known sentences weigh at most "
                         "its Z_j), and its SMC runs add them exactly to an estimate of the rest, so a heavy sentence "
                         "the runs never reach still counts; give the training text; repeatable")
    ev.add_argument("--seed", "-s", type=nonnegative_int, default=0, help="random seed of the AIS checks")
    _add_encoding_flag(ev, "--test")
    ev.add_argument("--ais", action="store_true", help="AIS estimates of log Z_j (separate, smoothed, global)")
    ev.add_argument("--ais-temperatures", type=number(int, 2), default=1000, help="temperatures of the --ais estimates")
    ev.add_argument("--ais-chains", type=number(int, 2), default=10, help="AIS chains per length for --ais")
    ev.add_argument("--ais-max-length", type=positive_int, default=20, help="--ais estimates lengths 1..this")
    ev.add_argument("--ais-base", choices=("unigram", "uniform"), default="unigram",
                    help="AIS base law of the --ais estimates (uniform: the paper's Sec. 7 setting)")
    ev.set_defaults(func=_eval)
    score = subparsers.add_parser("score", help="log-probabilities of sentences read from stdin, one line out per "
                              "line in (blank lines give nan and one warning; a positive log-probability, which "
                              "means the model's normaliser is too low, is written as nan with an error and exit "
                              "status 1)")
    score.add_argument("--model", required=True, help="model file written by mcsa trf train")
    score.add_argument("--unk", action="store_true", help="second tab-separated column: number of <unk> tokens")
    score.add_argument("--jsonl", action="store_true",
                       help="JSON lines: {line, log_prob (null when not scored), words, unk}")
    _add_encoding_flag(score, "stdin")
    score.set_defaults(func=_score)

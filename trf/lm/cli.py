"""``mcsa trf train | eval | score``: sentence TRF language models from the command line.

``train`` builds vocabulary, exchange classes and features from ``--train`` and runs AugSA (Sec. 7
defaults, SMC draws; ``--minutes`` bounds the time; ``--checkpoint`` + ``--resume`` continue an interrupted run
with the same iteration count and chain states); with ``--valid`` it then checks the normalisers on the dev
lengths as ``eval`` does (15% of the training time by default) and prints and keeps the dev perplexity.  ``eval`` prints the test perplexity (words plus one
end-of-sentence per sentence) with normalisers checked from both sides (forward and reverse AIS, or exact
on tiny vocabularies) and by sequential Monte Carlo (:func:`trf.lm.evaluate.check_normalisers`), the
interval and the AugSA-zeta value,
warns when AugSA's zeta is outside the interval, optionally runs the older AIS variants, and writes JSON.
``score`` reads sentences on stdin and writes one natural-log probability per input line (``nan`` and one
warning on stderr for blank lines; ``--unk`` adds the number of unknown words, ``--jsonl`` writes JSON lines).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from samplers.argtypes import (
    flags_for,
    nonnegative_float,
    nonnegative_int,
    number,
    positive_float,
    positive_int,
    text_encoding,
)
from samplers.textio import read_lines, write_text, write_with_fallback
from trf.io import check_output_file
from trf.lm.train import DEFAULT_FEATURES

#: Python argument names of ``train_lm`` whose data-dependent errors are reported with the flag (``--classes``).
TRAIN_FLAGS = {"classes": "--classes", "max_size": "--vocab-size", "min_count": "--min-count",
               "max_length": "--max-length"}


def _train(args) -> int:
    from trf.lm.backend import lm_config
    from trf.lm.train import train_lm

    overrides = {k: v for k, v in {"n_samples": args.samples, "t_max": args.max_iterations, "t_c": args.t_c,
                               "beta_lambda": args.beta_lambda, "t0": args.t0, "l2": args.l2,
                               "clip": args.clip, "on_violation": args.on_violation,
                               "stop_tol": args.stop_tol}.items() if v is not None}
    if args.stop_window is not None:
        overrides["stop_window"] = args.stop_window or None  # 0: no stop rule
    check_output_file(args.out, "--out")
    check_output_file(args.checkpoint, "--checkpoint")
    with flags_for(TRAIN_FLAGS):
        model, result = train_lm(args.train, valid_path=args.valid, features=args.features, classes=args.classes,
                                 vocab_size=args.vocab_size, min_count=args.min_count, max_length=args.max_length,
                                 config=lm_config(**overrides),
                                 n_chains=args.chains, seed=args.seed, checkpoint=args.checkpoint,
                                 checkpoint_every=args.checkpoint_every, resume=args.resume,
                                 time_limit=None if args.minutes is None else args.minutes * 60,
                                 progress=not args.quiet, log_every=args.log_every, step_rule=args.step_rule,
                                 refine=args.refine, sampler=args.sampler, smc_particles=args.smc_particles,
                                 encoding=args.encoding)
    write_with_fallback(model.save, args.out, "--out", what="the trained model")
    if result.guard_message:
        print(f"mcsa trf train: {result.guard_message}", file=sys.stderr)
    how = f"stopped by {result.stop_reason}" if result.stopped_early else "reached t_max"
    plural = "" if result.t == 1 else "s"
    print(f"trained {result.t} iteration{plural} ({how}), {model.features.n_features} features, "
          f"{model.features.n_classes} classes, vocabulary {len(model.vocab)} -> {args.out}")
    if args.valid is not None and not args.no_check:
        # the normalisers checked after training (issue 17): the dev perplexity with its interval, kept in the model
        from trf.lm.corpus import encode_file

        dev = encode_file(args.valid, model.vocab, encoding=args.encoding)
        if not model.pooled and dev.lengths.max() > model.m:  # no sub-model for them (train with --max-length)
            long = dev.lengths > model.m
            print(f"mcsa trf train: check: {int(long.sum())} dev sentences longer than m={model.m} words are left "
                  "out of the dev perplexity (no sub-model for them; --max-length pools them)", file=sys.stderr)
            dev = type(dev).from_sentences([x for x, k in zip(dev, long) if not k])
        ppl, impossible, why_not = _augsa_perplexity(model.log_prob(dev), dev)
        checked = checked_perplexity(model, dev, ppl, impossible, why_not, prog="mcsa trf train", flag="--valid",
                                     what="dev ", **_check_kw(args))
        summary = checked["normaliser_check"]
        model.meta["dev_check"] = {"perplexity": checked["perplexity"], "perplexity_augsa": checked["perplexity_augsa"],
                                   "perplexity_checked": checked["perplexity_checked"],
                                   **{k: summary[k] for k in ("which", "headline", "inconclusive",
                                                              "perplexity_interval", "seconds")}}
        write_with_fallback(model.save, args.out, "--out", what="the trained model")
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
                        help="particles per conditional SMC run of the check, the upper side (0: none; default: a "
                             "quarter of --check-seconds' worth)")
    parser.add_argument("--check-margin", type=nonnegative_float, default=0.5,
                        help="nats AugSA's log Z_j may lie outside the checked interval before a warning")


def _augsa_perplexity(log_probs: np.ndarray, corpus) -> tuple[float, int, str]:
    """Perplexity with AugSA's zeta from the sentences' ``log_probs``, the number of sentences with log p > 0 and,
    if any, why that perplexity is no perplexity."""
    ppl = float(np.exp(-log_probs.sum() / corpus.n_predicted))
    impossible = int(np.count_nonzero(log_probs > 0))
    why_not = (f"{impossible} of {len(corpus)} sentences get a positive log-probability with it (up to "
               f"{log_probs.max():+.2f}): impossible for a discrete sentence, so some zeta_j lie below log Z_j / Z_1"
               if impossible else "")
    return ppl, impossible, why_not


def _check_kw(args) -> dict:
    """``check_normalisers`` keywords from the ``--check-*`` flags (:func:`_add_check_flags`)."""
    return dict(n_temperatures=args.check_temperatures, n_chains=args.check_chains, time_budget=args.check_seconds,
                margin=args.check_margin, seed=args.seed, base=args.check_base, smc_particles=args.check_particles,
                csmc_particles=args.check_conditional_particles)


def checked_perplexity(model, corpus, ppl: float, impossible: int, why_not: str, *, prog: str, flag: str,
                       what: str = "", **check_kw) -> dict:
    """Check the normalisers on ``corpus``'s lengths (:func:`trf.lm.evaluate.check_normalisers` with ``check_kw``),
    print the headline perplexity, its interval and the AugSA-zeta value (``what`` prefixes "perplexity", e.g.
    "dev "), the notes and warnings on stderr as ``prog``; return the JSON entries (``perplexity``,
    ``perplexity_augsa``, ``perplexity_checked``, ``normaliser_check``).  ``ppl`` and ``impossible``: the AugSA-zeta
    perplexity and its number of sentences with log p > 0 (``why_not`` says why it is withheld); ``flag`` names
    the input in errors."""
    from trf.lm.evaluate import CONCLUSIVE, check_normalisers, headline_perplexity, interval_is_inconclusive
    from trf.lm.model import PERPLEXITY_CONVENTION

    out = {}
    lengths = np.unique(corpus.lengths[corpus.lengths <= model.m])
    if lengths.size == 0:
        raise ValueError(f"{flag} holds no sentence of at most m={model.m} words to check; pass --no-check")
    check = check_normalisers(model, lengths, **check_kw)
    ppl_checked = check.perplexities(model, corpus)
    which = check.describe()
    headline, label, inconclusive = headline_perplexity(ppl_checked)
    out["perplexity_augsa"] = None if impossible else ppl
    out["perplexity"] = headline
    out["perplexity_checked"] = ppl_checked["checked"]
    out["normaliser_check"] = {"which": which, "headline": label, "inconclusive": inconclusive,
                              "perplexity_interval": [ppl_checked["low"], ppl_checked["high"]],
                              "unchecked_sentences": ppl_checked["unchecked_sentences"],
                              "excluded_sentences": ppl_checked["excluded_sentences"],
                              "impossible_checked_sentences": ppl_checked["impossible_checked"],
                              "margin": check.margin, "z": check.z, "seconds": check.seconds,
                              "flagged_lengths": check.flagged.tolist(), "per_length": check.rows(),
                              "reverse_failed_lengths": check.reverse_failed.tolist(),
                              "still_rising_lengths": check.still_rising.tolist(),
                              "degenerate_lengths": check.degenerate.tolist(),
                              "ais_missed_lengths": check.ais_missed.tolist(),
                              "smc_unsettled_lengths": check.unsettled.tolist(),
                              "csmc_bracketed_lengths": check.csmc_bracketed.tolist(),
                              "csmc_failed_lengths": check.csmc_failed.tolist(),
                              "perplexity_extrapolated": ppl_checked["extrapolated"], "notes": check.notes}
    unchecked = (f"; {ppl_checked['unchecked_sentences']} sentences of the pooled sub-model keep AugSA's "
                 "normaliser" if ppl_checked["unchecked_sentences"] else "")
    if ppl_checked["excluded_sentences"]:
        unchecked += (f", {ppl_checked['excluded_sentences']} of them left out (log p > 0 with it: no valid "
                      "probability)")
    print(f"{what}perplexity {headline:.3f} ({PERPLEXITY_CONVENTION}), {label} [{which}]; interval "
          f"[{ppl_checked['low']:.3f}, {ppl_checked['high']:.3f}], midpoint normalisers "
          f"{ppl_checked['checked']:.3f}; with the AugSA zeta "
          f"{'none (see the warning)' if impossible else f'{ppl:.3f}'}; {len(corpus)} sentences{unchecked}")
    if impossible:
        print(f"{prog}: warning: AugSA's zeta gives no perplexity: {why_not}", file=sys.stderr)
    if ppl_checked["excluded_sentences"]:
        print(f"{prog}: warning: {ppl_checked['excluded_sentences']} sentences longer than m={model.m} get a "
              "positive log-probability with the pooled sub-model's normaliser (estimated over the sampled lengths "
              f"m+1, m+2 only, Sec. 5.4): they are left out of the checked perplexities", file=sys.stderr)
    if ppl_checked["impossible_checked"]:
        print(f"{prog}: warning: {ppl_checked['impossible_checked']} sentences get a positive log-probability "
              "even with the checked normalisers: their log Z_j is too low; raise --check-particles",
              file=sys.stderr)
    for note in check.notes:
        print(f"{prog}: check: {note}", file=sys.stderr)
    if ppl_checked["extrapolated"] != ppl_checked["checked"]:
        print(f"{prog}: check: with the rise from T/2 to T temperatures added once more where AIS is "
              f"still rising (first-order 1/T extrapolation, an estimate, not a bound): perplexity "
              f"{ppl_checked['extrapolated']:.3f}", file=sys.stderr)
    for warning in (check.warning(), check.missed_warning(), check.unsettled_warning(), check.csmc_warning(),
                    check.bracket_warning(), check.rising_warning(), check.degenerate_warning()):
        if warning:
            print(f"{prog}: warning: {warning}", file=sys.stderr)
    if inconclusive:
        wide = interval_is_inconclusive(ppl_checked["low"], ppl_checked["high"])
        why = [f"the perplexity interval [{ppl_checked['low']:.3f}, {ppl_checked['high']:.3f}] is wider than "
               f"+-{100 * CONCLUSIVE:g}% around its centre"] if wide else []
        if ppl_checked["degenerate_lengths"]:
            why.append(f"{ppl_checked['degenerate_lengths']} test lengths have degenerate AIS weights")
        if ppl_checked["unsettled_lengths"]:
            why.append(f"{ppl_checked['unsettled_lengths']} test lengths have unsettled SMC estimates")
        if ppl_checked["csmc_failed_lengths"]:
            why.append(f"at {ppl_checked['csmc_failed_lengths']} test lengths conditional SMC fell below the lower side")
        why = "; ".join(why)
        print(f"{prog}: warning: the check is inconclusive at this effort: {why}, so the headline is "
              "the interval's high end (the conservative value, itself too low where SMC has not settled); "
              "raise --check-seconds, --check-particles or --check-temperatures for a conclusive check",
              file=sys.stderr)
    return out


def _eval(args) -> int:
    from trf.lm.corpus import ReadStats, encode_file
    from trf.lm.model import PERPLEXITY_CONVENTION, SentenceTRF

    check_output_file(args.json, "--json")
    model = SentenceTRF.load(args.model)
    stats = ReadStats()
    corpus = encode_file(args.test, model.vocab, encoding=args.encoding, stats=stats)
    start = time.perf_counter()
    log_probs = model.log_prob(corpus)
    seconds = time.perf_counter() - start
    ppl, impossible, why_not = _augsa_perplexity(log_probs, corpus)
    result = {"perplexity": ppl, "convention": PERPLEXITY_CONVENTION, "sentences": len(corpus),
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
        result.update(checked_perplexity(model, corpus, ppl, impossible, why_not, prog="mcsa trf eval",
                                         flag="--test", **_check_kw(args)))
    if args.ais:
        from trf.lm.evaluate import ais_check

        longest = min(int(corpus.lengths.max()), model.m, args.ais_max_length)
        check = ais_check(model, range(1, longest + 1), n_temperatures=args.ais_temperatures,
                          n_chains=args.ais_chains, seed=0, base=args.ais_base)
        keep = corpus.lengths <= longest
        sub = type(corpus).from_sentences([s for s, k in zip(corpus, keep) if k])
        result["ais"] = {k: v for k, v in check.items() if k != "log_prob"}
        for which in ("augsa", "separate", "smoothed"):
            lp = check["log_prob"](sub, which)
            result["ais"][f"perplexity_{which}"] = float(np.exp(-lp.sum() / sub.n_predicted))
        result["ais"]["sentences"] = len(sub)
        print(f"on the {len(sub)} sentences of <= {longest} words: perplexity with AugSA zeta "
              f"{result['ais']['perplexity_augsa']:.3f}, separate AIS {result['ais']['perplexity_separate']:.3f}, "
              f"smoothed AIS {result['ais']['perplexity_smoothed']:.3f}; global AIS log normaliser "
              + ("not run (pooled model)" if check["global"] is None
                 else f"{check['global']:.3f} (0 = AugSA zeta self-consistent)"))
    if args.json:
        write_text(args.json, json.dumps(result, indent=2), "--json")
    return 0


def _score(args) -> int:
    from trf.lm.model import SentenceTRF

    model = SentenceTRF.load(args.model)
    lines = read_lines(encoding=args.encoding)  # split at "\n" only: one output line per input line
    if not lines:
        raise ValueError("no lines on stdin (one sentence per line expected)")
    values, unknown, skipped = score_lines(model, lines)
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
    return 0


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
        values[ok] = model.log_prob([tokens[i] for i in ok])
    keep = set(ok)
    return values, unknown, [i for i in range(len(lines)) if i not in keep]


def register(subparsers) -> None:
    """Add ``train``, ``eval`` and ``score`` to ``mcsa trf``."""
    train = subparsers.add_parser("train", help="train a sentence TRF language model")
    train.add_argument("--train", required=True, help="training text, one sentence per line")
    train.add_argument("--valid", default=None, help="development text (stop rule, progress)")
    train.add_argument("--out", "-o", required=True, help="model file to write")
    train.add_argument("--features", default=DEFAULT_FEATURES, help=f"feature types (default {DEFAULT_FEATURES})")
    train.add_argument("--classes", type=positive_int, default=200, help="word classes (Brown-style exchange clustering)")
    train.add_argument("--vocab-size", type=number(int, 2), default=None, help="keep the most frequent words, the rest <unk> (default: all)")
    train.add_argument("--min-count", type=positive_int, default=1, help="words seen fewer times become <unk>")
    train.add_argument("--max-length", type=positive_int, default=None,
                       help="pool every sentence longer than this into one sub-model (Sec. 5.4, Eq. 27)")
    train.add_argument("--samples", type=positive_int, default=None, help="K per iteration (default 300)")
    train.add_argument("--max-iterations", type=positive_int, default=None, help="AugSA iterations t_max (default 100000)")
    train.add_argument("--t-c", dest="t_c", type=nonnegative_float, default=None, help="t_c of Eq. 24 (default 3000)")
    train.add_argument("--beta-lambda", dest="beta_lambda", type=nonnegative_float, default=None,
                       help="beta_lambda of Eq. 24 (default 0.8; 0 = constant first-stage rate, Sec. 8)")
    train.add_argument("--t0", type=nonnegative_int, default=None, help="t_0 of Eq. 24-25 (default 2000)")
    train.add_argument("--l2", type=nonnegative_float, default=None, help="mu of Eq. 38 (default 4e-5)")
    train.add_argument("--clip", type=positive_float, default=None, help="bound on the absolute change of each lambda and zeta entry per step (default: none)")
    train.add_argument("--on-violation", dest="on_violation", choices=("stop", "halve"), default=None,
                       help="divergence guard action (default halve: back to the last passing parameters with "
                            "half the lambda step, at most 6 times, then stop)")
    train.add_argument("--stop-window", dest="stop_window", type=nonnegative_int, default=None,
                       help="H of the Appendix-E stop rule, run in the second stage on the train-dev gap "
                            "(default 100; 0: no stop rule, train to --max-iterations or --minutes)")
    train.add_argument("--stop-tol", dest="stop_tol", type=number(float), default=None,
                       help="stop when S_t < STOP_TOL (default 1e-4)")
    train.add_argument("--step-rule", dest="step_rule", choices=("data", "fixed"), default="data",
                       help="data (default): feature variances floored at 1/n_sentences; fixed: 1e-15 (paper)")
    train.add_argument("--refine", type=nonnegative_float, default=0.1,
                       help="footnote-17 zeta refinement at the end: max(100, REFINE x iterations) zeta-only "
                            "iterations (default 0.1; 0: none)")
    train.add_argument("--chains", type=positive_int, default=30, help="parallel TransMS chains (--sampler transms)")
    train.add_argument("--sampler", choices=("smc", "transms"), default="smc",
                       help="how AugSA draws its samples: SMC over all lengths, which reaches the high-weight "
                            "sentences that chains miss (default), or TransMS chains (the paper's sampler)")
    train.add_argument("--smc-particles", type=positive_int, default=300,
                       help="particles per SMC run (one run per Numba thread: all cores unless NUMBA_NUM_THREADS)")
    train.add_argument("--minutes", type=positive_float, default=None, help="training time limit")
    _add_check_flags(train, "the dev perplexity after training (with --valid)")
    train.add_argument("--checkpoint", default=None, help="checkpoint file, written atomically (default: none)")
    train.add_argument("--checkpoint-every", type=positive_int, default=50, help="iterations between checkpoints")
    train.add_argument("--resume", action="store_true", help="continue from --checkpoint if it exists")
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
                              "line in (blank lines give nan and one warning)")
    score.add_argument("--model", required=True, help="model file written by mcsa trf train")
    score.add_argument("--unk", action="store_true", help="second tab-separated column: number of <unk> tokens")
    score.add_argument("--jsonl", action="store_true",
                       help="JSON lines: {line, log_prob (null when not scored), words, unk}")
    _add_encoding_flag(score, "stdin")
    score.set_defaults(func=_score)

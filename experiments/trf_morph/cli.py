"""``mcsa experiments trf-morph``: the word-morphology benchmark (Sec. 6) from the command line.

``--train`` / ``--test`` are word lists (one word per line, letters a-z; words with other symbols,
upper case included, or longer than ``--max-length`` are reported on stderr and skipped).  Without them the
installed list named by ``--words`` (:data:`trf.data.WORD_LISTS`: the 154K most frequent English
words of ``wordfreq`` by default, or ``english-words``' web2) is split at random into 139K training
and 15K test words (``--seed``), as in the paper's sizes.

Every path is checked before any work: a usage error (a missing or unreadable word list, an output
folder that is a file or cannot be created) names its flag and exits with status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from samplers.argtypes import nonnegative_int, positive_int, text_encoding
from trf.io import make_output_folder


def register(subparsers) -> None:
    """Add the ``trf-morph`` command to ``subparsers`` (the ``mcsa experiments`` group)."""
    parser = subparsers.add_parser("trf-morph", help="TRF word-morphology benchmark with exact likelihoods (Sec. 6)",
                                   description=__doc__.split("\n\n")[1])
    parser.add_argument("--train", help="training word list (default: a split of --words)")
    parser.add_argument("--test", help="test word list (default: a split of --words)")
    parser.add_argument("--words", choices=("wordfreq", "web2"), default="wordfreq",
                        help="installed English word list split when --train/--test are not given")
    parser.add_argument("--out", "-o", required=True, help="output folder for metrics.json and plots (created)")
    parser.add_argument("--max-iterations", dest="iters", metavar="MAX_ITERATIONS", type=positive_int, default=1000,
                        help="AugSA and IIS iterations (t_max)")
    parser.add_argument("--iters", dest="iters", type=positive_int, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    parser.add_argument("--samples", type=positive_int, default=100, help="K, draws per iteration")
    parser.add_argument("--seed", "-s", type=nonnegative_int, default=0, help="random seed of the split and of AugSA")
    parser.add_argument("--max-length", dest="m", metavar="MAX_LENGTH", type=positive_int, default=25,
                        help="maximum word length m (longer words are skipped)")
    parser.add_argument("--m", dest="m", type=positive_int, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    parser.add_argument("--eval-every", type=positive_int, default=10, help="exact NLL every this many iterations")
    parser.add_argument("--qn-iters", type=positive_int, default=500, help="L-BFGS iteration limit")
    parser.add_argument("--replicates", type=positive_int, default=1, help="AugSA runs with seeds seed, seed+1, ...")
    parser.add_argument("--quiet", "-q", dest="no_progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-progress", dest="no_progress", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--encoding", type=text_encoding, default="utf-8",
                        help="text encoding of --train and --test (a Python codec name: utf-8, latin-1, ...)")
    parser.set_defaults(func=lambda args: run(args, parser))


def _check_word_list(parser: argparse.ArgumentParser, flag: str, path: str) -> None:
    """Refuse (exit 2, naming ``flag``) a word list that is missing, a folder or unreadable."""
    p = Path(path)
    if p.is_dir():
        parser.error(f"argument {flag}: {path!r} is a folder, not a word list (one word per line)")
    if not p.exists():
        parser.error(f"argument {flag}: word list {path!r} does not exist")
    if not os.access(p, os.R_OK):
        parser.error(f"argument {flag}: word list {path!r} is not readable")


def _make_output_folder(parser: argparse.ArgumentParser, path: str) -> Path:
    """Create the ``--out`` folder up front; refuse (exit 2) a file or a folder that cannot be written."""
    try:
        return make_output_folder(path, "argument --out")
    except ValueError as exc:
        parser.error(str(exc))


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Check the flags, read or split the word lists, run the benchmark, print the table."""
    from trf.data import ENGLISH_LOWER, WORD_LISTS, Alphabet, encode_words, read_word_list

    from .morph import MorphSettings, metrics_table, run_morph

    if (args.train is None) != (args.test is None):
        parser.error(f"give both --train and --test, or neither (a split of --words {args.words})")
    if args.train is not None:
        _check_word_list(parser, "--train", args.train)
        _check_word_list(parser, "--test", args.test)
    out = _make_output_folder(parser, args.out)
    alphabet = Alphabet(ENGLISH_LOWER)
    opts = {"on_unknown": "skip", "too_long": "skip"}
    if args.train is None:
        train_words, test_words = WORD_LISTS[args.words](m=args.m, seed=args.seed)
        train = encode_words(train_words, alphabet, args.m, **opts)
        test = encode_words(test_words, alphabet, args.m, **opts)
    else:
        train = read_word_list(args.train, alphabet, args.m, encoding=args.encoding, what="--train", **opts)
        test = read_word_list(args.test, alphabet, args.m, encoding=args.encoding, what="--test", **opts)
    for name, data in (("train", train), ("test", test)):
        if data.skipped:
            print(f"{name}: skipped {len(data.skipped)} words (symbols outside a-z or longer than --max-length), "
                  f"e.g. {data.skipped[:3]}", file=sys.stderr)
    settings = MorphSettings(iters=args.iters, samples=args.samples, seed=args.seed, eval_every=args.eval_every,
                             qn_max_iter=args.qn_iters, progress=not args.no_progress,
                             replicates=args.replicates)
    metrics = run_morph(train, test, out, settings)
    for warning in metrics["warnings"]:
        print(f"mcsa experiments trf-morph: warning: {warning}", file=sys.stderr)
    print(metrics_table(metrics))
    print(f"\nwrote {out}/metrics.json and {out}/fig3*.png")
    return 0

"""``mcsa trf morph``: the word-morphology benchmark (Sec. 6) from the command line.

``--train`` / ``--test`` are word lists (one word per line, letters a-z; words with other symbols,
upper case included, or longer than ``--max-length`` are reported on stderr and skipped).  Without them the
installed list named by ``--words`` (:data:`trf.data.WORD_LISTS`: the 154K most frequent English
words of ``wordfreq`` by default, or ``english-words``' web2) is split at random into 139K training
and 15K test words (``--seed``), as in the paper's sizes.
"""

from __future__ import annotations

import argparse
import sys

from samplers.argtypes import nonnegative_int, positive_int, text_encoding


def register(subparsers) -> None:
    parser = subparsers.add_parser("morph", help="word-morphology benchmark with exact likelihoods (Sec. 6)")
    parser.add_argument("--train", help="training word list (default: a split of --words)")
    parser.add_argument("--test", help="test word list (default: a split of --words)")
    parser.add_argument("--words", choices=("wordfreq", "web2"), default="wordfreq",
                        help="installed English word list split when --train/--test are not given")
    parser.add_argument("--out", "-o", required=True, help="output folder for metrics.json and plots")
    parser.add_argument("--max-iterations", dest="iters", metavar="MAX_ITERATIONS", type=positive_int, default=1000,
                        help="AugSA and IIS iterations (t_max)")
    parser.add_argument("--iters", dest="iters", type=positive_int, default=argparse.SUPPRESS, help=argparse.SUPPRESS)  # old spelling
    parser.add_argument("--samples", type=positive_int, default=100, help="K, draws per iteration")
    parser.add_argument("--seed", "-s", type=nonnegative_int, default=0, help="random seed of the split and of AugSA")
    parser.add_argument("--max-length", dest="m", metavar="MAX_LENGTH", type=positive_int, default=25,
                        help="maximum word length m (longer words are skipped)")
    parser.add_argument("--m", dest="m", type=positive_int, default=argparse.SUPPRESS, help=argparse.SUPPRESS)  # old spelling
    parser.add_argument("--eval-every", type=positive_int, default=10, help="exact NLL every this many iterations")
    parser.add_argument("--qn-iters", type=positive_int, default=500, help="L-BFGS iteration limit")
    parser.add_argument("--replicates", type=positive_int, default=1, help="AugSA runs with seeds seed, seed+1, ...")
    parser.add_argument("--quiet", "-q", dest="no_progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-progress", dest="no_progress", action="store_true", help=argparse.SUPPRESS)  # old
    parser.add_argument("--encoding", type=text_encoding, default="utf-8",
                        help="text encoding of --train and --test (a Python codec name: utf-8, latin-1, ...)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .data import ENGLISH_LOWER, WORD_LISTS, Alphabet, encode_words, read_word_list
    from .morph import MorphSettings, metrics_table, run_morph

    alphabet = Alphabet(ENGLISH_LOWER)
    if (args.train is None) != (args.test is None):
        raise ValueError(f"give both --train and --test, or neither (split of {args.words})")
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
            print(f"{name}: skipped {len(data.skipped)} words (symbols outside a-z or longer than m), "
                  f"e.g. {data.skipped[:3]}", file=sys.stderr)
    settings = MorphSettings(iters=args.iters, samples=args.samples, seed=args.seed, eval_every=args.eval_every,
                             qn_max_iter=args.qn_iters, progress=not args.no_progress,
                             replicates=args.replicates)
    metrics = run_morph(train, test, args.out, settings)
    for warning in metrics["warnings"]:
        print(f"mcsa trf morph: warning: {warning}", file=sys.stderr)
    print(metrics_table(metrics))
    print(f"\nwrote {args.out}/metrics.json and {args.out}/fig3*.png")
    return 0

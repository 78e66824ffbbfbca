"""Scoring speed: TRF ``log_prob`` vs modified Kneser-Ney 5-gram, sentences per second on one core.

Issue 17, item 6: on a 0.79M-word corpus (mean 25 words per sentence) TRF scoring ran 15.0K sentences/s
against KN5's 42.3K; issue 27 asks for the full feature set ``w+c+ws+cs+wsh+csh+tied`` at >= 1 x KN5.
This script measures both on the Debian fortunes test set (the corpus of
``python -m experiments.trf_lm.benchmark --prepare-only`` writes it; ``apt-get install fortunes fortunes-min fortune-anarchism``) and on
sentences of mean length 25 drawn from the unigram law of the training words (``--long``), with features built on the
training text (the speed of scoring does not depend on the values of lambda, so no training is needed;
lambda is random).  Warm-up first (Numba compile excluded), then ``--repeats`` interleaved timings of
each scorer in CPU time (``time.process_time``; both are single-threaded); the table shows medians and the ratio
TRF / KN5 in the same run.  The machine is shared, so timings are noisy: read ratios, not absolute numbers.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/trf_score_speed.py
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np


def _timed(fn, arg) -> float:
    """CPU seconds of ``fn(arg)`` (both scorers run on this one thread): time spent waiting for a core on a shared
    machine does not count, so the rates move less with the load than wall-clock rates."""
    start = time.process_time()
    fn(arg)
    return time.process_time() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="/tmp/mcsa-fortunes", help="folder holding train.txt and test.txt")
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--classes", type=int, default=200)
    parser.add_argument("--features", nargs="+", default=["w+c", "w+c+ws+cs+wsh+csh+tied"],
                        help="feature sets to time (w+c: what the documented fast schedule trains; the full set of "
                             "the paper's Table 3)")
    parser.add_argument("--long", type=int, default=5000, help="sentences of mean length 25 to generate")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)

    from trf.lm.cluster import exchange_clustering
    from trf.lm.corpus import EncodedCorpus, Vocabulary, encode_file
    from trf.lm.features import SentenceFeatures
    from trf.lm.model import SentenceTRF, smoothed_length_law
    from trf.ngram import KneserNey

    paths = {name: Path(args.data_dir) / f"{name}.txt" for name in ("train", "test")}
    missing = [str(path) for path in paths.values() if not path.is_file()]
    if missing:
        raise SystemExit(f"--data-dir {args.data_dir!r} lacks {', '.join(missing)}: write the fortunes split with "
                         "`python -m experiments.trf_lm.benchmark --prepare-only --data-dir DIR` (apt-get install "
                         "fortunes fortunes-min fortune-anarchism), or give a folder with any train.txt / test.txt")
    vocab = Vocabulary.build(paths["train"], max_size=args.vocab)
    train, test = encode_file(paths["train"], vocab), encode_file(paths["test"], vocab)
    classes = exchange_clustering(train, len(vocab), args.classes, seed=0, max_passes=2).classes
    rng = np.random.default_rng(0)
    m = max(int(train.lengths.max()), 60)
    kn5 = KneserNey(order=5).fit(train, len(vocab))
    # long sentences: lengths ~ 25 +- 8 (clipped to 5..60), words from the unigram law of the training text
    lengths = np.clip(rng.normal(25, 8, size=args.long).round().astype(int), 5, 60)
    unigram = np.bincount(train.tokens, minlength=len(vocab)) / train.tokens.size
    long = EncodedCorpus.from_sentences([rng.choice(len(vocab), size=n, p=unigram) for n in lengths])
    print(f"classes {args.classes}, vocabulary {len(vocab)}; medians of {args.repeats} interleaved repeats")
    print("| features (rows, features) | sentences | n | mean length | TRF sent/s | KN5 sent/s | TRF / KN5 |")
    print("|---|---|---|---|---|---|---|")
    for spec in args.features:
        feats = SentenceFeatures.build(train, len(vocab), spec, word_class=classes)
        model = SentenceTRF(vocab, feats, smoothed_length_law(train.lengths, m),
                            rng.normal(scale=0.1, size=feats.n_features), np.zeros(m), pooled=False)
        # a stand-in: zeta = 0 is no normaliser (log p > 0 abounds), and only the time of scoring counts here
        score = functools.partial(model.log_prob, allow_positive=True)
        for name, corpus in (("fortunes test", test), ("unigram draws, mean length 25", long)):
            score(corpus), kn5.log_prob(corpus)  # warm up (compile, log Z_1)
            t_trf, t_kn = [], []
            for _ in range(args.repeats):
                t_trf.append(_timed(score, corpus))
                t_kn.append(_timed(kn5.log_prob, corpus))
            trf_rate, kn_rate = len(corpus) / np.median(t_trf), len(corpus) / np.median(t_kn)
            print(f"| {spec} ({feats.rows[1].size}, {feats.n_features:,}) | {name} | {len(corpus)} | "
                  f"{corpus.lengths.mean():.1f} | {trf_rate:,.0f} | {kn_rate:,.0f} | {trf_rate / kn_rate:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``mcsa ngram train | eval``: the n-gram baselines (Kneser-Ney, Witten-Bell) from the command line.

``train`` builds a vocabulary from the training file (``--vocab-size`` / ``--min-count``, rest
``<unk>``), counts n-grams and writes one model file holding the vocabulary and the counts.
``eval`` prints the per-token perplexity of a test file (words plus one end-of-sentence per
sentence; ``<unk>`` tokens are scored like words) and writes the numbers as JSON.
"""

from __future__ import annotations

import json
import time

import numpy as np

from samplers.argtypes import number, positive_int, text_encoding
from samplers.textio import write_text, write_with_fallback
from trf.io import atomic_write_npz, check_output_file, read_npz
from trf.lm.corpus import EncodedCorpus, ReadStats, Vocabulary, encode_file
from trf.ngram import KIND, KneserNey, NGramModel, WittenBell, perplexity

METHODS = {"kn": KneserNey, "wb": WittenBell}
PERPLEXITY_CONVENTION = "per token: words plus one end-of-sentence per sentence; <unk> scored as a word"


def train_ngram(train_path, *, method: str = "kn", order: int = 5, vocab_size: int | None = None,
                min_count: int = 1, encoding: str = "utf-8") -> tuple[NGramModel, Vocabulary, ReadStats]:
    """Build the vocabulary of ``train_path`` and fit an n-gram model on it."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    model = METHODS[method](order)
    stats = ReadStats()
    vocab = Vocabulary.build(train_path, max_size=vocab_size, min_count=min_count, encoding=encoding)
    corpus = encode_file(train_path, vocab, encoding=encoding, stats=stats)
    model.fit(corpus, len(vocab))
    return model, vocab, stats


def save_ngram(path, model: NGramModel, vocab: Vocabulary) -> None:
    """One file with the model's arrays and its vocabulary."""
    arrays, meta = model.to_arrays()
    atomic_write_npz(path, {**arrays, **vocab.to_arrays()}, meta, kind=KIND)


def load_ngram(path) -> tuple[NGramModel, Vocabulary]:
    """Inverse of :func:`save_ngram`."""
    arrays, meta = read_npz(path, KIND)
    if "vocab_words" not in arrays:
        raise ValueError(f"model file {str(path)!r} has no vocabulary (saved with NGramModel.save?)")
    return NGramModel.from_arrays(arrays, meta), Vocabulary.from_arrays(arrays)


def evaluate_ngram(model: NGramModel, vocab: Vocabulary, test_path, *, encoding: str = "utf-8") -> dict:
    """Perplexity and totals of ``model`` on ``test_path`` (see :data:`PERPLEXITY_CONVENTION`)."""
    stats = ReadStats()
    corpus: EncodedCorpus = encode_file(test_path, vocab, encoding=encoding, stats=stats)
    start = time.perf_counter()
    log_probs = model.log_prob(corpus)
    seconds = time.perf_counter() - start
    return {"perplexity": perplexity(log_probs, corpus.n_predicted), "convention": PERPLEXITY_CONVENTION,
            "sentences": len(corpus), "words": int(corpus.tokens.size), "predicted_tokens": corpus.n_predicted,
            "oov_tokens": int(np.count_nonzero(corpus.tokens == 0)), "log_prob_total": float(log_probs.sum()),
            "empty_lines_skipped": stats.empty_lines, "score_seconds": seconds}


def _train(args) -> int:
    check_output_file(args.out, "--out")
    model, vocab, stats = train_ngram(args.train, method=args.method, order=args.order, vocab_size=args.vocab_size,
                                      min_count=args.min_count, encoding=args.encoding)
    write_with_fallback(lambda path: save_ngram(path, model, vocab), args.out, "--out", what="the model")
    print(stats.summary())
    print(f"{type(model).__name__} order {model.order}, vocabulary {len(vocab)} (+</s>), "
          f"n-grams per order {model.n_ngrams()} -> {args.out}")
    return 0


def _eval(args) -> int:
    check_output_file(args.json, "--json")
    model, vocab = load_ngram(args.model)
    result = evaluate_ngram(model, vocab, args.test, encoding=args.encoding)
    result.update({"model": str(args.model), "test": str(args.test), "method": type(model).__name__,
                   "order": model.order})
    print(f"perplexity {result['perplexity']:.3f} ({result['convention']}); {result['sentences']} sentences, "
          f"{result['predicted_tokens']} predicted tokens, {result['oov_tokens']} <unk>")
    if args.json:
        write_text(args.json, json.dumps(result, indent=2), "--json")
    return 0


def register(subparsers) -> None:
    """Add ``ngram train`` and ``ngram eval`` to the ``mcsa`` parser."""
    parser = subparsers.add_parser("ngram", help="n-gram baselines (Kneser-Ney, Witten-Bell)")
    sub = parser.add_subparsers(dest="ngram_command", metavar="NGRAM_COMMAND")
    train = sub.add_parser("train", help="count an n-gram model from a corpus (one sentence per line)")
    train.add_argument("--train", required=True, help="training text, one sentence per line")
    train.add_argument("--out", "-o", required=True, help="model file to write (.npz)")
    train.add_argument("--method", choices=sorted(METHODS), default="kn", help="kn: modified Kneser-Ney; wb: Witten-Bell")
    train.add_argument("--order", type=number(int, 2, high=5), default=5, help="n-gram order, 2 to 5 (default 5)")
    train.add_argument("--vocab-size", type=number(int, 2), default=None, help="keep the most frequent words (including <unk>)")
    train.add_argument("--min-count", type=positive_int, default=1, help="drop words seen fewer times (default 1)")
    train.add_argument("--encoding", type=text_encoding, default="utf-8",
                       help="text encoding of --train (a Python codec name: utf-8, latin-1, utf-16, ...)")
    train.set_defaults(func=_train)
    ev = sub.add_parser("eval", help="perplexity of a model on a test file")
    ev.add_argument("--model", required=True, help="model file written by mcsa ngram train")
    ev.add_argument("--test", required=True, help="test text, one sentence per line")
    ev.add_argument("--json", default=None, help="also write the result as JSON to this file (default: none; the "
                    "perplexity is always printed, and a failed write prints the JSON and names a fallback file)")
    ev.add_argument("--encoding", type=text_encoding, default="utf-8",
                    help="text encoding of --test (a Python codec name: utf-8, latin-1, utf-16, ...)")
    ev.set_defaults(func=_eval)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)

"""``mcsa ngram train | eval | export``: the n-gram baselines (Kneser-Ney, Witten-Bell) from the command line.

``train`` builds a vocabulary from the training file (``--vocab-size`` / ``--min-count``, rest
``<unk>``), counts n-grams and writes one model file holding the vocabulary and the counts.
``eval`` scores a test file with an mcsa model file or an ARPA file (``.arpa``, ``.arpa.gz``: any file
that is not an mcsa ``.npz``) and prints SRILM's ``ppl`` lines (sentences, words, OOVs, zeroprobs,
log10 logprob, ppl with one end-of-sentence per sentence, ppl1 without) and the conventions; words outside
the vocabulary are scored as ``<unk>`` (ARPA models without ``<unk>`` skip them as OOVs); ``--json``
writes the numbers.  ``export`` writes a model as an ARPA file (:mod:`trf.arpa`, exact back-off form).
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np

from samplers.argtypes import input_flag, number, positive_int, text_encoding
from samplers.textio import check_text_file, write_text, write_with_fallback
from trf.arpa import ArpaModel, read_arpa, write_arpa
from trf.io import atomic_write_npz, check_model_path, check_output_file, read_npz
from trf.lm.corpus import EncodedCorpus, ReadStats, Vocabulary, encode_file
from trf.ngram import KIND, DiscountFallbackWarning, KneserNey, NGramModel, WittenBell, ppl_report

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


def load_ngram(path) -> tuple[NGramModel | ArpaModel, Vocabulary]:
    """Inverse of :func:`save_ngram`; an ARPA file (anything that is not a zip/npz archive) is read by
    :func:`trf.arpa.read_arpa` and comes with its own vocabulary."""
    if _is_arpa(path):
        model = read_arpa(path)
        return model, model.vocab
    arrays, meta = read_npz(path, KIND)
    if "vocab_words" not in arrays:
        raise ValueError(f"model file {str(path)!r} has no vocabulary (saved with NGramModel.save?)")
    return NGramModel.from_arrays(arrays, meta), Vocabulary.from_arrays(arrays)


def _is_arpa(path) -> bool:
    """True unless ``path`` starts like a zip archive (mcsa's ``.npz`` model files)."""
    try:
        with open(path, "rb") as probe:
            return probe.read(4) != b"PK\x03\x04"
    except OSError:
        return False  # read_npz names the missing / unreadable file


def evaluate_ngram(model: NGramModel | ArpaModel, vocab: Vocabulary, test_path, *, encoding: str = "utf-8") -> dict:
    """Perplexity, SRILM's ``ppl`` numbers and totals of ``model`` on ``test_path``.

    Words outside ``vocab`` are ``<unk>`` (id 0) and scored as words (:data:`PERPLEXITY_CONVENTION`); a token
    of probability 0 (``<unk>`` of an ARPA model without ``<unk>``: an OOV; any other: a zeroprob) is skipped
    as SRILM does, and counted.  ``report`` holds the printable lines (:func:`trf.ngram.ppl_report`).
    """
    stats = ReadStats()
    corpus: EncodedCorpus = encode_file(test_path, vocab, encoding=encoding, stats=stats)
    start = time.perf_counter()
    token_lp, _ = model.token_log_probs(corpus)
    seconds = time.perf_counter() - start
    predicted = np.full(corpus.n_predicted, len(vocab), dtype=np.int64)      # </s> unless a word
    word_at = np.arange(corpus.tokens.size) + np.repeat(np.arange(len(corpus)), corpus.lengths)
    predicted[word_at] = corpus.tokens
    zero = np.isneginf(token_lp)
    oov = zero & (predicted == 0)
    unk = int(np.count_nonzero(corpus.tokens == 0))
    report, numbers = ppl_report(str(test_path), sentences=len(corpus), words=int(corpus.tokens.size),
                                 oovs=int(oov.sum()), zeroprobs=int((zero & ~oov).sum()),
                                 log10_prob=float(token_lp[~zero].sum() / np.log(10.0)),
                                 unk_words=unk - int(oov.sum()))
    return {"perplexity": numbers["ppl"], "convention": PERPLEXITY_CONVENTION, "ppl1": numbers["ppl1"],
            "log10_prob": numbers["log10_prob"], "sentences": len(corpus), "words": int(corpus.tokens.size),
            "predicted_tokens": corpus.n_predicted, "oov_tokens": unk, "oovs_skipped": numbers["oovs"],
            "zeroprobs": numbers["zeroprobs"], "log_prob_total": float(token_lp[~zero].sum()),
            "empty_lines_skipped": stats.empty_lines, "score_seconds": seconds, "report": report}


def _train(args) -> int:
    check_output_file(args.out, "--out")
    check_text_file(args.train, "--train", encoding=args.encoding)
    with warnings.catch_warnings(record=True) as caught:  # the KN discount fallback, as one line each
        warnings.simplefilter("always", DiscountFallbackWarning)
        model, vocab, stats = train_ngram(args.train, method=args.method, order=args.order,
                                          vocab_size=args.vocab_size, min_count=args.min_count, encoding=args.encoding)
    for warning in caught:
        print(f"mcsa ngram train: warning: {warning.message}", file=sys.stderr)
    write_with_fallback(lambda path: save_ngram(path, model, vocab), args.out, "--out", what="the model")
    print(stats.summary())
    print(f"{type(model).__name__} order {model.order}, vocabulary {len(vocab)} (+</s>), "
          f"n-grams per order {model.n_ngrams()} -> {args.out}")
    return 0


def _eval(args) -> int:
    check_output_file(args.json, "--json")
    with input_flag("--model"):
        check_model_path(args.model)
    check_text_file(args.test, "--test", encoding=args.encoding)
    with input_flag("--model"):
        model, vocab = load_ngram(args.model)
    result = evaluate_ngram(model, vocab, args.test, encoding=args.encoding)
    result.update({"model": str(args.model), "test": str(args.test), "method": type(model).__name__,
                   "order": model.order})
    print(result["report"])
    if args.json:
        write_text(args.json, json.dumps(result, indent=2), "--json")
    return 0


def _export(args) -> int:
    check_output_file(args.arpa, "--arpa")
    with input_flag("--model"):
        model, vocab = load_ngram(args.model)
    counts = ", ".join(f"{k}-grams {n}" for k, n in write_arpa(args.arpa, model, vocab.words).items())
    print(f"{type(model).__name__} order {model.order} -> {args.arpa} (ARPA, log10, back-off form; {counts})")
    return 0


def register(subparsers) -> None:
    """Add ``ngram train``, ``ngram eval`` and ``ngram export`` to the ``mcsa`` parser."""
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
    ev.add_argument("--model", required=True, help="model file written by mcsa ngram train, or an ARPA file "
                    "(.arpa, .arpa.gz)")
    ev.add_argument("--test", required=True, help="test text, one sentence per line")
    ev.add_argument("--json", default=None, help="also write the result as JSON to this file (default: none; the "
                    "perplexity is always printed, and a failed write prints the JSON and names a fallback file)")
    ev.add_argument("--encoding", type=text_encoding, default="utf-8",
                    help="text encoding of --test (a Python codec name: utf-8, latin-1, utf-16, ...)")
    ev.set_defaults(func=_eval)
    export = sub.add_parser("export", help="write a model as an ARPA file (SRILM / KenLM format)")
    export.add_argument("--model", required=True, help="model file written by mcsa ngram train")
    export.add_argument("--arpa", required=True, help="ARPA file to write (gzip when it ends in .gz)")
    export.set_defaults(func=_export)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)

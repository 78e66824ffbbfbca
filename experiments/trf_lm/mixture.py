"""TRF + KN linear mixture with the *checked* normalisers that ``mcsa trf eval`` printed.

``mcsa trf eval --json`` stores, per checked length, the checked ``log Z_j`` and its interval ends
(``normaliser_check.per_length``).  This script reads those files for the validation and the test set,
scores both sets with the TRF under each of the three normaliser tables (checked, interval low end, high
end; AugSA's ``zeta_j + log Z_1`` where a length was not checked) and with an n-gram model saved by
``mcsa ngram train``, tunes the sentence-level linear weight on validation (checked normalisers) and
prints the test perplexities of the TRF, the n-gram and the mixture, each beside its interval::

    mcsa trf eval --model fast.npz --test valid.txt --json eval-valid.json
    mcsa trf eval --model fast.npz --test test.txt --json eval-test.json
    python -m experiments.trf_lm.mixture --model fast.npz --ngram kn5.npz --valid valid.txt --test test.txt \\
        --valid-check eval-valid.json --test-check eval-test.json

``--breakdown train.txt`` also prints the test perplexities by sentence length and by whether the sentence occurs in
the training text: where the TRF gains on the n-gram and where it loses (on fortunes, KN5's counts all but
memorise the test sentences that occur in the training text; experiments/trf_lm/methods.md, "Where the TRF gains and loses").
"""

from __future__ import annotations

import argparse
import codecs
import json
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np


def read_eval_json(check_json: Path) -> dict:
    """The ``mcsa trf eval --json`` result in ``check_json``; an unreadable file, or one without a normaliser check,
    is a ValueError that names it."""
    try:
        result = json.loads(Path(check_json).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{check_json}: not a readable `mcsa trf eval --json` file ({exc})") from None
    if not isinstance(result, dict) or "normaliser_check" not in result:
        raise ValueError(f"{check_json}: no normaliser_check (was `mcsa trf eval` run with --no-check?)")
    return result


@contextmanager
def _reading(flag: str):
    """Name ``flag`` in the error of a missing, unreadable or malformed input read in this block."""
    try:
        yield
    except (OSError, ValueError) as exc:
        raise ValueError(f"{flag}: {exc}") from None


def log_z_tables(model, result: dict) -> dict[str, np.ndarray]:
    """``{"checked", "low", "high"}`` -> ``log Z`` per sub-model from ``result`` (:func:`read_eval_json`'s), AugSA's
    where it has no entry.

    A higher ``log Z`` means a higher perplexity, so "low" holds the interval's lower ends."""
    augsa = model.zeta + model.log_z1()
    tables = {k: augsa.copy() for k in ("checked", "low", "high")}
    for row in result["normaliser_check"]["per_length"]:
        j = int(row["j"])
        checked = row.get("checked", 0.5 * (row["forward"] + row["reverse"]))
        tables["checked"][j - 1], tables["low"][j - 1], tables["high"][j - 1] = checked, row["lower"], row["upper"]
    return tables


def inconclusive_reason(result: dict) -> str | None:
    """Why the check in ``result`` (:func:`read_eval_json`'s) is inconclusive (the lengths ``mcsa trf eval``
    flagged), or None if it is conclusive.  An inconclusive check's headline is its interval's high end, so the
    mixture's rows are too."""
    check = result["normaliser_check"]
    if not check.get("inconclusive", False):
        return None
    flagged = [f"{what} at lengths {check[key]}" for key, what in
               (("smc_unsettled_lengths", "SMC unsettled"), ("csmc_failed_lengths", "conditional SMC failed"),
                ("known_floor_refuted_lengths", "the known sentences outweigh the estimates"),
                ("flagged_lengths", "the estimates disagree")) if check.get(key)]
    return "; ".join(flagged) or "see its warnings"


def mixture(model_path, ngram_path, valid, test, valid_check, test_check, *, encoding: str = "utf-8") -> dict:
    """The test perplexities of the n-gram, the TRF and their sentence-level linear mixture (weight tuned on
    ``valid`` with its checked normalisers), each TRF row under the checked normalisers and the two interval ends.
    ``encoding`` is that of ``valid`` and ``test``.  An input that is missing, unreadable or malformed is a
    ValueError that names its command-line flag (``--model``, ``--test-check``, ...) and the file.

    Returns
    -------
    dict
        ``ngram`` (its perplexity), ``ngram_name``, ``ngram_report`` (SRILM's ppl lines), ``augsa`` (the TRF with
        AugSA's zeta: a perplexity, or None with ``augsa_why_not``), ``trf`` and ``mix`` (``{"checked", "low",
        "high"}`` perplexities), ``weight`` (the TRF's), ``inconclusive`` (``{"valid", "test"}`` -> reason or None).
    """
    import trf
    from trf.lm.check.report import augsa_perplexity
    from trf.lm.corpus import encode_file
    from trf.lm.ngram_cli import evaluate_ngram, load_ngram
    from trf.lm.rescore import interpolate_linear, tune_linear_weight
    from trf.ngram import perplexity

    with _reading("--model"):
        model = trf.load(model_path)
    with _reading("--ngram"):
        ngram, ngram_vocab = load_ngram(ngram_path)
    if set(ngram_vocab.words) != set(model.vocab.words):
        raise ValueError("--ngram and --model have different vocabularies (train both with the same --vocab-size "
                         "on the same training file)")
    if not getattr(ngram, "has_unk", True):
        raise ValueError("--ngram is an ARPA model without <unk>: it gives probability 0 to the words the TRF "
                         "scores as <unk>, so the mixture's perplexity would not compare; use a model with <unk>")
    files, checks = {"valid": valid, "test": test}, {"valid": valid_check, "test": test_check}
    data, ng_data, tables = {}, {}, {}
    for k in files:
        with _reading(f"--{k}"):
            data[k] = encode_file(files[k], model.vocab, encoding=encoding)
            # the same words in another order (an ARPA file from another tool): the n-gram reads the text with its ids
            same = ngram_vocab.words == model.vocab.words
            ng_data[k] = data[k] if same else encode_file(files[k], ngram_vocab, encoding=encoding)
        with _reading(f"--{k}-check"):
            checks[k] = read_eval_json(checks[k])  # the tables and the verdict both come from it
            tables[k] = log_z_tables(model, checks[k])
    augsa = model.zeta + model.log_z1()

    def trf_log_prob(split: str, which: str) -> np.ndarray:
        corpus = data[split]
        dims = model.dimension(corpus.lengths)
        return model.log_prob(corpus, allow_positive=True) + augsa[dims - 1] - tables[split][which][dims - 1]

    n_test = data["test"].n_predicted
    ng = {k: ngram.log_prob(ng_data[k]) for k in files}
    weight = tune_linear_weight(trf_log_prob("valid", "checked"), ng["valid"], data["valid"].n_predicted)
    augsa_ppl = augsa_perplexity(model.log_prob(data["test"], allow_positive=True), data["test"])
    per_sentence = {"trf": {w: trf_log_prob("test", w) for w in ("checked", "low", "high")}, "ngram": ng["test"]}
    per_sentence["mix"] = {w: interpolate_linear(lp, ng["test"], weight) for w, lp in per_sentence["trf"].items()}
    return {
        "ngram": perplexity(ng["test"], n_test), "ngram_name": f"{type(ngram).__name__}, order {ngram.order}",
        "ngram_report": evaluate_ngram(ngram, ngram_vocab, test, encoding=encoding)["report"],
        "augsa": None if augsa_ppl.impossible else augsa_ppl.perplexity, "augsa_why_not": augsa_ppl.why_not,
        "trf": {w: perplexity(lp, n_test) for w, lp in per_sentence["trf"].items()},
        "mix": {w: perplexity(lp, n_test) for w, lp in per_sentence["mix"].items()},
        "weight": weight, "inconclusive": {k: inconclusive_reason(checks[k]) for k in files},
        "per_sentence": per_sentence, "test_corpus": data["test"], "vocab": model.vocab,
    }


LENGTH_GROUPS = ((1, 1), (2, 2), (3, 4), (5, 7), (8, 12), (13, 20), (21, 30), (31, 40), (41, None))


def in_text(corpus, path, vocab, *, encoding: str = "utf-8") -> np.ndarray:
    """Per sentence of ``corpus``: does the same sentence occur in the text file ``path`` (compared after both are
    encoded with ``vocab``, so out-of-vocabulary words match as ``<unk>``)?"""
    from trf.lm.corpus import encode_file

    seen = {sentence.tobytes() for sentence in encode_file(path, vocab, encoding=encoding)}
    return np.array([sentence.tobytes() in seen for sentence in corpus], dtype=bool)


def breakdown(per_sentence: dict, lengths, marks: dict[str, np.ndarray]) -> list[dict]:
    """The test perplexities of :func:`mixture` over groups of its sentences: all of them; for each ``name -> mask``
    of ``marks`` (e.g. ``{"in the training text": in_text(...)}``) the sentences marked and the others ("not " +
    name); and each group of :data:`LENGTH_GROUPS` (empty groups left out).  Each row: ``group``, ``sentences``,
    ``tokens`` (words plus one end of sentence each), ``ngram`` and ``trf`` / ``mix`` as ``{"checked", "low",
    "high"}``.  The groups of one partition hold the whole test set between them, so their tokens add up to its
    tokens and their log-likelihoods to its log-likelihood: a group's perplexity says where a model gains or loses,
    the whole set's says by how much."""
    from trf.ngram import perplexity

    lengths = np.asarray(lengths)
    groups = [("all", np.ones(lengths.size, dtype=bool))]
    for name, mask in marks.items():
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != lengths.shape:
            raise ValueError(f"marks[{name!r}] has {mask.size} entries for {lengths.size} sentences")
        groups += [(name, mask), ("not " + name, ~mask)]
    for low, high in LENGTH_GROUPS:
        name = f"{low} word{'s' if low > 1 else ''}" if high == low else (
            f"{low}-{high} words" if high is not None else f"{low} words or more")
        groups.append((name, (lengths >= low) & (lengths <= (high if high is not None else lengths.max()))))
    rows = []
    for name, mask in groups:
        if not mask.any():
            continue
        tokens = int((lengths[mask] + 1).sum())
        rows.append({"group": name, "sentences": int(mask.sum()), "tokens": tokens,
                     "ngram": perplexity(per_sentence["ngram"][mask], tokens),
                     **{model: {w: perplexity(lp[mask], tokens) for w, lp in per_sentence[model].items()}
                        for model in ("trf", "mix")}})
    return rows


def headline(ppl: dict, why: str | None) -> tuple[float, str]:
    """The perplexity to quote from ``{"checked", "low", "high"}`` and how it was chosen: the checked one, or the
    interval's high end where the test check is inconclusive (``why``), as ``mcsa trf eval`` does."""
    if why is None:
        return ppl["checked"], "checked"
    return ppl["high"], f"checked, inconclusive: high end (midpoint {ppl['checked']:.2f})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="sentence TRF saved by `mcsa trf train`")
    parser.add_argument("--ngram", required=True, help="n-gram model saved by `mcsa ngram train`, or an ARPA file")
    parser.add_argument("--valid", required=True, help="validation sentences (tunes the mixture weight)")
    parser.add_argument("--test", required=True, help="test sentences")
    parser.add_argument("--valid-check", required=True, help="`mcsa trf eval --json` output on --valid")
    parser.add_argument("--test-check", required=True, help="`mcsa trf eval --json` output on --test")
    parser.add_argument("--encoding", default="utf-8", help="encoding of --valid and --test (default utf-8)")
    parser.add_argument("--breakdown", metavar="TRAIN",
                        help="also print the test perplexities by sentence length and by whether the sentence occurs "
                             "in TRAIN (the training text, read with --encoding)")
    args = parser.parse_args(argv)
    try:
        codecs.lookup(args.encoding)
    except LookupError:
        parser.error(f"--encoding: unknown encoding {args.encoding!r}")

    try:
        got = mixture(args.model, args.ngram, args.valid, args.test, args.valid_check, args.test_check,
                      encoding=args.encoding)
        if args.breakdown is not None:
            with _reading("--breakdown"):
                seen = in_text(got["test_corpus"], args.breakdown, got["vocab"], encoding=args.encoding)
    except (OSError, ValueError) as exc:  # a missing, unreadable or mismatched input: its message names it
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: nothing was written; run the same command again", file=sys.stderr)
        return 130
    why = got["inconclusive"]
    for k in ("valid", "test"):
        if why[k] is not None:
            print(f"warning: --{k}-check is inconclusive ({why[k]})"
                  + (": the TRF rows show the interval's high end, as `mcsa trf eval` does, with the midpoint beside "
                     "it; the high end itself may be too low where SMC has not settled" if k == "test" else
                     ": the mixture weight is tuned on its midpoints"), file=sys.stderr)
    ng_ppl = got["ngram"]
    print("| model | normalisers | test PPL | interval (checked normalisers' ends) | vs n-gram |")
    print("|---|---|---|---|---|")
    print(f"| n-gram ({got['ngram_name']}) | - | {ng_ppl:.2f} | - | 1.000 |")
    augsa_row = (f"none: {got['augsa_why_not']} | - | -" if got["augsa"] is None
                 else f"{got['augsa']:.2f} | - | {got['augsa'] / ng_ppl:.3f}")
    print(f"| TRF | AugSA zeta | {augsa_row} |")
    for label, ppl in (("TRF", got["trf"]), (f"TRF + n-gram (linear, TRF weight {got['weight']:.2f} tuned on valid)",
                                              got["mix"])):
        head, how = headline(ppl, why["test"])
        print(f"| {label} | {how} | {head:.2f} | [{ppl['low']:.2f}, {ppl['high']:.2f}] | {head / ng_ppl:.3f} |")
    print("\nn-gram on --test, SRILM's ppl lines:\n" + got["ngram_report"])
    if args.breakdown is not None:
        print(f"\n--test by group (in the training text: the same sentence, <unk> for <unk>, occurs in "
              f"{args.breakdown}; the TRF's interval from the checked normalisers' ends):\n")
        print("| sentences | count | tokens | TRF | interval | n-gram | TRF / n-gram | TRF + n-gram | / n-gram |")
        print("|---|---|---|---|---|---|---|---|---|")
        for row in breakdown(got["per_sentence"], got["test_corpus"].lengths, {"in the training text": seen}):
            trf_ppl, mix_ppl = headline(row["trf"], why["test"])[0], headline(row["mix"], why["test"])[0]
            print(f"| {row['group']} | {row['sentences']} | {row['tokens']} | {trf_ppl:.2f} | [{row['trf']['low']:.2f}, "
                  f"{row['trf']['high']:.2f}] | {row['ngram']:.2f} | {trf_ppl / row['ngram']:.3f} | {mix_ppl:.2f} | "
                  f"{mix_ppl / row['ngram']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

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
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def log_z_tables(model, check_json: Path) -> dict[str, np.ndarray]:
    """``{"checked", "low", "high"}`` -> ``log Z`` per sub-model (AugSA's where the JSON has no entry).

    A higher ``log Z`` means a higher perplexity, so "low" holds the interval's lower ends."""
    result = json.loads(Path(check_json).read_text())
    if "normaliser_check" not in result:
        raise ValueError(f"{check_json}: no normaliser_check (was `mcsa trf eval` run with --no-check?)")
    augsa = model.zeta + model.log_z1()
    tables = {k: augsa.copy() for k in ("checked", "low", "high")}
    for row in result["normaliser_check"]["per_length"]:
        j = int(row["j"])
        checked = row.get("checked", 0.5 * (row["forward"] + row["reverse"]))
        tables["checked"][j - 1], tables["low"][j - 1], tables["high"][j - 1] = checked, row["lower"], row["upper"]
    return tables


def inconclusive_reason(check_json: Path) -> str | None:
    """Why the check in ``check_json`` is inconclusive (the lengths ``mcsa trf eval`` flagged), or None if it is
    conclusive.  An inconclusive check's headline is its interval's high end, so the mixture's rows are too."""
    check = json.loads(Path(check_json).read_text())["normaliser_check"]
    if not check.get("inconclusive", False):
        return None
    flagged = [f"{what} at lengths {check[key]}" for key, what in
               (("smc_unsettled_lengths", "SMC unsettled"), ("csmc_failed_lengths", "conditional SMC failed"),
                ("known_floor_refuted_lengths", "the known sentences outweigh the estimates"),
                ("flagged_lengths", "the estimates disagree")) if check.get(key)]
    return "; ".join(flagged) or "see its warnings"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="sentence TRF saved by `mcsa trf train`")
    parser.add_argument("--ngram", required=True, help="n-gram model saved by `mcsa ngram train`, or an ARPA file")
    parser.add_argument("--valid", required=True, help="validation sentences (tunes the mixture weight)")
    parser.add_argument("--test", required=True, help="test sentences")
    parser.add_argument("--valid-check", required=True, help="`mcsa trf eval --json` output on --valid")
    parser.add_argument("--test-check", required=True, help="`mcsa trf eval --json` output on --test")
    args = parser.parse_args(argv)

    import trf
    from trf.lm.check.report import augsa_perplexity
    from trf.lm.corpus import encode_file
    from trf.lm.ngram_cli import evaluate_ngram, load_ngram
    from trf.lm.rescore import interpolate_linear, tune_linear_weight
    from trf.ngram import perplexity

    model = trf.load(args.model)
    ngram, ngram_vocab = load_ngram(args.ngram)
    if set(ngram_vocab.words) != set(model.vocab.words):
        raise ValueError("--ngram and --model have different vocabularies (train both with the same --vocab-size "
                         "on the same training file)")
    if not getattr(ngram, "has_unk", True):
        raise ValueError("--ngram is an ARPA model without <unk>: it gives probability 0 to the words the TRF "
                         "scores as <unk>, so the mixture's perplexity would not compare; use a model with <unk>")
    data = {k: encode_file(getattr(args, k), model.vocab) for k in ("valid", "test")}
    # the same words in another order (an ARPA file from another tool): the n-gram reads the text with its own ids
    ng_data = data if ngram_vocab.words == model.vocab.words else \
        {k: encode_file(getattr(args, k), ngram_vocab) for k in ("valid", "test")}
    tables = {k: log_z_tables(model, getattr(args, f"{k}_check")) for k in ("valid", "test")}
    why = {k: inconclusive_reason(getattr(args, f"{k}_check")) for k in ("valid", "test")}
    for k in ("valid", "test"):
        if why[k] is not None:
            print(f"warning: --{k}-check is inconclusive ({why[k]})"
                  + (": the TRF rows show the interval's high end, as `mcsa trf eval` does, with the midpoint beside "
                     "it; the high end itself may be too low where SMC has not settled" if k == "test" else
                     ": the mixture weight is tuned on its midpoints"), file=sys.stderr)
    augsa = model.zeta + model.log_z1()

    def trf_log_prob(split: str, which: str) -> np.ndarray:
        corpus = data[split]
        dims = model.dimension(corpus.lengths)
        return model.log_prob(corpus, allow_positive=True) + augsa[dims - 1] - tables[split][which][dims - 1]

    n_test = data["test"].n_predicted
    ng = {k: ngram.log_prob(ng_data[k]) for k in ("valid", "test")}
    ng_ppl = perplexity(ng["test"], n_test)
    weight = tune_linear_weight(trf_log_prob("valid", "checked"), ng["valid"], data["valid"].n_predicted)
    print("| model | normalisers | test PPL | interval (checked normalisers' ends) | vs n-gram |")
    print("|---|---|---|---|---|")
    print(f"| n-gram ({type(ngram).__name__}, order {ngram.order}) | - | {ng_ppl:.2f} | - | 1.000 |")
    augsa_ppl = augsa_perplexity(model.log_prob(data["test"], allow_positive=True), data["test"])
    augsa_row = (f"none: {augsa_ppl.why_not} | - | -" if augsa_ppl.impossible
                 else f"{augsa_ppl.perplexity:.2f} | - | {augsa_ppl.perplexity / ng_ppl:.3f}")
    print(f"| TRF | AugSA zeta | {augsa_row} |")
    trf_ppl = {w: perplexity(trf_log_prob("test", w), n_test) for w in ("checked", "low", "high")}
    mix = {w: perplexity(interpolate_linear(trf_log_prob("test", w), ng["test"], weight), n_test)
           for w in ("checked", "low", "high")}
    for label, ppl in (("TRF", trf_ppl), (f"TRF + n-gram (linear, TRF weight {weight:.2f} tuned on valid)", mix)):
        head, how = (ppl["checked"], "checked") if why["test"] is None else \
            (ppl["high"], f"checked, inconclusive: high end (midpoint {ppl['checked']:.2f})")
        print(f"| {label} | {how} | {head:.2f} | [{ppl['low']:.2f}, {ppl['high']:.2f}] | {head / ng_ppl:.3f} |")
    print("\nn-gram on --test, SRILM's ppl lines:\n" + evaluate_ngram(ngram, ngram_vocab, args.test)["report"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

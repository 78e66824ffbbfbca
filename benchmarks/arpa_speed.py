"""ARPA export / import speed: ``write_arpa`` and ``read_arpa`` on a KN5, and scoring through the ARPA model
against the n-gram model it came from (and against KenLM's reader of the same file, when ``kenlm`` is installed).

The corpus is synthetic (no download): sentences of 1-20 words drawn from a Zipf law over ``--vocab`` words, so
counts-of-counts look like text.  Every scorer is warmed up first; the table shows the median of ``--repeats``
interleaved timings and the ratio to mcsa's own ``KneserNey.log_prob`` in the same run, beside the largest
difference of the sentence log10 probabilities (the check that the timed scorers compute the same thing).
The machine is shared: read ratios, not absolute numbers.

    .venv/bin/python benchmarks/arpa_speed.py --sentences 20000 --vocab 5000
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=20000, help="training sentences")
    parser.add_argument("--test", type=int, default=2000, help="test sentences")
    parser.add_argument("--vocab", type=int, default=5000, help="words of the Zipf law")
    parser.add_argument("--order", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    from trf.arpa import ArpaModel, read_arpa, write_arpa
    from trf.ngram import DiscountFallbackWarning, KneserNey

    rng = np.random.default_rng(0)
    zipf = 1.0 / np.arange(1, args.vocab + 1)
    zipf /= zipf.sum()

    def draw(n):
        return [rng.choice(args.vocab, size=rng.integers(1, 21), p=zipf) for _ in range(n)]

    train, test = draw(args.sentences), draw(args.test)
    words = ["<unk>"] + [f"w{i}" for i in range(1, args.vocab)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiscountFallbackWarning)
        model = KneserNey(args.order).fit(train, args.vocab)
    counts = model.n_ngrams()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        plain, packed = Path(folder) / "kn.arpa", Path(folder) / "kn.arpa.gz"
        for path in (plain, packed):
            seconds = _median_seconds(lambda p=path: write_arpa(p, model, words), args.repeats)
            rows.append((f"write_arpa {path.name}", seconds, f"{path.stat().st_size / 1e6:.1f} MB", "", ""))
        for path in (plain, packed):
            seconds = _median_seconds(lambda p=path: read_arpa(p), args.repeats)
            rows.append((f"read_arpa {path.name}", seconds, "", "", ""))
        arpa = read_arpa(plain)
        exact = model.log_prob(test) / math.log(10)
        scorers = {"KneserNey.log_prob (mcsa)": lambda: model.log_prob(test),
                   "ArpaModel.log_prob (read back)": lambda: arpa.log_prob(test),
                   "ArpaModel.from_ngram (in memory)": None}
        memory = ArpaModel.from_ngram(model, words)
        scorers["ArpaModel.from_ngram (in memory)"] = lambda: memory.log_prob(test)
        values = {"KneserNey.log_prob (mcsa)": exact, "ArpaModel.log_prob (read back)": arpa.log_prob(test) / math.log(10),
                  "ArpaModel.from_ngram (in memory)": memory.log_prob(test) / math.log(10)}
        try:
            import kenlm

            for path in (plain, packed):
                seconds = _median_seconds(lambda p=path: kenlm.Model(str(p)), args.repeats)
                rows.append((f"kenlm.Model {path.name} (peer's reader)", seconds, "", "", ""))
            peer = kenlm.Model(str(plain))
            texts = [" ".join(words[i] for i in s) for s in test]
            scorers["kenlm.Model.score (peer)"] = lambda: [peer.score(t) for t in texts]
            values["kenlm.Model.score (peer)"] = np.array([peer.score(t) for t in texts])
        except ImportError:
            print("kenlm not installed (pip install kenlm): no peer row")
        for fn in scorers.values():
            fn()                                                    # warm up
        times = {name: _median_seconds(fn, args.repeats) for name, fn in scorers.items()}
        base = times["KneserNey.log_prob (mcsa)"]
        for name, seconds in times.items():
            rows.append((f"score {args.test} sentences: {name}", seconds, "", f"{seconds / base:.2f}",
                         f"{np.abs(values[name] - exact).max():.1e}"))
    print(f"KN{args.order} on {args.sentences} Zipf sentences over {args.vocab} words; n-grams per order {counts}")
    print("| step | median s | size | time / mcsa KN | max abs diff log10 p(sentence) vs mcsa |")
    print("|---|---|---|---|---|")
    for name, seconds, size, ratio, diff in rows:
        print(f"| {name} | {seconds:.3f} | {size} | {ratio} | {diff} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

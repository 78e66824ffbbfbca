"""TransMS speed on both feature backends, against the code of a reference git revision.

Usage: ``python benchmarks/trf_transms_speed.py [--reference REV] [--repeats N]``

The reference revision's TransMS modules (``trf/transms.py``, ``trf/_word_kernels.py``,
``trf/lm/transms.py``, ``trf/lm/_transms_kernels.py``) are extracted with ``git show`` into a
temporary folder and imported beside the current ones.  For each backend the script checks that both
give identical draws at the same seed (the behaviour check), then times them in interleaved repeats
(medians, Numba compile excluded by a warm-up, one thread) and prints ``current / reference``.

* word backend: alphabet of 27 symbols, every n-gram a feature (21,951), m = 12, 100 chains,
  20,000 draws round-robin (the AugSA schedule);
* sentence backend: synthetic Zipf corpus (20,000 sentences, V = 2,000, 50 classes),
  ``w+c+ws+cs+cpw`` features (~1.9M), m = 40, 20 chains x 10 steps, serial build;
* with ``--model FILE`` (a trained ``mcsa trf train`` model), the transition of the check's fixed-length AIS on it:
  10 chains of ``--length`` words drawn from the model's unigram base, 5 Markov sweeps without jumps, serial.

Timings on a shared machine are noisy: the load average is printed; compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FILES = {  # reference module name -> (path at REV, import rewrites)
    "ref_word_kernels": ("trf/_word_kernels.py", []),
    "ref_word_transms": ("trf/transms.py", [("from . import _word_kernels as K", "import ref_word_kernels as K"),
                                            ("from .augsa", "from trf.augsa"), ("from .data", "from trf.data"),
                                            ("from .features", "from trf.features"),
                                            # revisions since 9e32387 (the shared skeleton): current modules
                                            ("from . import ", "from trf import "), ("from .", "from trf.")]),
    "ref_lm_transms_kernels": ("trf/lm/_transms_kernels.py", []),
    "ref_lm_transms": ("trf/lm/transms.py", [("from trf.lm import _transms_kernels as tk",
                                              "import ref_lm_transms_kernels as tk"),
                                             ("from trf.lm._transms_kernels import",
                                              "from ref_lm_transms_kernels import")]),
}


def private_numba_cache() -> None:
    """Compile into a fresh temporary Numba cache (call before numba is imported).  The reference revision's modules
    specialise the project's shared jitted code (the TransMS skeleton) for their own types; in the project's cache
    those entries break any later process that loads the skeleton (``No module named 'ref_lm_transms_kernels'``)."""
    if "numba" in sys.modules:
        raise RuntimeError("private_numba_cache() must run before numba is imported")
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="mcsa-bench-numba-")


def load_reference(rev: str, folder: Path, files: dict | None = None) -> dict:
    """Modules ``files`` (name -> (path at REV, import rewrites); default :data:`FILES`) of revision ``rev``, written
    to ``folder`` and imported beside the current ones."""
    files = FILES if files is None else files
    for name, (path, rewrites) in files.items():
        text = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout
        for old, new in rewrites:
            text = text.replace(old, new)
        (folder / f"{name}.py").write_text(text)
    sys.path.insert(0, str(folder))
    return {name: importlib.import_module(name) for name in files}


def median_times(fn_ref, fn_new, repeats: int) -> tuple[float, float]:
    t_ref, t_new = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        fn_ref()
        t_ref.append(time.perf_counter() - t)
        t = time.perf_counter()
        fn_new()
        t_new.append(time.perf_counter() - t)
    return float(np.median(t_ref)), float(np.median(t_new))


def word_case(ref, repeats: int) -> dict:
    from trf import transms as new
    from trf.data import Alphabet
    from trf.features import FeatureSet, n_dense

    alphabet = Alphabet("abcdefghijklmnopqrstuvwxyz'")
    features = FeatureSet(alphabet, np.arange(n_dense(alphabet.size)))
    lam = np.random.default_rng(1).normal(scale=0.3, size=features.d)
    m, n = 12, 20000
    lw = -np.log(m) - 0.9 * np.arange(m) * np.log(features.V)
    start = ref.init_chains(100, m, features.V, seed=3, length_probs=np.full(m, 1 / m))
    new_start = new.ChainState(start.tokens[:, :m], start.lengths)
    run_ref = lambda: ref.transms(features, lam, lw, start, n, seed=4)       # noqa: E731
    run_new = lambda: new.transms(features, lam, lw, new_start, n, seed=4)   # noqa: E731
    a, b = run_ref(), run_new()
    same = np.array_equal(a[1].tokens, b[1].tokens) and np.array_equal(a[1].offsets, b[1].offsets)
    t_ref, t_new = median_times(run_ref, run_new, repeats)
    return {"case": f"word, {features.d} features, {n} draws", "same": same, "ref": t_ref, "new": t_new, "n": n}


def sentence_case(ref, repeats: int) -> dict:
    from trf.lm import transms as new
    from trf.lm.corpus import EncodedCorpus
    from trf.lm.features import SentenceFeatures

    rng = np.random.default_rng(0)
    V, C, m, chains, steps = 2000, 50, 40, 20, 10
    p = 1 / np.arange(1, V + 1)
    corpus = EncodedCorpus.from_sentences([rng.choice(V, size=rng.integers(1, 25), p=p / p.sum())
                                           for _ in range(20000)])
    features = SentenceFeatures.build(corpus, V, "w+c+ws+cs+cpw", word_class=rng.integers(0, C, size=V))
    lam = rng.normal(scale=0.2, size=features.n_features)
    lw = np.full(m, -3.0)
    s_ref, s_new = ref.SentenceSampler(features, m), new.SentenceSampler(features, m)
    start = s_new.init_chains(chains, seed=0, start=corpus)
    run_ref = lambda: s_ref.run(lam, lw, start, steps, seed=1, parallel=False)   # noqa: E731
    run_new = lambda: s_new.run(lam, lw, start, steps, seed=1, parallel=False)   # noqa: E731
    a, b = run_ref(), run_new()
    same = np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2]) and tuple(a[3]) == tuple(b[3])
    t_ref, t_new = median_times(run_ref, run_new, repeats)
    return {"case": f"sentence, {features.n_features} features, {chains * steps} draws", "same": same,
            "ref": t_ref, "new": t_new, "n": chains * steps}


def model_case(ref, repeats: int, path: str, length: int) -> dict:
    from trf.lm import transms as new
    from trf.lm.model import SentenceTRF, unigram_base

    model = SentenceTRF.load(path)
    length = min(length, model.m)
    chains, sweeps = 10, 5
    u, _ = unigram_base(model)
    rng = np.random.default_rng(0)
    tokens = np.zeros((chains, model.m), dtype=np.int64)
    tokens[:, :length] = rng.choice(u.size, size=(chains, length), p=np.exp(u - np.logaddexp.reduce(u)))
    start = new.ChainState(tokens, np.full(chains, length, dtype=np.int64))
    flat = np.zeros(model.m)
    s_ref, s_new = ref.SentenceSampler(model.features, model.m), new.SentenceSampler(model.features, model.m)
    run_ref = lambda: s_ref.run(model.lam, flat, start, sweeps, seed=1, parallel=False, jump=False)  # noqa: E731
    run_new = lambda: s_new.run(model.lam, flat, start, sweeps, seed=1, parallel=False, jump=False)  # noqa: E731
    a, b = run_ref(), run_new()
    same = np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
    t_ref, t_new = median_times(run_ref, run_new, repeats)
    return {"case": f"AIS transition on {Path(path).name} ({model.features.n_features} features), length {length}, "
                    f"{chains} chains x {sweeps} sweeps", "same": same, "ref": t_ref, "new": t_new,
            "n": chains * sweeps}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default="3f9cc9f", help="git revision of the reference code")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", default=None, help="also time the check's AIS transition on this trained model")
    parser.add_argument("--length", type=int, default=40, help="sentence length of the --model case")
    args = parser.parse_args(argv)
    if args.model is not None and not Path(args.model).is_file():
        raise SystemExit(f"--model {args.model!r} is not a file")
    if args.length < 1:
        raise SystemExit(f"--length must be >= 1, got {args.length}")
    with tempfile.TemporaryDirectory() as folder:
        ref = load_reference(args.reference, Path(folder))
        rows = [word_case(ref["ref_word_transms"], args.repeats), sentence_case(ref["ref_lm_transms"], args.repeats)]
        if args.model is not None:
            rows.append(model_case(ref["ref_lm_transms"], args.repeats, args.model, args.length))
    print(f"reference {args.reference}; {args.repeats} interleaved repeats (medians); load {os.getloadavg()[0]:.1f}")
    print("| backend | identical draws | reference s | current s | current / reference | draws/s current |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['case']} | {r['same']} | {r['ref']:.3f} | {r['new']:.3f} | {r['new'] / r['ref']:.3f} | "
              f"{r['n'] / r['new']:.0f} |")
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    private_numba_cache()
    sys.exit(main())

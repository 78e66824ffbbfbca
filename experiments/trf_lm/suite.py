"""Harness suites of the fortunes language-model experiment: ``trf-lm-fortunes`` and ``trf-lm-quick``.

A problem is a corpus of train / valid / test files (:class:`CorpusProblem`), by default the prepared fortunes corpus (:class:`FortunesProblem`: the split of
``experiments/trf_lm/benchmark.py``, optionally cut to the first ``max_sentences`` training sentences);
an estimator is one model (:class:`LMMethod`): modified Kneser-Ney (budget = order) or a TRF trained by
``trf.lm.train.train_lm`` (budget = AugSA iterations, the benchmark's fast schedule; SMC draws, data-derived step
sizes, guards and zeta refinement by default).  The target is the test perplexity (words plus one
end-of-sentence per sentence): for the TRF with normalisers checked from both sides
(:func:`trf.lm.check.checked_perplexity`: the SMC / conditional SMC midpoint where they bracket, else forward
and reverse AIS; exact on tiny lengths; the training text and the loops of its cycles bound them from below), the
value ``mcsa trf eval --check-known TRAIN`` prints.  No exact answer exists, so the target is *measured*
(``Exact(None)``); a TRF run stopped by a divergence guard raises and is recorded as a failure.
"""

from __future__ import annotations

import tempfile
from functools import cached_property
from pathlib import Path
from typing import Any

from samplers.harness import Estimator, Problem, Suite
from samplers.harness.problem import Exact

TARGETS = ("test_ppl",)


class CorpusProblem(Problem):
    """A language-modelling corpus given as train / valid / test files (one sentence per line); the target
    is the test perplexity with the ``vocab`` most frequent training words (the rest ``<unk>``)."""

    def __init__(self, name: str, train: str | Path, valid: str | Path, test: str | Path, *, vocab: int = 10000):
        self.name = name
        self._paths = {"train": Path(train), "valid": Path(valid), "test": Path(test)}
        self.vocab = int(vocab)
        self.provenance = "measured: test perplexity (no exact answer)"

    @property
    def files(self) -> dict[str, Path]:
        """train / valid / test files."""
        return self._paths

    def exact(self) -> dict[str, Any]:
        return {name: Exact(None, provenance=self.provenance) for name in TARGETS}


class FortunesProblem(CorpusProblem):
    """The fortunes corpus of the benchmark (needs the Debian packages ``fortunes``, ``fortunes-min`` and
    ``fortune-anarchism``), vocabulary of the ``vocab`` most frequent training words."""

    def __init__(self, *, max_len: int = 40, vocab: int = 10000, max_sentences: int | None = None,
                 data_dir: str | None = None):
        self.max_len, self.vocab, self.max_sentences = max_len, int(vocab), max_sentences
        self.data_dir = data_dir
        self.name = "fortunes" + (f"-{max_sentences}" if max_sentences else "")
        self.provenance = "measured: test perplexity (no exact answer)"

    @cached_property
    def files(self) -> dict[str, Path]:
        """train / valid / test files (the training file cut to ``max_sentences`` lines when given)."""
        from .benchmark import prepare_corpus

        folder = Path(self.data_dir or tempfile.mkdtemp(prefix="mcsa-fortunes-"))
        paths = prepare_corpus(folder, self.max_len)
        if self.max_sentences:
            lines = paths["train"].read_text(encoding="utf-8").splitlines()[: self.max_sentences]
            paths["train"] = folder / f"train-{self.max_sentences}.txt"
            paths["train"].write_text("\n".join(lines) + "\n", encoding="utf-8")
        return paths


class LMMethod(Estimator):
    """``"kn"`` (budget = n-gram order) or ``"trf"`` (budget = AugSA iterations)."""

    warmup = False  # a warm-up would be a whole training run

    def __init__(self, label: str, *, features: str = "w+c", classes: int = 200, samples: int = 100,
                 t_c: float = 500.0, chains: int = 20, check_temperatures: int = 200):
        if label not in ("kn", "trf"):
            raise ValueError(f"label must be 'kn' or 'trf', got {label!r}")
        self.name = label
        self.budget_label = "n-gram order" if label == "kn" else "AugSA iterations"
        self.features, self.classes, self.samples, self.t_c = features, classes, samples, t_c
        self.chains, self.check_temperatures = chains, check_temperatures

    def supports(self, problem) -> bool:
        return isinstance(problem, CorpusProblem)

    def estimate(self, problem: CorpusProblem, budget: int, seed: int) -> dict[str, Any]:
        from trf.lm.backend import lm_config
        from trf.lm.check import checked_perplexity
        from trf.lm.corpus import Vocabulary, encode_file
        from trf.lm.train import train_lm
        from trf.ngram import KneserNey, perplexity

        paths = problem.files
        if self.name == "kn":
            vocab = Vocabulary.build(paths["train"], max_size=problem.vocab)
            train, test = encode_file(paths["train"], vocab), encode_file(paths["test"], vocab)
            model = KneserNey(order=int(budget)).fit(train, len(vocab))
            return {"test_ppl": perplexity(model.log_prob(test), test.n_predicted)}
        config = lm_config(n_samples=self.samples, t_max=int(budget), t_c=self.t_c, beta_lambda=0.0,
                           t0=10**9, stop_window=None)
        model, result = train_lm(paths["train"], features=self.features, classes=self.classes,
                                 vocab_size=problem.vocab, config=config, n_chains=self.chains,
                                 seed=int(seed) % (2**31 - 1), progress=False)
        if result.guard_message:
            raise ValueError(result.guard_message)
        test = encode_file(paths["test"], model.vocab)
        keep = test.lengths <= model.m
        test = type(test).from_sentences([s for s, k in zip(test, keep) if k])
        checked = checked_perplexity(model, test, known=[encode_file(paths["train"], model.vocab)],
                                     n_temperatures=self.check_temperatures, seed=int(seed) % (2**31 - 1))
        return {"test_ppl": checked.headline}


def fortunes_suite() -> Suite:
    """KN5 and the fast-schedule ``w+c`` TRF (K = 100, constant rate 1/501) at 5000 and 20000 AugSA
    iterations on the full corpus, checked normalisers at 200 temperatures; one replicate (hours)."""
    return Suite(problems=[FortunesProblem()], estimators=[LMMethod("kn"), LMMethod("trf")],
                 budgets={"kn": [3, 5], "trf": [5000, 20000]}, replicates=1,
                 description="fortunes LM: test perplexity of KN3/KN5 and a w+c TRF with checked normalisers")


def fortunes_quick_suite() -> Suite:
    """2000 training sentences, vocabulary 2000, 50 classes, KN3 and a TRF at 200 iterations (K = 50,
    10 chains), checked normalisers at 50 temperatures; 2 replicates."""
    trf = LMMethod("trf", classes=50, samples=50, chains=10, check_temperatures=50)
    return Suite(problems=[FortunesProblem(max_sentences=2000, vocab=2000)], estimators=[LMMethod("kn"), trf],
                 budgets={"kn": [3], "trf": [200]}, replicates=2,
                 description="fortunes LM reduced: 2000 sentences, KN3 vs a 200-iteration TRF (checked PPL)")

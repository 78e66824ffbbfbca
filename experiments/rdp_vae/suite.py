"""Harness suite ``rdp-vae``: structured-VAE training with FULL / TOPK / RDP (Table 5 of the RDP paper).

One problem is a corpus slice (the fortunes corpus of :mod:`experiments.rdp_vae.data`): the first
``train_sentences`` training and ``eval_sentences`` test sentences.  Its target ``test_nll`` (nats
per sentence, importance-sampled, :func:`experiments.rdp_vae.model.evaluate_nll`) has no exact reference (``None``:
the harness records the estimates and their spread over replicates, no bias).  An estimator trains
one variant for ``budget`` AdamW steps from the replicate's seed and returns the test NLL, its
standard error over sentences and the number of inactive states of the aggregated posterior.

    mcsa bench run --suite rdp-vae --out out-rdp-vae --replicates 3
"""

from __future__ import annotations

from typing import Any

from samplers.harness import Estimator, Problem, Suite


class CorpusProblem(Problem):
    """The first ``train_sentences`` / ``eval_sentences`` sentences of the fortunes train / test splits."""

    def __init__(self, train_sentences: int = 2000, eval_sentences: int = 200, n_states: int = 100,
                 corpus: Any = None):
        self.train_sentences, self.eval_sentences, self.n_states = train_sentences, eval_sentences, n_states
        self.name = f"fortunes-train{train_sentences}-test{eval_sentences}-N{n_states}"
        self.provenance = "no exact NLL exists: estimates only (importance sampling with q as proposal)"
        self._corpus = corpus
        self._data = None

    @property
    def data(self):
        if self._data is None:
            if self._corpus is not None:
                self._data = self._corpus()
            else:
                from .data import load_corpus

                limits = {"train": self.train_sentences, "dev": 1, "test": self.eval_sentences}
                vocab, data = load_corpus(limits=limits)
                self._data = (len(vocab), data["train"], data["test"])
        return self._data

    def exact(self) -> dict[str, Any]:
        return {"test_nll": None, "test_nll_se": None, "inactive_states": None}

    def size(self) -> dict[str, int]:
        return {"N": self.n_states, "train": self.train_sentences, "test": self.eval_sentences}


class VAEEstimator(Estimator):
    """Train a :class:`experiments.rdp_vae.model.StructuredVAE` with one variant for ``budget`` steps; report the test NLL."""

    budget_label = "training steps"

    def __init__(self, kind: str, budget_fraction: float = 0.2, k1_share: float = 0.5, *, n_samples: int = 20,
                 batch_size: int = 32, sizes: dict | None = None):
        from experiments.rdp_vae.model import Variant

        Variant.from_fractions(kind, 10, budget_fraction, k1_share)  # validates the arguments
        self.kind, self.budget_fraction, self.k1_share = kind, budget_fraction, k1_share
        self.n_samples, self.batch_size, self.sizes = n_samples, batch_size, sizes or {}
        self.name = kind.upper() if kind != "rdp" else f"RDP {round(100 * k1_share)}/{round(100 * (1 - k1_share))}"

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        import torch

        from experiments.rdp_vae.model import (
            StructuredVAE,
            TrainConfig,
            Variant,
            aggregated_posterior,
            evaluate_nll,
            train_vae,
        )

        vocab_size, train, test = problem.data
        variant = Variant.from_fractions(self.kind, problem.n_states, self.budget_fraction, self.k1_share)
        torch.manual_seed(seed % 2**31)
        model = StructuredVAE(vocab_size, problem.n_states, **self.sizes)
        train_vae(model, train, variant, TrainConfig(steps=budget, batch_size=self.batch_size, seed=seed % 2**31),
                  progress=False)
        result = evaluate_nll(model, test, n_samples=self.n_samples, seed=seed % 2**31)
        counts = aggregated_posterior(model, train, seed=seed % 2**31)
        return {"test_nll": result["nll"], "test_nll_se": result["se"], "inactive_states": int((counts == 0).sum())}


def vae_suite(n_states: int = 100, train_sentences: int = 2000, eval_sentences: int = 200,
              steps: tuple[int, ...] = (100, 400), replicates: int = 3) -> Suite:
    """FULL, TOPK (K = 20% of N) and RDP (K1 = K2 = 10% of N) trained for ``steps`` AdamW steps."""
    problem = CorpusProblem(train_sentences, eval_sentences, n_states)
    estimators = [VAEEstimator("full"), VAEEstimator("topk"), VAEEstimator("rdp")]
    return Suite([problem], estimators, list(steps), replicates=replicates,
                 description=f"structured VAE (RDP paper Table 5 analogue) at N = {n_states} on fortunes")

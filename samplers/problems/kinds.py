"""Problem kinds: the one vocabulary in which every family's problems are stated.

Every problem handed to the harness by mcsa's suites is an instance of a :class:`KindProblem`
subclass whose ``kind`` is registered in :data:`KINDS` (name -> targets its exact method gives).
Estimators declare the kinds and targets they handle (:class:`samplers.harness.KindEstimator`), so
one problem can be handed to every family's estimators at once.

=======================  ===========================================  ==========================================
kind                     exact targets                                method (class)
=======================  ===========================================  ==========================================
``"chain-crf"``          ``log_partition``, ``marginals`` (T, N),     forward-backward (:class:`ChainCRFProblem`)
                         ``entropy``
``"pairwise-mrf"``       ``log_partition``, ``marginals``             enumeration or junction tree
                                                                      (:class:`PairwiseMRFProblem`)
``"pcfg"``               ``log_probability``, ``span_posteriors``,    inside-outside (:class:`PCFGProblem`)
                         ``rule_counts``, ``counts``
``"itg-pair"``           ``counts``                                   bitext inside-outside
                                                                      (:mod:`samplers.pruning.problems`)
``"synthetic-chain"``    ``log_partition``, ``entropy``               exact forward in torch (:mod:`rdp.problems`)
``"tree-crf"``           ``log_partition``                            exact inside in torch (:mod:`rdp.problems`)
``"finite-chain"``       ``pi_base``, ``pi_doeblin``                  GTH elimination (:mod:`doeblin.problems`)
``"trf"``                ``zeta`` (per-length log Z_j - log Z_1)      forward pass (:class:`trf.estimators.TRFProblem`)
=======================  ===========================================  ==========================================

A chain CRF is also a pairwise MRF (:meth:`ChainCRFProblem.mrf`), so estimators that only need
``problem.mrf`` apply to it as well.  The kinds whose models live in a family (torch chains and
trees, Doeblin chains, TRFs) are implemented there and only named here; a new kind is added with
:func:`register_kind`.
"""

from __future__ import annotations

from abc import abstractmethod
from functools import cached_property
from typing import Any, Sequence

import numpy as np

from ..harness import Problem
from ..models import Grammar, PairwiseMRF, expected_counts
from .chain_crf import ChainCRF

CHAIN_CRF, PAIRWISE_MRF, PCFG, ITG_PAIR = "chain-crf", "pairwise-mrf", "pcfg", "itg-pair"
SYNTHETIC_CHAIN, TREE_CRF, FINITE_CHAIN, TRF = "synthetic-chain", "tree-crf", "finite-chain", "trf"

#: Registered kinds: name -> the targets a problem of that kind can give exactly.
KINDS: dict[str, tuple[str, ...]] = {
    CHAIN_CRF: ("log_partition", "marginals", "entropy"),
    PAIRWISE_MRF: ("log_partition", "marginals"),
    PCFG: ("log_probability", "span_posteriors", "rule_counts", "counts"),
    ITG_PAIR: ("counts",),
    SYNTHETIC_CHAIN: ("log_partition", "entropy"),
    TREE_CRF: ("log_partition",),
    FINITE_CHAIN: ("pi_base", "pi_doeblin"),
    TRF: ("zeta",),
}


def register_kind(name: str, targets: Sequence[str]) -> None:
    """Add a problem kind (a plug-in's model) with the targets its exact method gives.

    Registering a known name again with the same targets is a no-op; other targets raise ``ValueError``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    targets = tuple(str(t) for t in targets)
    if not targets:
        raise ValueError("targets must not be empty")
    if name in KINDS and KINDS[name] != targets:
        raise ValueError(f"kind {name!r} is already registered with targets {KINDS[name]}")
    KINDS[name] = targets


class KindProblem(Problem):
    """A problem of a registered kind (:data:`KINDS`).

    Subclasses set ``kind`` and implement :meth:`compute_exact`.  :attr:`targets` are the targets
    this problem asks for: by default every exact target of its kind, or the subset passed as
    ``targets`` by the subclass's constructor; ``measured`` adds targets with no reference (the
    estimators report them and the summary gives their mean with an interval).
    """

    kind: str = ""
    targets: tuple = ()
    measured: tuple = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind and cls.kind not in KINDS:
            raise ValueError(f"{cls.__name__}.kind {cls.kind!r} is not a registered kind; call register_kind first")

    def _choose_targets(self, targets: Sequence[str] | None, measured: Sequence[str] = ()) -> None:
        """Validate and set :attr:`targets` (None: all of the kind's) and :attr:`measured`."""
        allowed = KINDS[self.kind]
        if targets is not None:
            targets = tuple(targets)
            bad = [t for t in targets if t not in allowed]
            if bad or not targets:
                raise ValueError(f"targets must be a non-empty subset of {allowed} for kind {self.kind!r}, "
                                 f"got {targets}")
            self.targets = targets
        else:
            self.targets = tuple(t for t in allowed if t in type(self).targets) or allowed
        measured = tuple(measured)
        clash = [t for t in measured if t in allowed]
        if clash:
            raise ValueError(f"measured targets {clash} have exact values for kind {self.kind!r}")
        self.measured = measured

    @abstractmethod
    def compute_exact(self) -> dict[str, Any]:
        """The exact targets, computed from scratch (the exact method; :meth:`exact` caches it)."""

    def exact_evaluations(self) -> int:
        """Machine-independent cost of :meth:`compute_exact` (table or chart entries); 0 if not stated."""
        return 0

    @cached_property
    def _exact_cached(self) -> dict[str, Any]:
        out = self.compute_exact()
        return {t: out[t] for t in self.targets}

    def exact(self) -> dict[str, Any]:
        """The exact targets (computed once, then cached), plus ``None`` for each measured target."""
        return {**self._exact_cached, **{t: None for t in self.measured}}


class ChainCRFProblem(KindProblem):
    """A linear-chain CRF; exact ``log_partition``, ``marginals`` (T, N) and ``entropy``.

    Parameters
    ----------
    name : str
        Name used in result tables.
    crf : ChainCRF
        The model.
    """

    kind = CHAIN_CRF

    def __init__(self, name: str, crf: ChainCRF):
        if not isinstance(crf, ChainCRF):
            raise TypeError(f"crf must be a ChainCRF, got {type(crf).__name__}")
        self.name = name
        self.crf = crf
        self._choose_targets(None)
        self.provenance = "exact forward-backward in float64 (samplers.problems.ChainCRF)"

    @cached_property
    def mrf(self) -> PairwiseMRF:
        """The same distribution as a chain-shaped :class:`PairwiseMRF` (:meth:`ChainCRF.to_mrf`)."""
        return self.crf.to_mrf()

    def compute_exact(self) -> dict[str, Any]:
        """Exact ``log_partition``, ``marginals`` and ``entropy`` by the forward-backward algorithm."""
        crf = ChainCRF(self.crf.emissions, self.crf.transitions)  # a fresh model: no cached answers
        return {"log_partition": crf.log_partition(), "marginals": crf.marginals(), "entropy": crf.entropy()}

    def exact_evaluations(self) -> int:
        """Transition entries of one forward pass: ``T N^2``."""
        return self.crf.length * self.crf.n_states ** 2

    def size(self) -> dict[str, int]:
        """Sizes: ``T`` (sequence length) and ``N`` (states per position)."""
        return {"T": self.crf.length, "N": self.crf.n_states}


class PairwiseMRFProblem(KindProblem):
    """A pairwise MRF; exact ``log_partition`` and ``marginals`` by enumeration or the junction tree.

    Parameters
    ----------
    name : str
        Name used in result tables.
    mrf : PairwiseMRF
        The model.
    targets : sequence of str, optional
        A subset of ``("log_partition", "marginals")`` (default both).
    measured : sequence of str
        Targets with no reference that estimators report (e.g. AIS's ``log_partition_stderr``, ``ess``).
    """

    kind = PAIRWISE_MRF

    def __init__(self, name: str, mrf: PairwiseMRF, *, targets: Sequence[str] | None = None,
                 measured: Sequence[str] = ()):
        if not isinstance(mrf, PairwiseMRF):
            raise TypeError(f"mrf must be a PairwiseMRF, got {type(mrf).__name__}")
        self.name = name
        self.mrf = mrf
        self._choose_targets(targets, measured)
        method = mrf.exact_method()
        self.provenance = (f"enumeration of all {mrf.n_configurations} joint states" if method == "enumeration" else
                           f"variable elimination (junction tree, {mrf.elimination_plan.heuristic} order, width "
                           f"{mrf.elimination_plan.width}) in log space") + \
            " (PairwiseMRF.log_partition_exact / marginals_exact)"

    def compute_exact(self) -> dict[str, Any]:
        """Exact ``log_partition`` and ``marginals``, by enumeration or the junction tree."""
        return {"log_partition": self.mrf.log_partition_exact(), "marginals": self.mrf.marginals_exact()}

    def exact_evaluations(self) -> int:
        """Joint states enumerated, or the junction tree's table entries."""
        if self.mrf.exact_method() == "enumeration":
            return int(self.mrf.n_configurations)
        return int(self.mrf.elimination_plan.total_table_entries)

    def size(self) -> dict[str, int]:
        """Sizes: variables, largest cardinality, edges, elimination width and joint configurations."""
        return {"n_vars": self.mrf.n_vars, "max_states": self.mrf.max_states, "n_edges": self.mrf.n_edges,
                "width": self.mrf.elimination_plan.width, "n_configurations": int(self.mrf.n_configurations)}


def span_vector(span_posteriors: np.ndarray) -> np.ndarray:
    """The ambiguous spans' posteriors (fenceposts ``i < k - 1``, upper triangle, row-major) as a vector."""
    post = np.asarray(span_posteriors)
    return post[np.triu_indices(post.shape[0], k=2)]


def chart_rule_entries(length: int, n_rules: int) -> int:
    """Binary-rule applications of a full CNF chart: ``n_rules * sum_w (T - w) w`` (spans x splits)."""
    return int(n_rules) * sum((length - w) * w for w in range(1, length))


def pcfg_targets(e: Any) -> dict[str, Any]:
    """The ``"pcfg"`` targets of one :class:`~samplers.models.chart.Expectations` (exact or masked)."""
    return {"log_probability": e.log_z, "span_posteriors": span_vector(e.span_posteriors),
            "rule_counts": e.binary_counts, "counts": e.vector()}


class PCFGProblem(KindProblem):
    """A CNF PCFG and a sentence.

    Exact targets by inside-outside: ``log_probability`` (log P(sentence)), ``span_posteriors``
    (P(span is a constituent) for spans of >= 2 words, :func:`span_vector` order), ``rule_counts``
    (expected uses of each binary rule, ``grammar.binary_rules`` order) and ``counts`` (span
    posteriors and rule counts in one vector, :meth:`Expectations.vector`: the L2 error of the
    randomized-pruning paper's Fig. 4).

    Parameters
    ----------
    name : str
        Name used in result tables.
    grammar : Grammar
        The PCFG.
    words : str or sequence of str
        The sentence (a string is split on whitespace).
    targets : sequence of str, optional
        Default ``("log_probability", "span_posteriors", "rule_counts")``; the pruning suites ask
        for ``("counts",)``.
    """

    kind = PCFG
    targets = ("log_probability", "span_posteriors", "rule_counts")

    def __init__(self, name: str, grammar: Grammar, words: str | Sequence[str], *,
                 targets: Sequence[str] | None = None):
        if not isinstance(grammar, Grammar):
            raise TypeError(f"grammar must be a Grammar, got {type(grammar).__name__}")
        self.name = name
        self.grammar = grammar
        self.words = words.split() if isinstance(words, str) else list(words)
        grammar.encode(self.words)  # validates the sentence
        self._choose_targets(targets)
        self.provenance = "exact inside-outside (samplers.pruning.expected_counts, all-keep mask)"

    def compute_exact(self) -> dict[str, Any]:
        """Exact ``log_probability``, ``span_posteriors``, ``rule_counts`` and ``counts`` by inside-outside."""
        return pcfg_targets(expected_counts(self.grammar, self.words))

    def exact_evaluations(self) -> int:
        """Binary-rule applications of the inside and outside passes."""
        return 2 * chart_rule_entries(len(self.words), self.grammar.n_binary)

    def size(self) -> dict[str, int]:
        """Sizes: ``T`` (words), ``NT`` (nonterminals) and ``rules`` (binary rules)."""
        return {"T": len(self.words), "NT": self.grammar.n_nonterminals, "rules": self.grammar.n_binary}

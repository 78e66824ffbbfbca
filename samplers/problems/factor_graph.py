"""The ``"factor-graph"`` problem kind: a :class:`~samplers.models.FactorGraph` with evidence, whose
reference answers come from mcsa's exact method or from a published answer with its provenance.

Targets: ``log_partition`` (``ln`` of the unnormalised probability of the evidence, the UAI PR
task's ``Z``) and ``marginals`` ``(n_vars, max_states)`` (zero-padded; observed variables are point
masses, as in the UAI ``.MAR`` files).

:meth:`FactorGraphProblem.exact` returns the published reference where one was given (an
:class:`~samplers.harness.Exact` whose standard error is half a unit of the last printed digit and
whose provenance names the file), else mcsa's exact method (variable elimination / junction tree);
:meth:`FactorGraphProblem.compute_exact` is always mcsa's own method (what the ``exact`` estimator
times), so the constructor never fails because that method refuses an instance too wide for it.

>>> import numpy as np
>>> from samplers.models import FactorGraph
>>> fg = FactorGraph([2, 2], [(0, 1)], [np.log([[1.0, 2.0], [3.0, 4.0]])])
>>> p = FactorGraphProblem("tiny", fg, evidence={1: 0})
>>> round(float(np.exp(p.exact()["log_partition"])), 9)  # 1 + 3
4.0
"""

from __future__ import annotations

import math
import os
import re
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..harness import Exact
from ..models import FactorGraph, PairwiseMRF
from ..models.uai import _answer_tokens, parse_mar, parse_pr, read_evid, read_text, read_uai
from .kinds import KindProblem, register_kind

FACTOR_GRAPH = "factor-graph"
register_kind(FACTOR_GRAPH, ("log_partition", "marginals"))

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def printed_half_unit(text: str) -> float:
    """Half a unit of the last printed digit of the number in ``text`` (``1.25e-3`` -> ``5e-6``)."""
    m = _NUMBER.search(text)
    if m is None:
        return 0.0
    tok = m.group(0)
    mant, _, exp = tok.lower().partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return 0.5 * 10.0 ** (-decimals + (int(exp) if exp else 0))


def printed_half_units_mar(text: str, source: str, shape: tuple[int, int]) -> np.ndarray:
    """Rounding of every probability of a ``.MAR`` text (already checked by :func:`~samplers.models.uai.parse_mar`),
    zero-padded to ``shape`` = (variables, largest cardinality).

    The files print ``%g``-style: a fixed number ``S`` of significant digits with trailing zeros dropped
    (``0.5`` stands for ``0.500000``), so ``S`` is the most significant digits any entry shows and an entry
    ``x > 0`` is good to half a unit of its ``S``-th digit, ``0.5 * 10^(floor(log10 x) - S + 1)``; a printed
    ``0`` is exact.
    """
    tk = _answer_tokens(text, source, "MAR")
    tokens = tk.tok[tk.pos:]
    entries: list[tuple[int, int, float]] = []
    digits = 1
    pos = 1
    for v in range(int(float(tokens[0]))):
        k = int(float(tokens[pos]))
        for j, tok in enumerate(tokens[pos + 1:pos + 1 + k]):
            mantissa = tok.lower().partition("e")[0].replace(".", "").lstrip("+-0")
            digits = max(digits, len(mantissa))
            entries.append((v, j, float(tok)))
        pos += 1 + k
    out = np.zeros(shape)
    for v, j, x in entries:
        if x > 0:
            out[v, j] = 0.5 * 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return out


class FactorGraphProblem(KindProblem):
    """A factor graph with evidence (kind ``"factor-graph"``).

    Parameters
    ----------
    name : str
        Name used in result tables.
    graph : FactorGraph
        The model.
    evidence : dict, optional
        ``{variable: observed state}``.
    reference : dict, optional
        Published answers ``{target: Exact(value, stderr, provenance)}`` (or plain values), used by
        :meth:`exact` instead of mcsa's exact method.
    targets : sequence of str, optional
        A subset of ``("log_partition", "marginals")`` (default both).
    memory_cap : int, optional
        Bytes mcsa's exact method may use (default: a quarter of the machine's memory).
    """

    kind = FACTOR_GRAPH

    def __init__(self, name: str, graph: FactorGraph, *, evidence: Mapping[int, int] | None = None,
                 reference: Mapping[str, Any] | None = None, targets: Sequence[str] | None = None,
                 memory_cap: int | None = None):
        if not isinstance(graph, FactorGraph):
            raise TypeError(f"graph must be a FactorGraph, got {type(graph).__name__}")
        self.name = name
        self.graph = graph
        self.conditioned = graph.condition(dict(evidence or {}))
        self.memory_cap = memory_cap
        self._choose_targets(targets)
        self.reference = dict(reference or {})
        bad = [t for t in self.reference if t not in self.targets and t not in ("log_partition", "marginals")]
        if bad:
            raise ValueError(f"reference names unknown targets {bad}; the kind's targets are log_partition, marginals")
        plan = self.conditioned.graph.elimination_plan
        own = f"mcsa variable elimination ({plan.heuristic} order, width {plan.width})"
        self.provenance = "; ".join(
            [f"{t}: {self._ref(t).provenance}" for t in self.targets if t in self.reference]
            + [f"{t}: {own}" for t in self.targets if t not in self.reference])

    def _ref(self, target: str) -> Exact:
        raw = self.reference[target]
        return raw if isinstance(raw, Exact) else Exact(raw, 0.0, "given reference")

    @property
    def model(self) -> FactorGraph:
        """The graph the estimators sample: over the unobserved variables (evidence conditioned in)."""
        return self.conditioned.graph

    def expand(self, marginals: np.ndarray) -> np.ndarray:
        """Marginals of :attr:`model` as the ``(n_vars, max_states)`` marginals of the full graph."""
        return self.conditioned.expand_marginals(marginals, self.graph.max_states)

    @cached_property
    def mrf(self) -> PairwiseMRF:
        """The conditioned model as a :class:`PairwiseMRF` (exact; only where every factor has arity <= 2
        and no zero entries -- ``ValueError`` otherwise, see :meth:`FactorGraph.to_pairwise`).  Its
        ``log Z`` misses :attr:`pairwise_log_constant`."""
        return self.model.to_pairwise()[0]

    @property
    def pairwise_log_constant(self) -> float:
        """The constant factors' log, to add to :attr:`mrf`'s ``log Z``."""
        return self.model.log_constant

    @cached_property
    def is_pairwise(self) -> bool:
        """Whether :attr:`mrf` exists (arity <= 2, no zeros)."""
        return self.model.max_arity <= 2 and not np.any(np.isneginf(self.model.bundle.log_values))

    def compute_exact(self) -> dict[str, Any]:
        """mcsa's exact answers (log Z alone when marginals are not asked for); ``MemoryError`` when too wide."""
        model = self.model
        if "marginals" not in self.targets:
            return {"log_partition": model.log_partition_exact(memory_cap=self.memory_cap)}
        log_z, marg = model.solve(memory_cap=self.memory_cap)
        return {"log_partition": log_z, "marginals": self.expand(marg)}

    @cached_property
    def _exact_cached(self) -> dict[str, Any]:
        out = {t: self._ref(t) for t in self.targets if t in self.reference}
        if len(out) < len(self.targets):
            own = self.compute_exact()
            out.update({t: own[t] for t in self.targets if t not in out})
        return out

    def exact_evaluations(self) -> int:
        """Table entries of the elimination."""
        return int(self.model.elimination_plan.total_table_entries)

    def size(self) -> dict[str, int]:
        """Variables, observed variables, factors, largest arity and domain, and induced width of the order."""
        m = self.model
        return {"n_vars": self.graph.n_vars, "observed": len(self.conditioned.evidence), "n_factors": m.n_factors,
                "max_arity": m.max_arity, "max_states": m.max_states, "width": m.elimination_plan.width}

    @classmethod
    def from_uai(cls, path: str | os.PathLike, *, targets: Sequence[str] | None = None,
                 memory_cap: int | None = None) -> "FactorGraphProblem":
        """An instance from ``PATH`` (``.uai``) with ``PATH.evid`` (first evidence sample), and the
        published ``PATH.PR`` / ``PATH.MAR`` answers as references when present.

        ``targets`` defaults to the targets with a published answer (both when there is none)."""
        path = Path(path)
        graph = read_uai(path)
        evid_path = Path(f"{path}.evid")
        evidence = read_evid(evid_path)[0] if evid_path.is_file() else {}
        reference: dict[str, Exact] = {}
        pr, mar = Path(f"{path}.PR"), Path(f"{path}.MAR")
        if pr.is_file():
            text = read_text(pr, "UAI .PR answer file")
            half = printed_half_unit(text.split("PR", 1)[-1])
            reference["log_partition"] = Exact(parse_pr(text, os.fspath(pr)), half * math.log(10),
                                               f"published {pr.name} (log10 Z printed to +-{half:.1g})")
        if mar.is_file():
            text = read_text(mar, "UAI .MAR answer file")
            values = parse_mar(text, os.fspath(mar))
            if len(values) != graph.n_vars or any(v.size != k for v, k in zip(values, graph.cards)):
                raise ValueError(f"{mar}: the marginals do not match the model's {graph.n_vars} variables")
            table = np.zeros((graph.n_vars, graph.max_states))
            for v, p in enumerate(values):
                table[v, :p.size] = p
            halves = printed_half_units_mar(text, os.fspath(mar), table.shape)
            reference["marginals"] = Exact(table, halves, f"published {mar.name} (probabilities printed to "
                                                          f"+-{halves.max():.1g} or better)")
        if targets is None and reference:
            targets = tuple(t for t in ("log_partition", "marginals") if t in reference)
        return cls(path.name.removesuffix(".uai"), graph, evidence=evidence, reference=reference, targets=targets,
                   memory_cap=memory_cap)

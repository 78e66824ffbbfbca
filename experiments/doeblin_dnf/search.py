"""Experiment 2 of Steinhardt & Liang (2015): DNF formula inference by (staged) MCMC search.

Formulas ``f(x) = OR_{i<=n} AND_{j<=m} [a_ij . x <= b_ij]`` with ``a_ij in {-1,0,1}^d``,
``b_ij in {-1,0,1}`` (n = m = 3 as in the paper).  Metropolis-Hastings on ``exp(-beta * cost)`` with
proposals that change one entry of ``[a_ij b_ij]`` or the whole atom; cost = number of misclassified
examples, or the simplified per-disjunct cost.  Three chains, all run by the staged-chain kernel of
:mod:`doeblin.core` (see :func:`experiments.doeblin_dnf._kernels.stage_chain`): 0-stage (no restarts),
1-stage (uniform restarts w.p. ``eps_restart`` per step: a strong Doeblin chain), 2-stage (restart,
Geometric(``eps_simplified``) steps on the simplified cost, then the full cost until a restart: a
staged Doeblin chain as in Fig. 2(b)).

Targets: planted random formulas and loop invariants turned into input/output examples (inputs
drawn uniformly from an integer box, labelled by the invariant; the paper used program states from
the verifier, which we do not have):

* ``tacas06``: ``x - y == i - j`` over (x, y, i, j) — two atoms of one disjunct;
* ``nested``: ``k >= 1`` over (k, l, n);
* ``paper-example``: ``[x1 != 0] or [x2 == x3]`` (the example of Sec. 5) — three disjuncts.

Table 1's setting, verifying loop programs with this search inside a counterexample-guided loop, is
:mod:`experiments.doeblin_dnf.verify`; the survey of time to solution over many planted formulas (survival
curves, reruns of trapped trials with a larger cap) is :mod:`experiments.doeblin_dnf.survey`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from samplers.rng import as_generator, kernel_seeds
from samplers.validation import as_int_array, check_float, check_int

from ._kernels import DNFData, dnf_search, formula_state, stage_chain

N_STAGES = (0, 1, 2)


@dataclass
class DNFTask:
    """Examples for DNF inference: integer inputs ``X`` (N, d) and boolean ``labels`` (N,)."""

    name: str
    X: np.ndarray
    labels: np.ndarray
    description: str = ""


def evaluate_formula(a, b, X) -> np.ndarray:
    """``f(X)`` for a formula ``a`` (n, m, d), ``b`` (n, m)."""
    a = as_int_array(a, "a", ndim=3)
    b = as_int_array(b, "b", ndim=2)
    X = as_int_array(X, "X", ndim=2)
    if b.shape != a.shape[:2] or X.shape[1] != a.shape[2]:
        raise ValueError(f"shapes disagree: a {a.shape}, b {b.shape}, X {X.shape}")
    atoms = np.einsum("ijk,rk->ijr", a, X) <= b[:, :, None]
    return atoms.all(axis=1).any(axis=0)


def _task_from_predicate(name: str, predicate: Callable[[np.ndarray], np.ndarray], d: int, n_examples: int,
                         box: int, seed, description: str) -> DNFTask:
    """Half positive, half negative examples drawn uniformly from ``[-box, box]^d`` by rejection."""
    gen = as_generator(seed)
    pos, neg = [], []
    while len(pos) < n_examples // 2 or len(neg) < n_examples - n_examples // 2:
        X = gen.integers(-box, box + 1, size=(4 * n_examples, d))
        y = np.asarray(predicate(X), dtype=bool)
        pos.extend(X[y]); neg.extend(X[~y])
    X = np.array(pos[:n_examples // 2] + neg[:n_examples - n_examples // 2], dtype=np.int64)
    labels = np.arange(n_examples) < n_examples // 2
    return DNFTask(name, X, labels, description)


def loop_invariant_tasks(n_examples: int = 60, box: int = 4, d: int = 5, seed=0) -> list[DNFTask]:
    """The loop-benchmark invariants (see module docstring) as balanced labelled integer inputs in
    ``d`` variables (the invariant's variables first, the rest irrelevant, as the paper's d = 5)."""
    gen = as_generator(seed)
    d = check_int(d, "d", low=4)
    return [
        _task_from_predicate("nested", lambda X: X[:, 0] >= 1, d, n_examples, box, gen, "k >= 1"),
        _task_from_predicate("tacas06", lambda X: X[:, 0] - X[:, 1] == X[:, 2] - X[:, 3], d, n_examples, box, gen,
                             "x - y == i - j"),
        _task_from_predicate("paper-example", lambda X: (X[:, 0] != 0) | (X[:, 1] == X[:, 2]), d, n_examples, box,
                             gen, "[x1 != 0] or [x2 == x3]"),
    ]


def planted_task(d: int = 3, n: int = 2, m: int = 2, n_examples: int = 40, box: int = 3, seed=0) -> DNFTask:
    """A random planted formula (n disjuncts of m atoms, entries uniform in {-1, 0, 1}); redrawn until
    between 25% and 75% of the examples are positive."""
    gen = as_generator(seed)
    for _ in range(1000):
        a = gen.integers(-1, 2, size=(n, m, d))
        b = gen.integers(-1, 2, size=(n, m))
        X = gen.integers(-box, box + 1, size=(n_examples, d))
        labels = evaluate_formula(a, b, X)
        if 0.25 <= labels.mean() <= 0.75:
            return DNFTask(f"planted-d{d}-n{n}m{m}", X, labels, f"random planted formula, {n} x {m} atoms, d = {d}")
    raise RuntimeError("could not draw a balanced planted formula")   # pragma: no cover


def capped_steps(steps, max_steps: int) -> np.ndarray:
    """Steps per trial as floats, unfinished trials (-1) counted at ``max_steps`` (so any mean of them
    is a lower bound on the mean time to a consistent formula)."""
    steps = np.asarray(steps)
    return np.where(steps >= 0, steps, max_steps).astype(float)


@dataclass
class SearchResult:
    """Per-trial steps to a consistent formula (-1 = not found within ``max_steps``) and seconds;
    ``seeds`` are the trials' kernel seeds (rerunning a seed with a larger cap continues the same
    trajectory: the first ``max_steps`` steps are identical)."""

    steps: np.ndarray
    seconds: np.ndarray
    max_steps: int
    seeds: np.ndarray | None = None

    def capped_steps(self) -> np.ndarray:
        """:func:`capped_steps` of these trials."""
        return capped_steps(self.steps, self.max_steps)


def search(task: DNFTask, n_stages: int, *, n: int = 3, m: int = 3, eps_restart: float = 5e-4,
           eps_simplified: float = 0.04, beta: float = 2.0, max_steps: int = 200_000, trials: int = 10,
           seed=None) -> SearchResult:
    """Run ``trials`` independent searches with the 0-, 1- or 2-stage chain (see module docstring).

    Parameters
    ----------
    task : DNFTask
    n_stages : {0, 1, 2}
    n, m : int
        Disjuncts and atoms per disjunct of the searched formulas (3 and 3 as in the paper).
    eps_restart, eps_simplified : float
        Per-step probability of restarting (1- and 2-stage) and of leaving the simplified stage
        (2-stage; the paper's Geometric(0.04)).
    beta : float
        Inverse temperature of the MH target ``exp(-beta * cost)``.
    max_steps : int
        Cap per trial; unfinished trials report -1.
    trials : int
        Number of independent trials; their kernel seeds are ``kernel_seeds(seed, trials)``.
    """
    trials = check_int(trials, "trials", low=1)
    return search_seeds(task, n_stages, kernel_seeds(seed, trials), n=n, m=m, eps_restart=eps_restart,
                        eps_simplified=eps_simplified, beta=beta, max_steps=max_steps)


def search_seeds(task: DNFTask, n_stages: int, seeds, *, n: int = 3, m: int = 3, eps_restart: float = 5e-4,
                 eps_simplified: float = 0.04, beta: float = 2.0, max_steps: int = 200_000) -> SearchResult:
    """:func:`search` with one trial per explicit kernel seed (non-negative ints below 2**31), e.g. to
    rerun trials of an earlier :class:`SearchResult` (its ``seeds``) with a larger ``max_steps``."""
    if n_stages not in N_STAGES:
        raise ValueError(f"n_stages must be one of {N_STAGES}, got {n_stages!r}")
    n, m = check_int(n, "n", low=1), check_int(m, "m", low=1)
    eps_restart = check_float(eps_restart, "eps_restart", low=0.0, high=1.0, low_open=True)
    eps_simplified = check_float(eps_simplified, "eps_simplified", low=0.0, high=1.0, low_open=True)
    beta = check_float(beta, "beta", low=0.0)
    max_steps = check_int(max_steps, "max_steps", low=1)
    seeds = as_int_array(seeds, "seeds", ndim=1, low=0, high=2**31)
    if seeds.size == 0:
        raise ValueError("seeds must hold at least one kernel seed")
    X = np.ascontiguousarray(as_int_array(task.X, "task.X", ndim=2))
    labels = np.ascontiguousarray(np.asarray(task.labels, dtype=np.bool_))
    if labels.shape != (X.shape[0],):
        raise ValueError(f"task.labels must have shape ({X.shape[0]},), got {labels.shape}")
    kinds, cdf_C, first = stage_chain(n_stages, eps_restart, eps_simplified)
    data = DNFData(X, labels.astype(np.int8), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                   np.array([beta, 1.0 / n]), kinds)
    steps = np.empty(seeds.size, dtype=np.int64)
    seconds = np.empty(seeds.size)
    for t, s in enumerate(seeds):
        a = np.empty((n, m, X.shape[1]), dtype=np.int64)
        b = np.empty((n, m), dtype=np.int64)
        start = time.perf_counter()
        steps[t], _ = dnf_search(data, cdf_C, first, formula_state(a, b, X.shape[0]), max_steps, int(s))
        seconds[t] = time.perf_counter() - start
        if steps[t] >= 0 and not np.array_equal(evaluate_formula(a, b, X), labels):
            raise AssertionError("dnf_search returned an inconsistent formula")   # pragma: no cover
    return SearchResult(steps, seconds, max_steps, seeds)

"""Experiment 2 of Steinhardt & Liang (2015) as in Table 1: verifying loop programs by inferring DNF
invariants with the 0-, 1- and 2-stage chains inside a counterexample-guided (CEGAR) loop.

Table 1 of the paper reports the time to *verify a C program*, where "each verification requires
inferring many DNF formulae as a sub-routine" (Sec. 5), in the style of Sharma & Aiken (2014): guess
an invariant from the current examples by MCMC, check it, add counterexamples, repeat.  We have no C
front end or SMT solver, so a program here is a single loop over integer states in a bounded box
``[lo, hi]^d`` whose semantics are given by vectorised Python functions, and the checker enumerates
the box (a bounded verification: body successors that leave the box are ignored).

:func:`state_space` computes, for every state of the box, whether it is initial, whether the loop may
exit there violating the assertion ("violating"), its body successors, and the derived sets of
**good** states (reachable loop-head states) and **bad** states (loop-head states from which some run
inside the box reaches a violating exit).  The program is **safe in the box** iff no good state is bad.

:func:`verify` runs the CEGAR loop: start from a uniform formula and a few positive and negative
examples, run the chosen chain (``experiments.doeblin_dnf._kernels.dnf_chain``) until the formula satisfies every
constraint collected so far, check it, add up to ``batch`` of the checker's counterexamples (drawn
uniformly), and repeat until the check passes.  Two checks:

* ``check="inductive"`` (default; what a verifier proves): ``f`` holds on every initial state, ``f``
  implies the assertion wherever the loop may exit, and ``f`` is closed under the body (``f(s)`` implies
  ``f(t)`` for every in-box successor ``t`` of ``s``).  Counterexamples are a positive example (an
  initial state outside ``f``), a negative example (a violating exit inside ``f``) or an implication pair
  ``(s, t)``, kept as a constraint "``f(s)`` implies ``f(t)``" (ICE learning, Garg et al. 2014) whose
  violation costs 1 like a misclassified example.  Every inductive invariant satisfies all of them, so
  the constraints stay satisfiable and each round adds one the current formula violates.
* ``check="separating"``: ``f`` is true on all good and false on all bad states (positive / negative
  counterexamples only).

The chain's state (formula and stage) persists across rounds, so a chain without restarts starts every
round where the previous one stopped.  The 0/1/2-stage chains are those of :mod:`experiments.doeblin_dnf.search`; all
chains use the same ``beta``, ``eps_restart``, ``eps_simplified``, examples and caps.

Programs (:func:`loop_programs`; ``nondet()`` is a nondeterministic choice, a ``while (nondet())``
loop may exit or continue at every head state):

* ``fig1`` -- ``x = 0; y = 0; while (nondet()) { x++; y++; } assert(x == y);``
  invariant ``x == y`` (one disjunct, two atoms).  Our own simplest program: the paper does not print
  its ``fig1``.
* ``nested`` -- a flattened double loop ``k = 1; for (i = 0; i < n; i++) for (j = 0; j < i; j++)
  k += j; assert(k >= 1);`` written as ``i = 0; j = 0; k = 1; while (i < n) { if (j < i) { k += j;
  j++; } else { i++; j = 0; } }``; invariant e.g. ``k >= 1 && j >= 0`` (the paper's ``nested``
  benchmark needs ``k >= 1``; ``j >= 0`` is needed too because a head state with ``j < 0`` can
  decrease ``k``).
* ``tacas06`` -- ``x = i; y = j; while (x != 0) { x--; y--; } assert(i != j || y == 0);`` over
  ``(x, y, i, j)``; invariant e.g. ``x - y == i - j`` (the paper's) or ``i != j || x == y``.
* ``cegar2`` -- Sharma & Aiken's ``x = 0; m = 0; while (x < N) { if (nondet()) m = x; x++; }
  assert(N <= 0 || (0 <= m && m < N));`` over ``(x, m, N)``; invariant e.g. ``(x == 0 && m == 0) ||
  (0 <= m && m < x && x <= N)`` (two disjuncts).
* ``hard`` -- ``x1 = 0; x2 = x3 = nondet(); while (nondet()) { x1 = x1 > 0 ? x1 + 1 : x1 < 0 ? x1 - 1
  : nondet(-1, 1); x2 = nondet(); } assert(x1 != 0 || x2 == x3);`` whose invariant is the paper's
  Sec. 5 example ``[x1 != 0] or [x2 == x3]``, i.e. ``x1 >= 1 || x1 <= -1 || (x2 <= x3 && x3 <= x2)``.
  It needs three disjuncts: every state with ``x1 != 0`` and any ``x2, x3`` in the box is good, so a
  convex disjunct cannot hold both ``x1 > 0`` and ``x1 < 0`` states with ``x2 != x3`` (their midpoint
  ``x1 = 0`` is bad), and an atom with coefficients and bound in ``{-1, 0, 1}`` that holds on all
  good ``x1 = 1`` states cannot involve ``x2`` or ``x3``, so the ``x1 = 0, x2 == x3`` states need a
  third disjunct (for a box with ``hi >= 3``; ``hi = 2`` admits ``-x1 + x2 <= 1``-style atoms).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from samplers.rng import as_generator, kernel_seed
from samplers.validation import as_int_array, check_float, check_int

from ._kernels import DNFData, dnf_chain, formula_state, stage_chain
from .search import N_STAGES, evaluate_formula

StateMap = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class LoopProgram:
    """A loop ``init; while (guard) body; assert(post)`` over integer states in ``[lo, hi]^d``.

    Every callable takes an int64 array of states ``X`` (N, d) and is vectorised over rows.

    Parameters
    ----------
    name : str
    variables : tuple of str
        Names of the ``d`` state variables, in column order.
    lo, hi : int
        The box ``[lo, hi]^d`` of states that the checker enumerates.
    init : callable
        ``init(X) -> bool (N,)``: initial loop-head states.
    may_continue, may_exit : callable
        ``-> bool (N,)``: head states where the loop may run the body / may exit (``guard`` and
        ``not guard`` for a deterministic guard, both true for ``while (nondet())``).
    body : callable
        ``body(X) -> int (C, N, d)``: the successors of each state under each of the ``C``
        nondeterministic choices of the body.
    post : callable
        ``post(X) -> bool (N,)``: the assertion checked when the loop exits.
    invariant : callable
        ``invariant(X) -> bool (N,)``: a known invariant (documentation and tests; not used by the
        search).
    description : str
    """

    name: str
    variables: tuple[str, ...]
    lo: int
    hi: int
    init: StateMap
    may_continue: StateMap
    may_exit: StateMap
    body: StateMap
    post: StateMap
    invariant: StateMap
    description: str = ""

    @property
    def d(self) -> int:
        return len(self.variables)


@dataclass
class StateSpace:
    """The box's states ``X`` (S, d); masks (S,) of ``good`` (reachable), ``bad`` (can reach a
    violation), ``init`` and ``violating`` (may exit violating the assertion) states; ``succ`` (C, S):
    the row of each body successor of each state (-1 outside the box or where the loop cannot
    continue)."""

    X: np.ndarray
    good: np.ndarray
    bad: np.ndarray
    init: np.ndarray
    violating: np.ndarray
    succ: np.ndarray

    @property
    def safe(self) -> bool:
        """No reachable loop-head state can lead to an assertion violation inside the box."""
        return not bool(np.any(self.good & self.bad))


def box_states(d: int, lo: int, hi: int) -> np.ndarray:
    """All integer states of ``[lo, hi]^d`` (int64, ``(hi - lo + 1)^d`` rows, last column fastest)."""
    d = check_int(d, "d", low=1)
    lo, hi = check_int(lo, "lo"), check_int(hi, "hi")
    if hi < lo:
        raise ValueError(f"hi must be >= lo, got lo={lo}, hi={hi}")
    axes = np.meshgrid(*[np.arange(lo, hi + 1)] * d, indexing="ij")
    return np.stack([ax.ravel() for ax in axes], axis=1).astype(np.int64)


def _state_index(Y: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Row index in :func:`box_states` of each state in ``Y`` (..., d); -1 outside the box."""
    width = hi - lo + 1
    inside = np.all((Y >= lo) & (Y <= hi), axis=-1)
    idx = np.zeros(Y.shape[:-1], dtype=np.int64)
    for k in range(Y.shape[-1]):
        idx = idx * width + (Y[..., k] - lo)
    return np.where(inside, idx, -1)


def state_space(program: LoopProgram) -> StateSpace:
    """Good (reachable) and bad (can reach a violation) loop-head states of ``program`` in its box.

    Good states are the forward closure of ``init`` under the body from ``may_continue`` states;
    bad states are the backward closure of ``may_exit & ~post`` (a state is bad if it may exit
    violating ``post`` or may continue to a bad successor).  Successors outside the box are dropped
    (so runs that leave the box are neither good nor bad beyond that point).
    """
    if not isinstance(program, LoopProgram):
        raise TypeError(f"program must be a LoopProgram, got {type(program).__name__}")
    X = box_states(program.d, program.lo, program.hi)
    cont = np.asarray(program.may_continue(X), dtype=bool)
    succ = _state_index(np.asarray(program.body(X), dtype=np.int64), program.lo, program.hi)   # (C, S)
    succ = np.where(cont[None, :], succ, -1)
    init = np.asarray(program.init(X), dtype=bool)
    good = init.copy()
    frontier = good.copy()
    while frontier.any():
        nxt = succ[:, frontier].ravel()
        nxt = np.unique(nxt[nxt >= 0])
        new = nxt[~good[nxt]]
        good[new] = True
        frontier = np.zeros_like(good)
        frontier[new] = True
    violating = np.asarray(program.may_exit(X), dtype=bool) & ~np.asarray(program.post(X), dtype=bool)
    bad = violating
    while True:
        padded = np.append(bad, False)                   # index -1 -> False
        grown = bad | np.any(padded[succ], axis=0)
        if np.array_equal(grown, bad):
            break
        bad = grown
    return StateSpace(X, good, bad, init, violating, succ)


# --------------------------------------------------------------------------- programs


def _stack(*columns) -> np.ndarray:
    return np.stack(np.broadcast_arrays(*columns), axis=-1).astype(np.int64)


def _fig1(lo: int, hi: int) -> LoopProgram:
    x, y = 0, 1
    return LoopProgram(
        "fig1", ("x", "y"), lo, hi,
        init=lambda X: (X[:, x] == 0) & (X[:, y] == 0),
        may_continue=lambda X: np.ones(len(X), bool), may_exit=lambda X: np.ones(len(X), bool),
        body=lambda X: (X + 1)[None],
        post=lambda X: X[:, x] == X[:, y],
        invariant=lambda X: X[:, x] == X[:, y],
        description="x = 0; y = 0; while (nondet()) { x++; y++; } assert(x == y)")


def _nested(lo: int, hi: int) -> LoopProgram:
    def body(X):
        i, j, n, k = X.T
        inner = j < i
        return _stack(np.where(inner, i, i + 1), np.where(inner, j + 1, 0), n, np.where(inner, k + j, k))[None]

    return LoopProgram(
        "nested", ("i", "j", "n", "k"), lo, hi,
        init=lambda X: (X[:, 0] == 0) & (X[:, 1] == 0) & (X[:, 3] == 1),
        may_continue=lambda X: X[:, 0] < X[:, 2], may_exit=lambda X: X[:, 0] >= X[:, 2],
        body=body, post=lambda X: X[:, 3] >= 1,
        invariant=lambda X: (X[:, 3] >= 1) & (X[:, 1] >= 0),
        description="i = 0; j = 0; k = 1; while (i < n) { if (j < i) { k += j; j++; } else { i++; j = 0; } } "
                    "assert(k >= 1)")


def _tacas06(lo: int, hi: int) -> LoopProgram:
    return LoopProgram(
        "tacas06", ("x", "y", "i", "j"), lo, hi,
        init=lambda X: (X[:, 0] == X[:, 2]) & (X[:, 1] == X[:, 3]),
        may_continue=lambda X: X[:, 0] != 0, may_exit=lambda X: X[:, 0] == 0,
        body=lambda X: (X - np.array([1, 1, 0, 0]))[None],
        post=lambda X: (X[:, 2] != X[:, 3]) | (X[:, 1] == 0),
        invariant=lambda X: X[:, 0] - X[:, 1] == X[:, 2] - X[:, 3],
        description="x = i; y = j; while (x != 0) { x--; y--; } assert(i != j || y == 0)")


def _cegar2(lo: int, hi: int) -> LoopProgram:
    def body(X):
        x, m, N = X.T
        return np.stack([_stack(x + 1, m, N), _stack(x + 1, x, N)])

    def invariant(X):
        x, m, N = X.T
        return ((x == 0) & (m == 0)) | ((0 <= m) & (m < x) & (x <= N))

    return LoopProgram(
        "cegar2", ("x", "m", "N"), lo, hi,
        init=lambda X: (X[:, 0] == 0) & (X[:, 1] == 0),
        may_continue=lambda X: X[:, 0] < X[:, 2], may_exit=lambda X: X[:, 0] >= X[:, 2],
        body=body,
        post=lambda X: (X[:, 2] <= 0) | ((0 <= X[:, 1]) & (X[:, 1] < X[:, 2])),
        invariant=invariant,
        description="x = 0; m = 0; while (x < N) { if (nondet()) m = x; x++; } assert(N <= 0 || (0 <= m && m < N))")


def _hard(lo: int, hi: int) -> LoopProgram:
    def body(X):
        x1, _, x3 = X.T
        out = []
        for step in (-1, 1):                      # the nondet(-1, 1) choice, used only when x1 == 0
            nx1 = np.where(x1 > 0, x1 + 1, np.where(x1 < 0, x1 - 1, step))
            out.extend(_stack(nx1, v, x3) for v in range(lo, hi + 1))     # x2 = nondet()
        return np.stack(out)

    return LoopProgram(
        "hard", ("x1", "x2", "x3"), lo, hi,
        init=lambda X: (X[:, 0] == 0) & (X[:, 1] == X[:, 2]),
        may_continue=lambda X: np.ones(len(X), bool), may_exit=lambda X: np.ones(len(X), bool),
        body=body,
        post=lambda X: (X[:, 0] != 0) | (X[:, 1] == X[:, 2]),
        invariant=lambda X: (X[:, 0] != 0) | (X[:, 1] == X[:, 2]),
        description="x1 = 0; x2 = x3 = nondet(); while (nondet()) { x1 = x1 > 0 ? x1 + 1 : x1 < 0 ? x1 - 1 : "
                    "nondet(-1, 1); x2 = nondet(); } assert(x1 != 0 || x2 == x3)")


_PROGRAMS = {"fig1": _fig1, "nested": _nested, "tacas06": _tacas06, "cegar2": _cegar2, "hard": _hard}
PROGRAM_NAMES = tuple(_PROGRAMS)


def with_free_inputs(program: LoopProgram, n_free: int) -> LoopProgram:
    """``program`` with ``n_free`` extra input variables ``z1, z2, ...`` that the loop never reads or
    writes (any initial value, unchanged by the body): the invariant does not involve them, but the
    search space grows to ``d = program.d + n_free`` coefficients per atom (the paper fixed d = 5)."""
    n_free = check_int(n_free, "n_free", low=0)
    if n_free == 0:
        return program
    d0 = program.d

    def lift(f):
        return lambda X: f(X[:, :d0])

    def body(X):
        succ = np.asarray(program.body(X[:, :d0]), dtype=np.int64)
        free = np.broadcast_to(X[None, :, d0:], succ.shape[:2] + (n_free,))
        return np.concatenate([succ, free], axis=-1)

    return LoopProgram(program.name, program.variables + tuple(f"z{i + 1}" for i in range(n_free)),
                       program.lo, program.hi, lift(program.init), lift(program.may_continue),
                       lift(program.may_exit), body, lift(program.post), lift(program.invariant),
                       program.description)


def loop_program(name: str, lo: int = -4, hi: int = 4, d: int | None = None) -> LoopProgram:
    """One of :data:`PROGRAM_NAMES` (see the module docstring) over the box ``[lo, hi]^d``; with ``d``
    larger than the program's own variables, padded by :func:`with_free_inputs`."""
    if name not in _PROGRAMS:
        raise ValueError(f"name must be one of {PROGRAM_NAMES}, got {name!r}")
    lo, hi = check_int(lo, "lo"), check_int(hi, "hi")
    if not lo < 0 < hi:
        raise ValueError(f"the box must contain 0 strictly inside, got lo={lo}, hi={hi}")
    program = _PROGRAMS[name](lo, hi)
    if d is None:
        return program
    d = check_int(d, "d", low=program.d)
    return with_free_inputs(program, d - program.d)


def loop_programs(lo: int = -4, hi: int = 4, d: int | None = None) -> list[LoopProgram]:
    """All five programs of Table 1's columns: fig1, cegar2, nested, tacas06, hard."""
    return [loop_program(name, lo, hi, d) for name in ("fig1", "cegar2", "nested", "tacas06", "hard")]


# --------------------------------------------------------------------------- CEGAR driver


@dataclass
class Verification:
    """Outcome of one :func:`verify` run.

    ``status`` is ``"verified"`` (``a, b`` pass the check: an inductive invariant in the box, or a
    formula separating all good from all bad states), ``"cap"`` (the step cap was reached first) or
    ``"unsafe"`` (a reachable state can violate the assertion, so no invariant exists; no search is
    run).  ``steps`` counts every chain step over all rounds; ``n_examples`` is the number of distinct
    states in the final constraint set (labelled or in an implication pair).
    """

    status: str
    steps: int
    seconds: float
    rounds: int
    n_examples: int
    a: np.ndarray = field(repr=False)
    b: np.ndarray = field(repr=False)


def verify(program: LoopProgram | StateSpace, n_stages: int, *, n: int = 3, m: int = 3, beta: float = 8.0,
           eps_restart: float = 2e-4, eps_simplified: float = 0.04, n_initial: int = 2, batch: int = 2,
           max_steps: int = 1_000_000, check: str = "inductive", seed=None) -> Verification:
    """Verify ``program`` by the CEGAR loop of the module docstring with the 0-, 1- or 2-stage chain.

    Parameters
    ----------
    program : LoopProgram or StateSpace
        The program, or its precomputed :func:`state_space` (cheaper over many trials).
    n_stages : {0, 1, 2}
        The chain of Sec. 5: no restarts, uniform restarts w.p. ``eps_restart`` per step, or restart
        -> Geometric(``eps_simplified``) steps on the simplified cost -> full cost (Fig. 2(b)).
    n, m : int
        Disjuncts and atoms per disjunct (3 and 3 in the paper); coefficients and bounds in {-1, 0, 1}.
    beta : float
        Inverse temperature of the MH target ``exp(-beta * cost)``.
    eps_restart, eps_simplified : float
        Restart probability per full-cost step and the stage-leaving probability of the 2-stage chain.
    n_initial : int
        Initial examples, drawn uniformly: ``n_initial`` positive (initial states; good states for the
        separating check) and ``n_initial`` negative (violating exits; bad states).
    batch : int
        Counterexamples added per round: up to ``batch`` of the checker's, drawn uniformly.
    max_steps : int
        Cap on the total chain steps of the verification; reaching it gives status ``"cap"``.
    check : {"inductive", "separating"}
        What the checker demands (module docstring): an inductive invariant in the box
        (counterexamples: initial states, violating exits, implication pairs) or a formula separating
        all good from all bad states (counterexamples: misclassified good / bad states).
    seed : int, Generator or None

    Returns
    -------
    Verification
    """
    space = program if isinstance(program, StateSpace) else state_space(program)
    if n_stages not in N_STAGES:
        raise ValueError(f"n_stages must be one of {N_STAGES}, got {n_stages!r}")
    n, m = check_int(n, "n", low=1), check_int(m, "m", low=1)
    beta = check_float(beta, "beta", low=0.0)
    eps_restart = check_float(eps_restart, "eps_restart", low=0.0, high=1.0, low_open=True)
    eps_simplified = check_float(eps_simplified, "eps_simplified", low=0.0, high=1.0, low_open=True)
    n_initial = check_int(n_initial, "n_initial", low=1)
    batch = check_int(batch, "batch", low=1)
    max_steps = check_int(max_steps, "max_steps", low=1)
    if check not in CHECKS:
        raise ValueError(f"check must be one of {CHECKS}, got {check!r}")
    gen = as_generator(seed)
    d = space.X.shape[1]
    a = gen.integers(-1, 2, size=(n, m, d)).astype(np.int64)
    b = gen.integers(-1, 2, size=(n, m)).astype(np.int64)
    start = time.perf_counter()
    if not space.safe:
        return Verification("unsafe", 0, time.perf_counter() - start, 0, 0, a, b)
    examples = _Examples()
    if check == "separating":
        positives, negatives = np.flatnonzero(space.good), np.flatnonzero(space.bad)
    else:
        positives, negatives = np.flatnonzero(space.init), np.flatnonzero(space.violating)
    examples.label(gen.choice(positives, min(n_initial, positives.size), replace=False), 1)
    examples.label(gen.choice(negatives, min(n_initial, negatives.size), replace=False), 0)
    kinds, cdf_C, stage = stage_chain(n_stages, eps_restart, eps_simplified)
    settings = np.array([beta, 1.0 / n])
    steps = rounds = 0
    while True:
        rows, labels, src, dst = examples.arrays()
        data = DNFData(np.ascontiguousarray(space.X[rows]), labels, src, dst, settings, kinds)
        used, stage = dnf_chain(data, cdf_C, stage, formula_state(a, b, rows.size), max_steps - steps,
                                kernel_seed(gen))
        rounds += 1
        if used < 0:
            return Verification("cap", max_steps, time.perf_counter() - start, rounds, rows.size, a, b)
        steps += used
        f = evaluate_formula(a, b, space.X)
        if check == "separating":
            found = [(s, 1) for s in np.flatnonzero(space.good & ~f)] + [(s, 0) for s in np.flatnonzero(space.bad & f)]
        else:
            found = _inductiveness_counterexamples(space, f)
        if not found:
            return Verification("verified", steps, time.perf_counter() - start, rounds, rows.size, a, b)
        for k in gen.choice(len(found), min(batch, len(found)), replace=False):
            examples.add(found[k])


CHECKS = ("inductive", "separating")


def _inductiveness_counterexamples(space: StateSpace, f: np.ndarray) -> list[tuple]:
    """Why ``f`` (S,) is not an inductive invariant in the box: ``(s, 1)`` for an initial state outside
    ``f``, ``(s, 0)`` for a state in ``f`` that may exit violating the assertion, ``(s, t)`` pairs
    (as ``(s, t, None)``) for ``s`` in ``f`` with a body successor ``t`` outside ``f``."""
    found = [(s, 1) for s in np.flatnonzero(space.init & ~f)]
    found += [(s, 0) for s in np.flatnonzero(space.violating & f)]
    f_out = np.append(f, True)                                   # successors outside the box: ignored
    choice, src = np.nonzero(f[None, :] & ~f_out[space.succ])
    found += [(s, int(space.succ[c, s]), None) for c, s in zip(choice, src)]
    return found


class _Examples:
    """The learner's growing constraint set: labelled states and implication pairs (ICE-style)."""

    def __init__(self) -> None:
        self.rows: dict[int, int] = {}       # state index -> row
        self.labels: list[int] = []
        self.pairs: list[tuple[int, int]] = []

    def _row(self, state: int) -> int:
        if state not in self.rows:
            self.rows[state] = len(self.labels)
            self.labels.append(-1)
        return self.rows[state]

    def label(self, states, value: int) -> None:
        for state in states:
            self.labels[self._row(int(state))] = value

    def add(self, counterexample: tuple) -> None:
        if len(counterexample) == 2:
            self.label([counterexample[0]], counterexample[1])
        else:
            self.pairs.append((self._row(int(counterexample[0])), self._row(int(counterexample[1]))))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        pairs = np.array(self.pairs, dtype=np.int64).reshape(-1, 2)
        return (np.fromiter(self.rows, dtype=np.int64, count=len(self.rows)), np.array(self.labels, dtype=np.int8),
                np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1]))


@dataclass
class VerifyTrials:
    """Per-trial ``steps`` and ``seconds`` (capped trials count as the cap), ``verified`` mask and
    ``rounds`` of :func:`verify_trials`."""

    steps: np.ndarray
    seconds: np.ndarray
    verified: np.ndarray
    rounds: np.ndarray
    max_steps: int


def verify_trials(program: LoopProgram | StateSpace, n_stages: int, trials: int, *, max_steps: int = 1_000_000,
                  seed=None, **options) -> VerifyTrials:
    """``trials`` independent :func:`verify` runs (child seeds of ``seed``); ``options`` go to
    :func:`verify`.  Raises ValueError for an unsafe program."""
    trials = check_int(trials, "trials", low=1)
    space = program if isinstance(program, StateSpace) else state_space(program)
    if not space.safe:
        raise ValueError("program is unsafe in its box: a reachable state can violate the assertion")
    runs = [verify(space, n_stages, max_steps=max_steps, seed=s, **options)
            for s in np.random.SeedSequence(kernel_seed(seed)).spawn(trials)]
    return VerifyTrials(np.array([r.steps for r in runs]), np.array([r.seconds for r in runs]),
                        np.array([r.status == "verified" for r in runs]), np.array([r.rounds for r in runs]),
                        max_steps)


def formula_text(a, b, variables: Sequence[str]) -> str:
    """Human-readable DNF, e.g. ``(x - y <= 0 && -x + y <= 0) || ...``; vacuous atoms are dropped."""
    a = as_int_array(a, "a", ndim=3)
    b = as_int_array(b, "b", ndim=2)
    disjuncts = []
    for i in range(a.shape[0]):
        atoms = []
        for j in range(a.shape[1]):
            terms = [("-" if c < 0 else "+") + v for c, v in zip(a[i, j], variables) if c != 0]
            if not terms:
                if b[i, j] < 0:
                    atoms = ["false"]
                    break
                continue
            lhs = " ".join(terms).lstrip("+").replace(" +", " + ").replace(" -", " - ")
            atoms.append(f"{lhs} <= {b[i, j]}")
        if atoms != ["false"]:
            disjuncts.append("(" + (" && ".join(atoms) or "true") + ")")
    return " || ".join(disjuncts) or "false"

"""CEGAR verification driver for Experiment 2 (Table 1): state sets vs a brute-force oracle, known
invariants, termination with every chain, negative controls, validation."""

from dataclasses import replace
from itertools import product

import numpy as np
import pytest

from experiments.doeblin_dnf.search import evaluate_formula
from experiments.doeblin_dnf.verify import (
    PROGRAM_NAMES,
    _inductiveness_counterexamples,
    box_states,
    formula_text,
    loop_program,
    loop_programs,
    state_space,
    verify,
    verify_trials,
    with_free_inputs,
)


def _successors(program, s):
    lo, hi = program.lo, program.hi
    if not bool(program.may_continue(np.array([s]))[0]):
        return []
    succ = np.asarray(program.body(np.array([s])))[:, 0, :]
    return [tuple(int(v) for v in t) for t in succ if all(lo <= v <= hi for v in t)]


def _is_inductive(program, f):
    """Brute force: f(s) for every initial s, post(s) wherever f(s) and the loop may exit, f(t) for
    every in-box successor t of every s with f(s)."""
    for x, fx in zip(box_states(program.d, program.lo, program.hi), f):
        row = x[None]
        if program.init(row)[0] and not fx:
            return False
        if fx and program.may_exit(row)[0] and not program.post(row)[0]:
            return False
        if fx and not all(f[_index(program, t)] for t in _successors(program, tuple(int(v) for v in x))):
            return False
    return True


def _index(program, t):
    width = program.hi - program.lo + 1
    return int(np.ravel_multi_index(tuple(v - program.lo for v in t), (width,) * program.d))


def _oracle(program):
    """Good and bad states by explicit per-state simulation (sets of tuples, forward search from
    every state), independent of state_space's vectorised forward/backward fixpoints."""
    lo, hi = program.lo, program.hi
    states = [tuple(s) for s in product(range(lo, hi + 1), repeat=program.d)]

    def f(fn, s):
        return bool(fn(np.array([s]))[0])

    def successors(s):
        return _successors(program, s)

    def forward(starts):
        seen, stack = set(starts), list(starts)
        while stack:
            for t in successors(stack.pop()):
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return seen

    good = forward([s for s in states if f(program.init, s)])
    violating = {s for s in states if f(program.may_exit, s) and not f(program.post, s)}
    bad = {s for s in states if forward([s]) & violating}
    return good, bad


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_state_space_matches_brute_force_oracle(name):
    program = loop_program(name, -2, 2)
    space = state_space(program)
    good, bad = _oracle(program)
    rows = [tuple(int(v) for v in x) for x in space.X]
    assert {r for r, g in zip(rows, space.good) if g} == good
    assert {r for r, b in zip(rows, space.bad) if b} == bad
    assert good and bad


@pytest.mark.parametrize("program", loop_programs(-3, 3), ids=lambda p: p.name)
def test_programs_are_safe_and_known_invariant_separates(program):
    space = state_space(program)
    assert space.safe
    inv = program.invariant(space.X)
    assert inv[space.good].all() and not inv[space.bad].any()


@pytest.mark.parametrize("program", loop_programs(-2, 2), ids=lambda p: p.name)
def test_known_invariant_is_inductive_and_a_weakened_one_is_caught(program):
    space = state_space(program)
    inv = np.asarray(program.invariant(space.X), dtype=bool)
    assert _is_inductive(program, inv) and _inductiveness_counterexamples(space, inv) == []
    # drop one reachable non-initial state: no longer inductive, and the checker says why
    s = np.flatnonzero(space.good & ~space.init)[0]
    weak = inv.copy()
    weak[s] = False
    found = _inductiveness_counterexamples(space, weak)
    assert not _is_inductive(program, weak) and found
    assert any(len(c) == 3 and c[1] == s for c in found)


def test_hard_program_good_states_are_exactly_the_invariant():
    """The 3-disjunct argument of the module docstring rests on: every x1 != 0 state is good."""
    space = state_space(loop_program("hard", -3, 3))
    np.testing.assert_array_equal(space.good, (space.X[:, 0] != 0) | (space.X[:, 1] == space.X[:, 2]))


def test_free_inputs_multiply_the_state_sets():
    base, padded = state_space(loop_program("cegar2", -2, 2)), state_space(loop_program("cegar2", -2, 2, d=5))
    assert padded.X.shape == (5 ** 5, 5)
    assert padded.good.sum() == 25 * base.good.sum() and padded.bad.sum() == 25 * base.bad.sum()


@pytest.mark.parametrize("n_stages", [0, 1, 2])
def test_cegar_finds_inductive_invariant_with_each_chain(n_stages):
    program = loop_program("tacas06", -2, 2)
    space = state_space(program)
    r = verify(space, n_stages, seed=n_stages, max_steps=200_000)
    assert r.status == "verified" and 0 < r.steps < 200_000 and r.rounds >= 1
    assert _is_inductive(program, evaluate_formula(r.a, r.b, space.X))


@pytest.mark.parametrize("n_stages", [0, 1, 2])
def test_cegar_separates_good_from_bad_with_each_chain(n_stages):
    space = state_space(loop_program("cegar2", -3, 3))
    r = verify(space, n_stages, check="separating", seed=n_stages, max_steps=200_000)
    assert r.status == "verified" and 0 < r.steps < 200_000 and r.rounds >= 1
    f = evaluate_formula(r.a, r.b, space.X)
    assert f[space.good].all() and not f[space.bad].any()


def test_verify_trials_reports_caps_as_the_cap():
    """Negative control: with one atom (n = m = 1) no formula separates ``hard`` (needs 3 disjuncts),
    so every trial stops at the cap and is reported unverified, not looped on."""
    r = verify_trials(loop_program("hard", -2, 2), 1, 2, n=1, m=1, max_steps=3000, seed=0)
    assert not r.verified.any() and np.all(r.steps == 3000)


def test_unsafe_program_is_reported():
    """Negative control: asserting k >= 2 in ``nested`` fails on a reachable state (k = 1)."""
    program = loop_program("nested", -2, 2)
    unsafe = replace(program, post=lambda X: X[:, 3] >= 2)
    assert not state_space(unsafe).safe
    assert verify(unsafe, 2, seed=0).status == "unsafe"
    with pytest.raises(ValueError, match="unsafe"):
        verify_trials(unsafe, 0, 2, seed=0)


def test_formula_text():
    a = np.array([[[1, -1], [0, 0]], [[0, 0], [0, 0]]])
    b = np.array([[0, 1], [-1, 0]])
    assert formula_text(a, b, ("x", "y")) == "(x - y <= 0)"


def test_validation():
    space = state_space(loop_program("fig1", -2, 2))
    with pytest.raises(ValueError, match="n_stages"):
        verify(space, 3)
    with pytest.raises(ValueError, match="check"):
        verify(space, 1, check="exact")
    with pytest.raises(ValueError, match="batch"):
        verify(space, 1, batch=0)
    with pytest.raises(ValueError, match="eps_restart"):
        verify(space, 1, eps_restart=1.5)
    with pytest.raises(ValueError, match="name"):
        loop_program("nope")
    with pytest.raises(ValueError, match="box"):
        loop_program("fig1", 0, 3)
    with pytest.raises(ValueError, match="d"):
        loop_program("tacas06", d=3)
    with pytest.raises(ValueError, match="hi"):
        box_states(2, 1, 0)
    with pytest.raises(ValueError, match="n_free"):
        with_free_inputs(loop_program("fig1"), -1)
    with pytest.raises(TypeError, match="program"):
        state_space("fig1")
    with pytest.raises(ValueError, match="trials"):
        verify_trials(space, 0, 0)

"""The one Doeblin core: the restart step, the staged step, exact draws and Algorithm 1's suffix weights.

Every chain in :mod:`doeblin` (finite chains, label sequences) and in the paper experiments (keyboard
gestures, DNF search) runs through the Numba kernels of this module.  A **model** is a NamedTuple
of arrays (its parameters, bundled); a **state** is a 1-D array that the model's kernels update in
place.  A model plugs in by implementing three operations with :func:`implements`:

``restart(model, state)``
    draw ``state ~ u`` (the restart law);
``move(model, state)``
    one step of the base kernel ``A``;
``stage_move(model, stage, state)``
    one step of the kernel ``A_stage`` of a staged chain (Sec. 3.1), only for staged models.

The kernels below are written once against these operations (Steinhardt & Liang 2015):

* :func:`restart_step` -- one step of the strong Doeblin chain ``(1 - eps) A + eps u`` (Eq. 2):
  with probability ``eps`` restart from ``u``, else apply ``A``;
* :func:`doeblin_path`, :func:`exact_doeblin_draws`, :func:`exact_doeblin_budget` -- paths and exact
  stationary draws (Prop. 3.2: ``y ~ u``, ``T ~ Geometric(eps)`` on {0, 1, ...}, apply ``A`` T times);
* :func:`staged_step`, :func:`staged_path`, :func:`exact_staged_draws` -- staged chains (Sec. 3.1):
  ``z_t ~ C(. | z_{t-1})`` then ``y_t ~ A_{z_t}(. | y_{t-1})``; exact draws walk the time-reversed
  stage chain back to the last restart;
* :func:`restart_path` -- a restart followed by moves, the path that Algorithm 1 scores;
* :func:`suffix_weights` -- Algorithm 1's O(T) grouping (Sec. 4.2): ``W_s = sum_{t >= s} w_t``, with an
  optional per-step baseline (a control variate).

Kernels draw from Numba's generator; the public wrappers seed it (``np.random.seed``) once per call.
No validation here.

**Speed.** The loop kernels (:func:`doeblin_path`, :func:`exact_doeblin_draws`, :func:`exact_doeblin_budget`,
:func:`restart_path`, :func:`staged_path`) are compiled without Numba's reference counting (:data:`loop_jit`,
``_nrt=False``): with it, every read of a model field inside the loop (``model.cdf_A``) is an atomic
increment and decrement of the array's reference count, which made the generic loops 1.2-1.45x slower
than the per-model loops they replaced (``benchmarks/doeblin_core_speed.py``).  So a model's ``restart`` /
``move`` / ``stage_move`` **must not allocate** (keep scratch arrays in the model bundle, as
:class:`doeblin._seq_kernels.SequenceChain` keeps ``buf``); the arrays a loop kernel receives are owned by
its caller for the whole call.

Examples
--------
A model is a NamedTuple of arrays and small kernels registered with :func:`implements`: the smallest is
:class:`doeblin._kernels.FiniteChain` (cumulative rows of ``A`` and of ``u``, one line each for ``restart``
and ``move``), after which ``doeblin_path(FiniteChain(cdf_A, cdf_u), state, eps, path)`` runs the strong
Doeblin chain.  ``docs/doeblin.md`` defines such a model outside the package, runnable.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

import numpy as np

from samplers._dispatch import implements as _implements
from samplers._dispatch import numba_operation
from samplers._jit import jit

__all__ = ["restart", "move", "stage_move", "implements", "draw_from_cdf", "restart_step", "doeblin_path",
           "exact_doeblin_draws", "seeded_exact_draws", "exact_doeblin_budget", "restart_path", "next_stage", "staged_step",
           "staged_path", "walk_back_to_restart", "exact_staged_draws", "suffix_weights"]


#: The jit of the loop kernels: no reference counting (no allocation inside; see the module docstring).
loop_jit = partial(jit, _nrt=False)


# --------------------------------------------------------------------------- the model's operations

restart = numba_operation("restart", "Draw ``state ~ u`` in place (implemented per model with :func:`implements`).")
move = numba_operation("move", "One step of the base kernel ``A`` on ``state`` in place (per model, :func:`implements`).")
stage_move = numba_operation("stage_move", "One step of stage ``stage``'s kernel on ``state`` in place (per staged "
                             "model, :func:`implements`).")
OPERATIONS = (restart, move, stage_move)


def implements(operation: Callable, model_class: type) -> Callable:
    """Decorator: the jitted function becomes ``operation`` (:func:`restart`, :func:`move` or
    :func:`stage_move`) for models of NamedTuple class ``model_class`` (:func:`samplers._dispatch.implements`).

    The decorated Python function is compiled with the project's jit helper and returned, so it can
    also be called directly from other kernels.  It runs inside the loop kernels, which count no
    references: it must not allocate arrays (keep scratch in the model bundle).
    """
    return _implements(operation, model_class, OPERATIONS)


# --------------------------------------------------------------------------- strong Doeblin chains


@jit(inline="always")
def draw_from_cdf(cdf_row):
    """Index j with cdf[j-1] <= U * cdf[-1] < cdf[j] (binary search; cdf need not end at exactly 1)."""
    u = np.random.random() * cdf_row[cdf_row.shape[0] - 1]
    return min(np.searchsorted(cdf_row, u, side="right"), cdf_row.shape[0] - 1)


@jit(inline="always")
def _store(row, state):
    """``row[:] = state`` as an explicit loop (cheaper than a slice assignment per step)."""
    for j in range(state.shape[0]):
        row[j] = state[j]


@jit(inline="always")
def restart_step(model, state, eps):
    """One step of the strong Doeblin chain (Eq. 2): restart from ``u`` w.p. ``eps``, else apply ``A``.

    ``eps = 0`` is the plain chain ``A`` (no uniform is drawn).  Returns True when the step was a restart.
    """
    if eps > 0.0 and np.random.random() < eps:
        restart(model, state)
        return True
    move(model, state)
    return False


@loop_jit
def doeblin_path(model, state, eps, path, restarts):
    """Run the strong Doeblin chain from ``state``: ``path[0] = state``, ``path[t]`` after step t.

    ``path`` (n + 1, d) and ``restarts`` (n + 1,) bool are written; ``restarts[t]`` says whether step
    t (t >= 1) restarted.  ``state`` ends at the last state.
    """
    _store(path[0], state)
    restarts[0] = False
    for t in range(1, path.shape[0]):
        restarts[t] = restart_step(model, state, eps)
        _store(path[t], state)


@loop_jit
def exact_doeblin_draws(model, state, eps, out, steps):
    """Exact stationary draws (Prop. 3.2) into the rows of ``out``: ``y ~ u``, ``T ~ Geometric(eps)``
    on {0, 1, ...}, then ``T`` moves; ``steps[i] = T_i``.  ``state`` is scratch."""
    for i in range(out.shape[0]):
        restart(model, state)
        T = np.random.geometric(eps) - 1
        for _ in range(T):
            move(model, state)
        _store(out[i], state)
        steps[i] = T


@jit
def seeded_exact_draws(model, dim, eps, size, seed):
    """:func:`exact_doeblin_draws` of ``size`` states of length ``dim`` after ``np.random.seed(seed)``;
    returns ``(draws (size, dim), steps (size,))``."""
    np.random.seed(seed)
    out = np.empty((size, dim), dtype=np.int64)
    steps = np.empty(size, dtype=np.int64)
    exact_doeblin_draws(model, np.zeros(dim, dtype=np.int64), eps, out, steps)
    return out, steps


@loop_jit
def exact_doeblin_budget(model, state, eps, budget, out):
    """Exact draws (as :func:`exact_doeblin_draws`) until ``budget`` kernel applications are spent
    (the restart and each move cost 1); a draw that would overrun the budget is dropped.  ``out`` has
    ``budget`` rows; returns the number of completed draws."""
    n = 0
    spent = 0
    while True:
        T = np.random.geometric(eps) - 1
        if spent + T + 1 > budget:
            return n
        restart(model, state)
        for _ in range(T):
            move(model, state)
        _store(out[n], state)
        n += 1
        spent += T + 1


@loop_jit
def restart_path(model, path, n_states):
    """``path[0] ~ u`` and ``path[r] = A(path[r - 1])`` for ``r < n_states``: the states of one
    restart-then-move chain (Algorithm 1's path).  ``path[0]`` is drawn even when ``n_states = 0``."""
    restart(model, path[0])
    for r in range(1, n_states):
        _store(path[r], path[r - 1])
        move(model, path[r])


@jit
def suffix_weights(weights, baseline, out):
    """Algorithm 1's suffix sums (Sec. 4.2): ``out[s] = sum_{t >= s} weights[t] - (n - s) * baseline``.

    The score of a path's step s is multiplied by the weight of every later state, so grouping by s
    makes the gradient O(T) instead of O(T^2); ``baseline`` (a control variate: the mean weight of
    states independent of this path) is subtracted once per later state.  ``n = len(weights)``.
    """
    n = weights.shape[0]
    total = 0.0
    for s in range(n - 1, -1, -1):
        total += weights[s]
        out[s] = total - (n - s) * baseline


# --------------------------------------------------------------------------- staged chains


@jit(inline="always")
def next_stage(cdf_C, stage):
    """Draw ``z ~ C(. | stage)`` from the cumulative rows of the stage chain (no draw for one stage)."""
    if cdf_C.shape[0] == 1:
        return 0
    return draw_from_cdf(cdf_C[stage])


@jit(inline="always")
def staged_step(model, cdf_C, stage, state):
    """One step of a staged chain (Sec. 3.1): ``z ~ C(. | stage)``, then ``A_z`` on ``state``; returns z."""
    z = next_stage(cdf_C, stage)
    stage_move(model, z, state)
    return z


@loop_jit
def staged_path(model, cdf_C, stage, state, stages, path):
    """Run a staged chain from ``(stage, state)``; ``stages[t]``, ``path[t]`` after step t (t = 0: start)."""
    stages[0] = stage
    _store(path[0], state)
    for t in range(1, path.shape[0]):
        stage = staged_step(model, cdf_C, stage, state)
        stages[t] = stage
        _store(path[t], state)


@jit
def walk_back_to_restart(cdf_rho, cdf_C_rev, z_restart, back):
    """Draw ``z_0 ~ rho`` and walk the time-reversed stage chain back to the last visit of ``z*``.

    Returns ``(z_0, m, back)``: ``back[:m]`` holds the stages visited before reaching ``z*``
    (``back[0] = z_0``), so the forward kernels to apply after the restart are ``back[m-1], ...,
    back[0]``; ``back`` is grown (doubled) when needed and returned.
    """
    z = draw_from_cdf(cdf_rho)
    z0 = z
    m = 0
    while z != z_restart:
        if m == back.shape[0]:
            grown = np.empty(2 * m, dtype=np.int64)
            grown[:m] = back
            back = grown
        back[m] = z
        m += 1
        z = draw_from_cdf(cdf_C_rev[z])
    return z0, m, back


@jit
def exact_staged_draws(model, cdf_rho, cdf_C_rev, z_restart, state, stages, out, steps):
    """Exact stationary draws of a staged chain by walking the stage chain backwards to the last restart.

    Draw ``z_0 ~ rho`` (stationary law of C), walk the time-reversed stage chain back to the most
    recent time ``tau <= 0`` with ``z_tau = z*``, restart there (``y_tau ~ u``, by the restart stage's
    kernel) and run the stage kernels forward to time 0.  The reversed path is a stationary stage
    path and ``y_tau`` is independent of everything before ``tau``, so ``(z_0, y_0)`` is an exact draw
    of the joint stationary law (the construction behind Thm. 3.6).  Writes ``stages[i]``,
    ``out[i]`` and ``steps[i]`` (kernel applications, the restart included).
    """
    back = np.empty(64, dtype=np.int64)
    for i in range(out.shape[0]):
        stages[i], m, back = walk_back_to_restart(cdf_rho, cdf_C_rev, z_restart, back)
        stage_move(model, z_restart, state)
        for j in range(m - 1, -1, -1):
            stage_move(model, back[j], state)
        _store(out[i], state)
        steps[i] = m + 1

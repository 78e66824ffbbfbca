"""doeblin.core: the generic restart / staged steps, exact draws and Algorithm 1's suffix weights, run
on the finite models of doeblin._kernels (a model defined outside the package through the public extension
point, implements, is run by the subprocess test below and by docs/doeblin.md)."""

from __future__ import annotations

import numpy as np
import pytest

from doeblin import StagedDoeblinChain, StrongDoeblinChain, core
from doeblin._kernels import FiniteChain, FiniteStagedChain
from doeblin.core import implements, move, restart
from doeblin.examples import random_chain
from doeblin.markov import cumulative_rows
from samplers._jit import jit
from samplers.testing import chi_square_gof


@jit
def _draws(model, eps, size, seed):
    np.random.seed(seed)
    out = np.empty((size, 1), dtype=np.int64)
    steps = np.empty(size, dtype=np.int64)
    core.exact_doeblin_draws(model, np.zeros(1, dtype=np.int64), eps, out, steps)
    return out[:, 0], steps


@jit
def _path(model, eps, n, seed):
    np.random.seed(seed)
    path = np.empty((n + 1, 1), dtype=np.int64)
    restarts = np.empty(n + 1, dtype=np.bool_)
    core.doeblin_path(model, np.zeros(1, dtype=np.int64), eps, path, restarts)
    return path[:, 0], restarts


@jit
def _staged_draws(model, cdf_rho, cdf_C_rev, size, seed):
    np.random.seed(seed)
    zs = np.empty(size, dtype=np.int64)
    ys = np.empty((size, 1), dtype=np.int64)
    steps = np.empty(size, dtype=np.int64)
    core.exact_staged_draws(model, cdf_rho, cdf_C_rev, 0, np.zeros(1, dtype=np.int64), zs, ys, steps)
    return zs, ys[:, 0]


@jit
def _uniforms_after_steps(model, eps, n, seed):
    np.random.seed(seed)
    state = np.zeros(1, dtype=np.int64)
    for _ in range(n):
        core.restart_step(model, state, eps)
    return np.random.random()


@jit
def _moves_then_uniform(model, n, seed):
    np.random.seed(seed)
    state = np.zeros(1, dtype=np.int64)
    for _ in range(n):
        move(model, state)
    return np.random.random()


N = 6
A = random_chain(N, seed=3)
U = np.random.default_rng(4).dirichlet(np.ones(N))
A2 = random_chain(N, seed=5)
C = np.array([[0.2, 0.8, 0.0], [0.1, 0.6, 0.3], [0.5, 0.0, 0.5]])


@pytest.fixture(scope="module")
def finite():
    return FiniteChain(cumulative_rows(A), cumulative_rows(U))


def test_exact_draws_match_closed_form(finite):
    """Prop. 3.2 through the generic kernel on the finite chain model: chi-square against
    eps u (I - (1 - eps) A)^{-1} (20000 draws; false-alarm rate 1e-3)."""
    draws, steps = _draws(finite, 0.2, 20000, 1)
    pi = StrongDoeblinChain(A, U, 0.2).stationary()
    assert chi_square_gof(np.bincount(draws, minlength=N), pi)[2] > 1e-3
    # T ~ Geometric(0.2) on {0, 1, ...}: mean 4, se sqrt(20) / sqrt(20000) = 0.032
    assert abs(steps.mean() - 4.0) < 4 * np.sqrt(20 / 20000)


def test_wrong_law_is_rejected(finite):
    """Negative control: the same draws are rejected against A's own stationary law."""
    draws, _ = _draws(finite, 0.2, 20000, 1)
    wrong = StrongDoeblinChain(A, U, 0.2).base_stationary()
    assert chi_square_gof(np.bincount(draws, minlength=N), wrong)[2] < 1e-3


def test_path_restart_rate_and_long_run_law(finite):
    """Restarts occur at rate eps (binomial, 4 se), and the path's visit frequencies at lag 50
    (thinned, about independent) follow pi~."""
    path, restarts = _path(finite, 0.1, 400_000, 2)
    rate = restarts[1:].mean()
    assert abs(rate - 0.1) < 4 * np.sqrt(0.1 * 0.9 / 400_000)
    thinned = path[::50]
    pi = StrongDoeblinChain(A, U, 0.1).stationary()
    assert chi_square_gof(np.bincount(thinned, minlength=N), pi)[2] > 1e-3


def test_staged_model_matches_finite_staged_chain():
    """Exact staged draws through the generic kernel equal the finite chain's joint law (chi-square)."""
    chain = StagedDoeblinChain(C, [U, A, A2], 0)
    stages = FiniteStagedChain(cumulative_rows(np.stack([np.repeat(U[None], N, 0), A, A2])))
    z, y = _staged_draws(stages, chain._cdf_rho, chain._cdf_C_rev, 30000, 3)
    joint = chain.stationary(joint=True).ravel()
    assert chi_square_gof(np.bincount(z * N + y, minlength=3 * N), joint)[2] > 1e-3


def test_eps_zero_is_the_plain_chain_and_draws_no_uniform(finite):
    """restart_step with eps = 0 only moves and draws nothing for the restart decision: after 7 steps
    the state and the generator are exactly where 7 plain moves leave them; with eps > 0 (tiny, so
    no restart happens) each step draws one more uniform and the generator differs."""
    plain = _moves_then_uniform(finite, 7, 11)
    assert _uniforms_after_steps(finite, 0.0, 7, 11) == plain
    assert _uniforms_after_steps(finite, 1e-300, 7, 11) != plain


def test_suffix_weights_brute_force():
    rng = np.random.default_rng(0)
    w = rng.random(9)
    out = np.empty(9)
    core.suffix_weights(w, 0.25, out)
    expected = [w[s:].sum() - (9 - s) * 0.25 for s in range(9)]
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_implements_rejects_bad_arguments():
    with pytest.raises(ValueError, match="operation"):
        implements(len, FiniteChain)
    with pytest.raises(TypeError, match="model_class"):
        implements(restart, dict)


def test_python_stubs_say_they_are_numba_only():
    with pytest.raises(NotImplementedError, match="implements"):
        restart(None, None)


def test_doeblin_and_trf_share_one_dispatch_helper():
    """``implements`` is written once (samplers._dispatch); the families only name their operations."""
    from samplers import _dispatch
    from trf import _transms_skeleton as skeleton

    with pytest.raises(ValueError, match=r"operation must be one of \['move', 'restart', 'stage_move'\]"):
        implements(skeleton.propose_append, FiniteChain)
    with pytest.raises(ValueError, match="propose_append"):
        skeleton.implements(move, FiniteChain)
    for module in (core, skeleton):  # neither registers overloads itself any more
        assert "overload" not in vars(module) and vars(module)["_implements"] is _dispatch.implements


_FRESH_MODEL = """
import warnings
from typing import NamedTuple
import numpy as np
from numba.core.errors import NumbaIRAssumptionWarning
from doeblin import core
from doeblin.core import draw_from_cdf, implements, stage_move
from samplers._jit import jit
import trf._transms_skeleton
assert not [f for f in warnings.filters if f[2] is NumbaIRAssumptionWarning], "a global filter was installed"
warnings.simplefilter("error", NumbaIRAssumptionWarning)

class Fresh(NamedTuple):
    cdf_stage: np.ndarray

@implements(stage_move, Fresh)
def fresh_stage_move(model, stage, state):
    state[0] = draw_from_cdf(model.cdf_stage[stage, state[0]])

@jit(cache=False)
def draws(model, cdf_rho, cdf_C_rev, size):
    np.random.seed(0)
    zs, ys, steps = np.empty(size, np.int64), np.empty((size, 1), np.int64), np.empty(size, np.int64)
    core.exact_staged_draws(model, cdf_rho, cdf_C_rev, 0, np.zeros(1, np.int64), zs, ys, steps)
    return ys

cdf = np.cumsum(np.full((2, 3, 3), 1 / 3), axis=-1)
assert draws(Fresh(cdf), np.cumsum([0.5, 0.5]), np.cumsum(np.full((2, 2), 0.5), axis=-1), 5).shape == (5, 1)
"""


def test_no_global_warning_filters_and_no_inliner_warnings_when_compiling_a_fresh_model(tmp_path):
    """Importing doeblin changed the user's warning filters (to hide Numba inliner warnings); now the import
    leaves them alone, and compiling a model outside a file (no cache) emits no NumbaIRAssumptionWarning,
    even as an error."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", _FRESH_MODEL], check=True, env=env, timeout=600)

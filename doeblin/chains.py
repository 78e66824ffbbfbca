"""Strong Doeblin chains and staged strong Doeblin chains over explicit finite state spaces.

Steinhardt & Liang, "Learning Fast-Mixing Models for Structured Prediction", ICML 2015, Sec. 3.

Convention: every transition matrix is **row-stochastic**, ``A[i, j] = P(y_{t+1} = j | y_t = i)``;
distributions are 1-D arrays acting as row vectors (``p -> p @ A``).  The paper writes the
transpose (column-stochastic ``A`` acting on column vectors), so its ``A~ = (1 - eps) A + eps u 1^T``
is here ``A~ = (1 - eps) A + eps 1 u`` (every row gets ``eps * u``).
"""

from __future__ import annotations

import numpy as np

from samplers.rng import kernel_seed
from samplers.validation import as_float_array, check_float, check_int

from ._kernels import exact_doeblin_draws, exact_staged_draws, simulate_doeblin, simulate_staged
from .markov import (
    check_restart_law,
    check_stochastic,
    cumulative_rows,
    spectral_gap,
    stationary_doeblin_closed_form,
    stationary_gth,
    tv_curve,
)

STATIONARY_METHODS = ("closed", "gth")


#: Default bound on the expected kernel applications of one call that draws exact samples (``max_steps``).
MAX_EXPECTED_STEPS = 10**9


def check_eps(eps, name: str = "eps") -> float:
    """Validate a restart probability ``0 < eps <= 1``."""
    return check_float(eps, name, low=0.0, high=1.0, low_open=True)


def check_draw_cost(steps_per_draw: float, size: int, max_steps, cause: str) -> int:
    """Refuse up front exact draws whose expected cost exceeds ``max_steps`` kernel applications.

    An exact draw of a strong Doeblin chain costs a Geometric number of kernel applications with mean
    ``(1 - eps) / eps`` (Prop. 3.2); a tiny ``eps`` would make sampling run for hours with no sign of
    progress.  ``cause`` names the argument that sets ``steps_per_draw`` (e.g. ``"eps = 1e-12"``).

    Returns
    -------
    int
        The validated ``max_steps``.

    Raises
    ------
    ValueError
        If ``size * steps_per_draw > max_steps``, naming ``cause`` and ``max_steps``.
    """
    max_steps = check_int(max_steps, "max_steps", low=1)
    expected = size * steps_per_draw
    if expected > max_steps:
        raise ValueError(f"{cause} makes {size} exact draws cost about {expected:.3g} kernel applications "
                         f"({steps_per_draw:.3g} per draw), more than max_steps = {max_steps}: raise the restart "
                         "probability, draw fewer samples, or raise max_steps")
    return max_steps


class StrongDoeblinChain:
    """Strong Doeblin chain ``A~ = (1 - eps) A + eps 1 u`` (Eq. 2, row-stochastic convention).

    Each step restarts from ``u`` with probability ``eps`` and otherwise moves by ``A``.

    Parameters
    ----------
    A : array_like, shape (n, n)
        Row-stochastic base kernel, ``A[i, j] = P(next = j | current = i)``.
    u : array_like, shape (n,)
        Restart distribution.
    eps : float
        Restart probability, ``0 < eps <= 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from doeblin import StrongDoeblinChain
    >>> chain = StrongDoeblinChain(np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([0.5, 0.5]), eps=0.1)
    >>> bool(chain.spectral_gap() >= 0.1)   # Prop. 3.1
    True
    >>> draws = chain.sample_stationary(1000, seed=0)   # exact draws, Prop. 3.2
    """

    def __init__(self, A, u, eps: float):
        self.A = check_stochastic(A, "A")
        self.n_states = self.A.shape[0]
        self.u = check_restart_law(u, "u", n=self.n_states)
        self.eps = check_eps(eps)
        self._cdf_A = cumulative_rows(self.A)
        self._cdf_u = cumulative_rows(self.u)

    def transition_matrix(self) -> np.ndarray:
        """``(1 - eps) A + eps 1 u``, shape (n, n), row-stochastic."""
        return (1.0 - self.eps) * self.A + self.eps * self.u[None, :]

    def stationary(self, method: str = "closed") -> np.ndarray:
        """Stationary law ``pi~`` (Prop. 3.2).

        Parameters
        ----------
        method : {"closed", "gth"}
            ``"closed"``: ``eps u (I - (1 - eps) A)^{-1}`` by a linear solve; ``"gth"``: GTH
            elimination of ``A~`` (subtraction-free; use it when ``eps`` is tiny, e.g. Fig. 1).
        """
        if method == "closed":
            return stationary_doeblin_closed_form(self.A, self.u, self.eps)
        if method == "gth":
            return stationary_gth(self.transition_matrix())
        raise ValueError(f"method must be one of {STATIONARY_METHODS}, got {method!r}")

    def base_stationary(self) -> np.ndarray:
        """A stationary law ``pi`` of the base kernel ``A`` (GTH; the first closed class if reducible)."""
        return stationary_gth(self.A)

    def spectral_gap(self) -> float:
        """``1 - |lambda_2(A~)|``; at least ``eps`` by Prop. 3.1."""
        return spectral_gap(self.transition_matrix())

    def tv_to_stationarity(self, t_max: int, initial=None) -> np.ndarray:
        """Worst-case (or from ``initial``) TV distance to ``pi~`` after t = 0..t_max steps.

        Bounded by ``(1 - eps)^t`` (coupling at the first restart; the mechanism behind Prop. 3.1).
        """
        t_max = check_int(t_max, "t_max", low=0)
        if initial is not None:
            initial = check_restart_law(initial, "initial", n=self.n_states)
        return tv_curve(self.transition_matrix(), self.stationary(method="gth"), t_max, initial)

    def simulate(self, n_steps: int, *, seed=None, y0: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Run the chain for ``n_steps`` steps.

        Returns ``(path, restarts)``: ``path`` (n_steps + 1,) int64 states (``path[0] = y0``, or a
        draw from ``u`` when ``y0`` is None) and ``restarts`` (n_steps + 1,) bool, ``restarts[t]``
        true when step t restarted from ``u``.  Each step costs one kernel application.
        """
        n_steps = check_int(n_steps, "n_steps", low=0)
        start = -1 if y0 is None else check_int(y0, "y0", low=0, high=self.n_states - 1)
        return simulate_doeblin(self._cdf_A, self._cdf_u, self.eps, start, n_steps, kernel_seed(seed))

    def sample_stationary(self, size: int, *, seed=None, return_steps: bool = False,
                          max_steps: int = MAX_EXPECTED_STEPS):
        """Exact i.i.d. draws from ``pi~`` (Prop. 3.2): ``y0 ~ u``, ``T ~ Geometric(eps)`` on
        {0, 1, ...}, then ``T`` steps of ``A``.

        Returns an int64 array (size,), plus the per-draw number of ``A`` steps when
        ``return_steps`` is true.  Refused up front (ValueError) when the expected number of ``A``
        steps, ``size (1 - eps) / eps``, exceeds ``max_steps`` (:func:`check_draw_cost`).
        """
        size = check_int(size, "size", low=0)
        check_draw_cost((1.0 - self.eps) / self.eps, size, max_steps, f"eps = {self.eps:g}")
        draws, steps = exact_doeblin_draws(self._cdf_A, self._cdf_u, self.eps, size, kernel_seed(seed))
        return (draws, steps) if return_steps else draws


def cyclic_stage_chain(deltas) -> np.ndarray:
    """Stage chain of Cor. 3.7: ``C[i, i] = 1 - delta_i``, ``C[i, (i + 1) mod k] = delta_i``."""
    deltas = as_float_array(deltas, "deltas", ndim=1)
    if deltas.shape[0] < 2 or np.any(deltas <= 0) or np.any(deltas > 1):
        raise ValueError(f"deltas must hold at least 2 values in (0, 1], got {deltas}")
    k = deltas.shape[0]
    C = np.diag(1.0 - deltas)
    C[np.arange(k), (np.arange(k) + 1) % k] += deltas
    return C


def cyclic_stage_gap_bound(deltas) -> float | None:
    """Cor. 3.7's spectral-gap lower bound ``delta_{k-1} / 78`` for the cyclic stage chain
    :func:`cyclic_stage_chain` with restart stage 0, or None when its condition
    ``delta_{k-1} <= min(delta_0..delta_{k-2}) / max(2, k - 1)`` fails."""
    deltas = as_float_array(deltas, "deltas", ndim=1)
    k = deltas.shape[0]
    if deltas[-1] <= deltas[:-1].min() / max(2, k - 1):
        return float(deltas[-1] / 78.0)
    return None


def _reaches(C: np.ndarray, target: int) -> np.ndarray:
    """Stages from which ``target`` is reachable under ``C`` (backward breadth-first search)."""
    k = C.shape[0]
    seen = np.zeros(k, dtype=bool)
    seen[target] = True
    frontier = [target]
    while frontier:
        j = frontier.pop()
        for i in np.nonzero(C[:, j] > 0)[0]:
            if not seen[i]:
                seen[i] = True
                frontier.append(int(i))
    return seen


class StagedDoeblinChain:
    """Staged strong Doeblin chain on (stage z, state y) (Sec. 3.1, Thm. 3.6, Cor. 3.7).

    A step draws ``z_t ~ C(. | z_{t-1})`` and then ``y_t ~ A_{z_t}(. | y_{t-1})``; the restart stage
    ``z*`` has ``A_{z*}(. | y') = u`` for every ``y'``.  Row-stochastic convention throughout; the
    joint state (z, y) has flat index ``z * n + y``.

    Parameters
    ----------
    C : array_like, shape (k, k)
        Row-stochastic stage chain; the restart stage must be reachable from every stage.
    kernels : sequence of k arrays
        ``kernels[z]`` is the (n, n) row-stochastic kernel of stage z; ``kernels[restart_stage]``
        may instead be the restart law ``u`` itself (shape (n,)), or an (n, n) matrix whose rows
        all equal ``u``.
    restart_stage : int
        ``z*``.

    Examples
    --------
    >>> import numpy as np
    >>> from doeblin import StagedDoeblinChain, cyclic_stage_chain
    >>> A1 = np.array([[0.9, 0.1], [0.1, 0.9]]); A2 = np.array([[0.5, 0.5], [0.0, 1.0]])
    >>> chain = StagedDoeblinChain(cyclic_stage_chain([1.0, 0.3, 0.1]), [np.array([0.5, 0.5]), A1, A2], 0)
    >>> y = chain.sample_stationary(100, seed=1)
    """

    def __init__(self, C, kernels, restart_stage: int):
        self.C = check_stochastic(C, "C")
        self.n_stages = self.C.shape[0]
        if len(kernels) != self.n_stages:
            raise ValueError(f"kernels must hold one kernel per stage ({self.n_stages}), got {len(kernels)}")
        self.restart_stage = check_int(restart_stage, "restart_stage", low=0, high=self.n_stages - 1)
        restart = np.asarray(kernels[self.restart_stage], dtype=np.float64)
        if restart.ndim == 1:
            self.u = check_restart_law(restart, f"kernels[{self.restart_stage}]")
        else:
            restart = check_stochastic(restart, f"kernels[{self.restart_stage}]")
            if not np.allclose(restart, restart[:1], atol=1e-12, rtol=0):
                raise ValueError(f"kernels[{self.restart_stage}] (the restart stage) must not depend on the "
                                 "previous state: all its rows must equal the restart law u")
            self.u = restart[0].copy()
        n = self.u.shape[0]
        self.n_states = n
        stack = np.empty((self.n_stages, n, n))
        for z, K in enumerate(kernels):
            stack[z] = self.u[None, :] if z == self.restart_stage else check_stochastic(K, f"kernels[{z}]", n=n)
        self.kernels = stack
        reach = _reaches(self.C, self.restart_stage)
        if not reach.all():
            raise ValueError(f"C must reach the restart stage {self.restart_stage} from every stage; "
                             f"stages {np.nonzero(~reach)[0].tolist()} never restart")
        self.stage_stationary = stationary_gth(self.C)
        rho = self.stage_stationary
        # time reversal of the stage chain, C_rev[i, j] = rho_j C[j, i] / rho_i (stages with rho > 0)
        safe = np.where(rho > 0, rho, 1.0)
        C_rev = (self.C.T * rho[None, :]) / safe[:, None]
        C_rev[rho <= 0] = np.eye(self.n_stages)[rho <= 0]
        self._C_rev = C_rev
        self._cdf_rho = cumulative_rows(rho)
        self._cdf_C = cumulative_rows(self.C)
        self._cdf_C_rev = cumulative_rows(C_rev)
        self._cdf_kernels = cumulative_rows(self.kernels)

    def expected_draw_cost(self) -> float:
        """Mean kernel applications of one exact draw (:meth:`sample_stationary`), the restart included.

        ``1 + sum_z rho_z h_z`` with ``h`` the mean hitting time of the restart stage in the time-reversed
        stage chain (``h_{z*} = 0``, ``h_z = 1 + sum_w C_rev[z, w] h_w``): the walk back from ``z_0 ~ rho``.
        """
        k, star = self.n_stages, self.restart_stage
        rho = self.stage_stationary
        others = np.array([z for z in range(k) if z != star and rho[z] > 0], dtype=np.int64)  # z_0 ~ rho
        h = np.zeros(k)
        if others.size:
            sub = self._C_rev[np.ix_(others, others)]
            h[others] = np.linalg.solve(np.eye(others.size) - sub, np.ones(others.size))
        return float(1.0 + rho @ h)

    def transition_matrix(self) -> np.ndarray:
        """Joint kernel ``M[(z, y), (z', y')] = C[z, z'] A_{z'}[y, y']``, shape (k n, k n)."""
        k, n = self.n_stages, self.n_states
        M = self.C[:, None, :, None] * np.transpose(self.kernels, (1, 0, 2))[None, :, :, :]
        return M.reshape(k * n, k * n)

    def stationary(self, joint: bool = False) -> np.ndarray:
        """Stationary law: the y-marginal (n,), or the joint (k, n) when ``joint`` is true (GTH)."""
        pi = stationary_gth(self.transition_matrix()).reshape(self.n_stages, self.n_states)
        return pi if joint else pi.sum(axis=0)

    def spectral_gap(self) -> float:
        """``1 - |lambda_2|`` of the joint kernel (Thm. 3.6 / Cor. 3.7 bound it from below)."""
        return spectral_gap(self.transition_matrix())

    def tv_to_stationarity(self, t_max: int) -> np.ndarray:
        """Worst-case joint TV distance to stationarity after t = 0..t_max steps."""
        t_max = check_int(t_max, "t_max", low=0)
        return tv_curve(self.transition_matrix(), self.stationary(joint=True).ravel(), t_max)

    def simulate(self, n_steps: int, *, seed=None, z0: int | None = None, y0: int | None = None):
        """Run the joint chain; returns ``(z_path, y_path)`` of length ``n_steps + 1``.

        The start defaults to ``(z*, y ~ u)``.
        """
        n_steps = check_int(n_steps, "n_steps", low=0)
        zs = -1 if z0 is None else check_int(z0, "z0", low=0, high=self.n_stages - 1)
        ys = -1 if y0 is None else check_int(y0, "y0", low=0, high=self.n_states - 1)
        return simulate_staged(self._cdf_C, self._cdf_kernels, self.restart_stage, zs, ys, n_steps,
                               kernel_seed(seed))

    def sample_stationary(self, size: int, *, seed=None, return_stages: bool = False,
                          return_steps: bool = False, max_steps: int = MAX_EXPECTED_STEPS):
        """Exact i.i.d. draws from the stationary law: ``z_0 ~ rho``, walk the reversed stage chain
        back to the last visit of ``z*``, draw ``y ~ u`` there and run the stage kernels forward.

        Returns y (size,) int64; with ``return_stages`` also z; with ``return_steps`` also the
        kernel applications per draw (the restart counts as one).  Refused up front (ValueError) when
        the expected cost, ``size`` times :meth:`expected_draw_cost` kernel applications, exceeds
        ``max_steps``.
        """
        size = self._check_draws(size, max_steps)
        z, y, steps = exact_staged_draws(self._cdf_rho, self._cdf_C_rev, self._cdf_kernels,
                                         self.restart_stage, size, kernel_seed(seed))
        return staged_draws_result(y, z, steps, return_stages, return_steps)

    def _check_draws(self, size: int, max_steps) -> int:
        """``size`` validated, and refused (ValueError) when ``size`` exact draws would cost more than
        ``max_steps`` kernel applications in expectation (:meth:`expected_draw_cost` each)."""
        size = check_int(size, "size", low=0)
        check_draw_cost(self.expected_draw_cost(), size, max_steps,
                        f"the stage chain C (restart stage {self.restart_stage}, stationary mass "
                        f"{self.stage_stationary[self.restart_stage]:.3g})")
        return size


def staged_draws_result(y, z, steps, return_stages: bool, return_steps: bool):
    """What a staged chain's ``sample_stationary`` returns: ``y``, followed by the stages ``z`` and the
    kernel applications ``steps`` when asked for (a tuple then)."""
    out = [y]
    if return_stages:
        out.append(z)
    if return_steps:
        out.append(steps)
    return out[0] if len(out) == 1 else tuple(out)

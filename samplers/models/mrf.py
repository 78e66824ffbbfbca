"""Pairwise discrete Markov random fields: validation, exact answers (enumeration or variable
elimination), Gibbs sampling.

The model over ``x = (x_1, ..., x_n)`` with ``x_i in {0, ..., n_states_i - 1}`` is

    log p(x) = sum_i unary[i, x_i] + sum_e pairwise[e, x_{u_e}, x_{v_e}] - log Z,

with ``edges[e] = (u_e, v_e)``.  Everything is in log space.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any, Literal, overload

import numpy as np
from scipy.special import logsumexp

from ..rng import as_generator, kernel_seed, kernel_seeds
from ..validation import as_float_array, as_int_array, check_float, check_int
from ._kernels import MRFArrays, gibbs_chains
from .elimination import EliminationPlan, default_memory_cap, eliminate, plan_elimination

#: Default refusal threshold of ``method="elimination"``: entries of the largest cluster table.
MAX_TABLE_ENTRIES = 2**24

#: Default refusal threshold of the enumeration methods (number of joint states).
MAX_ENUMERATION_STATES = 2**22
_CHUNK = 2**16
#: ``method="auto"`` enumerates models with at most this many joint states and eliminates otherwise.
AUTO_ENUMERATION_STATES = 2**10
EXACT_METHODS = ("auto", "enumeration", "elimination")


def _count(n: int) -> str:
    """A joint-state count for messages: exact below 10^15, else ``about 10^k``."""
    return str(n) if n < 10**15 else f"about 10^{len(str(n)) - 1}"


class PairwiseMRF:
    """A pairwise discrete MRF in log space.

    Parameters
    ----------
    unary : array_like, shape (n_vars, n_states)
        Log unary potentials ``unary[i, k]`` (finite).
    edges : array_like of int, shape (E, 2)
        Undirected edges ``(u, v)`` with ``0 <= u, v < n_vars`` and ``u != v``.  ``E = 0`` is allowed
        (pass ``np.zeros((0, 2), int)``).
    pairwise : array_like, shape (E, n_states, n_states)
        Log pairwise potentials: ``pairwise[e, k, l]`` is added when ``x_u = k`` and ``x_v = l``.
    n_states : int or array_like of int, shape (n_vars,), optional
        Per-variable number of states, each in ``[1, unary.shape[1]]``; states ``k >= n_states[i]``
        have probability zero (their potentials are ignored).  Default: every variable takes all
        ``unary.shape[1]`` states.

    Raises
    ------
    ValueError
        Zero or negative state counts, non-finite potentials, edges out of range, self loops,
        or shapes that do not match; the message names the argument.

    Examples
    --------
    >>> import numpy as np
    >>> from samplers.models import PairwiseMRF
    >>> mrf = PairwiseMRF(np.zeros((2, 2)), [[0, 1]], [[[1.0, 0.0], [0.0, 1.0]]])
    >>> round(mrf.log_partition_exact(), 6)  # log(e + 1 + 1 + e) = log(2e + 2)
    2.006409
    """

    def __init__(self, unary: Any, edges: Any, pairwise: Any, *, n_states: Any = None):
        unary = as_float_array(unary, "unary", ndim=2)
        n_vars, k_max = unary.shape
        if n_vars < 1:
            raise ValueError(f"unary must have at least one variable (row), got shape {unary.shape}")
        if k_max < 1:
            raise ValueError(f"unary must have a positive number of states (columns), got shape {unary.shape}")
        edges = np.asarray(edges)
        if edges.size == 0:
            edges = np.zeros((0, 2), dtype=np.int64)
        edges = as_int_array(edges, "edges", ndim=2, low=0, high=n_vars)
        if edges.shape[1] != 2:
            raise ValueError(f"edges must have shape (E, 2), got {edges.shape}")
        loops = np.flatnonzero(edges[:, 0] == edges[:, 1])
        if loops.size:
            raise ValueError(f"edges must not contain self loops; edge {loops[0]} is {tuple(edges[loops[0]])}")
        pairwise = np.asarray(pairwise, dtype=np.float64) if np.size(pairwise) else np.zeros((0, k_max, k_max))
        pairwise = as_float_array(pairwise, "pairwise", ndim=3)
        if pairwise.shape != (edges.shape[0], k_max, k_max):
            raise ValueError(f"pairwise must have shape (E, n_states, n_states) = {(edges.shape[0], k_max, k_max)}"
                             f" to match edges and unary, got {pairwise.shape}")
        if n_states is None:
            counts = np.full(n_vars, k_max, dtype=np.int64)
        elif np.ndim(n_states) == 0:
            counts = np.full(n_vars, check_int(n_states, "n_states", low=1, high=k_max), dtype=np.int64)
        else:
            counts = as_int_array(n_states, "n_states", ndim=1, low=1, high=k_max + 1)
            if counts.shape != (n_vars,):
                raise ValueError(f"n_states must have shape (n_vars,) = ({n_vars},), got {counts.shape}")
        # private C-contiguous copies, read-only: kernels always see the same array types
        self.unary = np.array(unary, dtype=np.float64, order="C")
        self.edges = np.array(edges, dtype=np.int64, order="C")
        self.pairwise = np.array(pairwise, dtype=np.float64, order="C")
        self.n_states = counts
        for arr in (self.unary, self.edges, self.pairwise, self.n_states):
            arr.flags.writeable = False

    # -- shape ---------------------------------------------------------------------------------
    @property
    def n_vars(self) -> int:
        """Number of variables."""
        return self.unary.shape[0]

    @property
    def max_states(self) -> int:
        """Largest number of states of any variable (``unary.shape[1]``)."""
        return self.unary.shape[1]

    @property
    def n_edges(self) -> int:
        """Number of edges."""
        return self.edges.shape[0]

    @property
    def n_configurations(self) -> int:
        """Number of joint states, ``prod_i n_states[i]`` (a Python int, exact)."""
        return math.prod(int(k) for k in self.n_states)

    def __repr__(self) -> str:
        return f"PairwiseMRF(n_vars={self.n_vars}, max_states={self.max_states}, n_edges={self.n_edges})"

    # -- derived arrays (cached, read-only) ----------------------------------------------------
    @cached_property
    def log_unary(self) -> np.ndarray:
        """``unary`` with ``-inf`` for states a variable cannot take (what the kernels use)."""
        masked = self.unary.copy()
        masked[np.arange(self.max_states)[None, :] >= self.n_states[:, None]] = -np.inf
        masked.flags.writeable = False
        return masked

    @cached_property
    def neighbours(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CSR incidence structure ``(nbr_ptr, nbr_var, nbr_pot)`` for the Gibbs kernels.

        ``nbr_pot[m, k, l]`` is the log potential of the m-th incidence when the owning variable is
        ``k`` and its neighbour ``nbr_var[m]`` is ``l`` (edges appear once per orientation).
        """
        u, v = self.edges[:, 0], self.edges[:, 1]
        owner = np.concatenate([u, v])
        other = np.concatenate([v, u])
        pots = np.concatenate([self.pairwise, self.pairwise.transpose(0, 2, 1)])
        order = np.argsort(owner, kind="stable")
        ptr = np.zeros(self.n_vars + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner, minlength=self.n_vars), out=ptr[1:])
        return ptr, np.ascontiguousarray(other[order]), np.ascontiguousarray(pots[order])

    # -- evaluation ----------------------------------------------------------------------------
    def check_configurations(self, x: Any, name: str = "x") -> np.ndarray:
        """Validate integer configurations of shape (..., n_vars) with ``0 <= x[..., i] < n_states[i]``."""
        arr = as_int_array(x, name, low=0)
        if arr.ndim < 1 or arr.shape[-1] != self.n_vars:
            raise ValueError(f"{name} must have shape (..., n_vars) with n_vars = {self.n_vars}, got {arr.shape}")
        bad = arr >= self.n_states
        if np.any(bad):
            idx = tuple(np.argwhere(bad)[0])
            raise ValueError(f"{name}{list(idx)} = {arr[idx]} is not a state of variable {idx[-1]} "
                             f"(it has {self.n_states[idx[-1]]} states)")
        return arr

    def _unary_part(self, x: np.ndarray) -> np.ndarray:
        """Unchecked ``sum_i unary[i, x_i]`` for int configurations of shape (..., n_vars)."""
        return self.unary[np.arange(self.n_vars), x].sum(axis=-1)

    def _pairwise_part(self, x: np.ndarray) -> np.ndarray:
        """Unchecked ``sum_e pairwise[e, x_u, x_v]`` for int configurations of shape (..., n_vars)."""
        u, v = self.edges[:, 0], self.edges[:, 1]
        return self.pairwise[np.arange(self.n_edges), x[..., u], x[..., v]].sum(axis=-1)

    def _log_potentials(self, x: np.ndarray) -> np.ndarray:
        """Unchecked ``unary(x) + pairwise(x)``."""
        return self._unary_part(x) + self._pairwise_part(x)

    def log_unnormalized(self, x: Any) -> np.ndarray | float:
        """Unnormalised log probability ``sum_i unary[i, x_i] + sum_e pairwise[e, x_u, x_v]``.

        Parameters
        ----------
        x : array_like of int, shape (..., n_vars)
            One configuration or a batch.

        Returns
        -------
        float or ndarray of shape (...)
        """
        arr = self.check_configurations(x)
        out = self._log_potentials(arr)
        return float(out) if arr.ndim == 1 else out

    def pairwise_log_potential(self, x: Any) -> np.ndarray | float:
        """The pairwise part ``sum_e pairwise[e, x_u, x_v]`` of :meth:`log_unnormalized` (batched)."""
        arr = self.check_configurations(x)
        out = self._pairwise_part(arr)
        return float(out) if arr.ndim == 1 else out

    # -- related models ------------------------------------------------------------------------
    def unary_only(self) -> "PairwiseMRF":
        """The same variables and unary potentials without edges (the AIS starting model)."""
        return PairwiseMRF(self.unary, np.zeros((0, 2), dtype=np.int64), np.zeros((0, self.max_states, self.max_states)),
                           n_states=self.n_states)

    def tempered(self, beta: float) -> "PairwiseMRF":
        """The model ``unary + beta * pairwise`` on the geometric path from :meth:`unary_only` (beta = 0)
        to this model (beta = 1): ``f_beta = f_0^(1 - beta) f_1^beta`` since ``f_1 / f_0 = exp(pairwise)``.
        """
        beta = check_float(beta, "beta", low=0.0)
        return PairwiseMRF(self.unary, self.edges, beta * self.pairwise, n_states=self.n_states)

    def log_partition_unary_only(self) -> float:
        """Exact log Z of :meth:`unary_only`: ``sum_i logsumexp_k unary[i, k]`` (no enumeration)."""
        return float(np.sum(logsumexp(self.log_unary, axis=1)))

    # -- exact answers by enumeration --------------------------------------------------------------
    def _check_enumerable(self, max_states: int) -> None:
        max_states = check_int(max_states, "max_states", low=1)
        if self.n_configurations > max_states:
            raise ValueError(f"exact enumeration refused: the model has {self.n_configurations} joint states "
                             f"(n_vars={self.n_vars}), more than max_states={max_states}; use AIS or Gibbs instead")

    def _configurations(self, start: int, stop: int) -> np.ndarray:
        """Configurations with mixed-radix indices ``start .. stop-1`` (variable 0 varies slowest)."""
        idx = np.arange(start, stop, dtype=np.int64)
        out = np.empty((idx.size, self.n_vars), dtype=np.int64)
        for i in range(self.n_vars - 1, -1, -1):
            idx, out[:, i] = np.divmod(idx, self.n_states[i])
        return out

    @cached_property
    def _exact(self) -> tuple[float, np.ndarray]:
        """(log Z, marginals) in one chunked pass over all configurations (unchecked size)."""
        log_z = -np.inf
        marg = np.zeros((self.n_vars, self.max_states))
        total = self.n_configurations
        for start in range(0, total, _CHUNK):
            x = self._configurations(start, min(start + _CHUNK, total))
            lp = self._log_potentials(x)
            chunk_lz = float(logsumexp(lp))
            w = np.exp(lp - chunk_lz)
            chunk_marg = np.stack([np.bincount(x[:, i], weights=w, minlength=self.max_states)
                                   for i in range(self.n_vars)])
            new_lz = float(np.logaddexp(log_z, chunk_lz))
            marg = marg * np.exp(log_z - new_lz) + chunk_marg * np.exp(chunk_lz - new_lz)
            log_z = new_lz
        marg /= marg.sum(axis=1, keepdims=True)
        marg.flags.writeable = False
        return log_z, marg

    @property
    def factors(self) -> tuple[list, list]:
        """``(scopes, log_tables)``: one unary factor per variable, one pairwise factor per edge (the
        factor-graph view the elimination runs on)."""
        k = self.n_states
        scopes = [(i,) for i in range(self.n_vars)] + [(int(u), int(v)) for u, v in self.edges]
        tables = [self.unary[i, :k[i]] for i in range(self.n_vars)]
        tables += [self.pairwise[e, :k[u], :k[v]] for e, (u, v) in enumerate(self.edges)]
        return scopes, tables

    @cached_property
    def elimination_plan(self) -> EliminationPlan:
        """The elimination order of least total work among min-fill, weighted min-fill and min-degree,
        with its width and table sizes (:func:`samplers.models.elimination.plan_elimination`)."""
        return plan_elimination(self.n_states, self.factors[0])

    def exact_method(self, *, method: str = "auto", max_states: int = MAX_ENUMERATION_STATES,
                     max_table_entries: int = MAX_TABLE_ENTRIES) -> str:
        """The exact method :meth:`log_partition_exact` and :meth:`marginals_exact` use: ``"enumeration"``
        or ``"elimination"``.

        ``method="auto"`` enumerates tiny models (at most :data:`AUTO_ENUMERATION_STATES` joint states)
        and eliminates variables otherwise (junction tree, :mod:`samplers.models.elimination`) when
        the largest cluster table of the best order found has at most ``max_table_entries`` entries.

        Raises
        ------
        ValueError
            When the chosen (or only) method does not fit: enumeration beyond ``max_states`` joint
            states, elimination beyond ``max_table_entries`` (the message names the width of the
            best order found, an upper bound of the treewidth).
        """
        if method not in EXACT_METHODS:
            raise ValueError(f"method must be one of {EXACT_METHODS}, got {method!r}")
        max_table_entries = check_int(max_table_entries, "max_table_entries", low=1)
        if method == "enumeration" or (method == "auto" and self.n_configurations <= AUTO_ENUMERATION_STATES):
            self._check_enumerable(max_states)
            return "enumeration"
        plan = self.elimination_plan
        if plan.max_table_entries > max_table_entries:
            raise ValueError(
                f"exact inference refused: the best elimination order found ({plan.heuristic}) has width "
                f"{plan.width} (treewidth <= {plan.width}), so its largest cluster table has "
                f"{plan.max_table_entries} entries, more than max_table_entries={max_table_entries}; "
                f"enumeration would need {_count(self.n_configurations)} joint states; use AIS or Gibbs instead")
        return "elimination"

    @overload
    def _eliminated(self, marginals: Literal[True]) -> tuple[float, np.ndarray]: ...

    @overload
    def _eliminated(self, marginals: Literal[False]) -> tuple[float, None]: ...

    def _eliminated(self, marginals: bool) -> tuple[float, np.ndarray | None]:
        """(log Z, marginals or None) by elimination along :attr:`elimination_plan`, cached per kind;
        the marginals pass refuses (naming width and memory) beyond a quarter of the machine's memory."""
        key = "_eliminated_marginals" if marginals else "_eliminated_log_z"
        if key not in self.__dict__:
            log_z, per_variable = eliminate(self.n_states, *self.factors, self.elimination_plan, marginals=marginals,
                                            memory_cap=default_memory_cap())
            marg = None
            if per_variable is not None:  # asked for: marginals=True
                marg = np.zeros((self.n_vars, self.max_states))
                for v, m in enumerate(per_variable):
                    marg[v, :m.size] = m
                marg.flags.writeable = False
            self.__dict__[key] = (log_z, marg)
        return self.__dict__[key]

    def log_partition_exact(self, *, method: str = "auto", max_states: int = MAX_ENUMERATION_STATES,
                            max_table_entries: int = MAX_TABLE_ENTRIES) -> float:
        """Exact ``log Z = logsumexp_x log_unnormalized(x)``.

        By chunked, vectorised enumeration for tiny models, otherwise by variable elimination in log
        space (chains, trees, grids up to width about 20 for binary variables): see
        :meth:`exact_method` for the choice and the refusals.

        Parameters
        ----------
        method : {"auto", "enumeration", "elimination"}
            The exact algorithm; ``"auto"`` picks as :meth:`exact_method` does.
        max_states : int
            Refusal threshold of enumeration (joint states, default ``2**22``).
        max_table_entries : int
            Refusal threshold of elimination (entries of the largest cluster table, default ``2**24``).
        """
        if self.exact_method(method=method, max_states=max_states, max_table_entries=max_table_entries) == \
                "enumeration":
            return self._exact[0]
        if "_eliminated_marginals" in self.__dict__:
            return self.__dict__["_eliminated_marginals"][0]
        return self._eliminated(marginals=False)[0]

    def marginals_exact(self, *, method: str = "auto", max_states: int = MAX_ENUMERATION_STATES,
                        max_table_entries: int = MAX_TABLE_ENTRIES) -> np.ndarray:
        """Exact single-site marginals ``p(x_i = k)``, shape (n_vars, max_states).

        Entries for states a variable cannot take are 0.  Same method choice as
        :meth:`log_partition_exact` (the two share one cached pass); elimination runs the junction
        tree's downward pass too, and refuses (naming the width and the memory needed) when all its tables
        together exceed a quarter of the machine's memory.
        """
        if self.exact_method(method=method, max_states=max_states, max_table_entries=max_table_entries) == \
                "enumeration":
            return self._exact[1].copy()
        return self._eliminated(marginals=True)[1].copy()

    def sample_exact(self, n_samples: int, seed: Any = None, *,
                     max_states: int = MAX_ENUMERATION_STATES) -> np.ndarray:
        """Independent exact draws by enumeration (a brute-force oracle for tests), shape (n_samples, n_vars)."""
        n_samples = check_int(n_samples, "n_samples", low=1)
        self._check_enumerable(max_states)
        x = self._configurations(0, self.n_configurations)
        p = np.exp(self._log_potentials(x) - self._exact[0])
        idx = as_generator(seed).choice(x.shape[0], size=n_samples, p=p / p.sum())
        return x[idx]

    def configuration_index(self, x: Any) -> np.ndarray:
        """Mixed-radix index of configurations (inverse of the enumeration order), shape (...)."""
        arr = self.check_configurations(x)
        idx = np.zeros(arr.shape[:-1], dtype=np.int64)
        for i in range(self.n_vars):
            idx = idx * self.n_states[i] + arr[..., i]
        return idx

    def probabilities_exact(self, *, max_states: int = MAX_ENUMERATION_STATES) -> np.ndarray:
        """Exact probability of every configuration, in :meth:`configuration_index` order."""
        self._check_enumerable(max_states)
        x = self._configurations(0, self.n_configurations)
        return np.exp(self._log_potentials(x) - self._exact[0])

    def marginals_from_samples(self, samples: Any) -> np.ndarray:
        """Empirical single-site marginals of configurations shaped (..., n_vars): (n_vars, max_states).

        ``out[i, k]`` is the fraction of samples with ``x_i = k`` (e.g. of :meth:`gibbs_sample` output).
        """
        arr = self.check_configurations(samples, "samples").reshape(-1, self.n_vars)
        if arr.shape[0] == 0:
            raise ValueError("samples must hold at least one configuration")
        counts = np.stack([np.bincount(arr[:, i], minlength=self.max_states) for i in range(self.n_vars)])
        return counts / arr.shape[0]

    # -- sampling ------------------------------------------------------------------------------
    def gibbs_sample(self, n_sweeps: int, n_chains: int = 1, seed: Any = None, *, init: Any = None,
                     burn_in: int = 0, thin: int = 1, beta: float = 1.0) -> np.ndarray:
        """Systematic-scan Gibbs sampling with a Numba sweep over the CSR neighbour structure.

        Parameters
        ----------
        n_sweeps : int
            Sweeps per chain (each sweep redraws every variable once from its full conditional).
        n_chains : int
            Independent chains, each with its own child seed.
        seed : int, Generator or None
            Randomness (SPEC 7); also used for random initial states.
        init : array_like of int, shape (n_vars,) or (n_chains, n_vars), optional
            Initial states; default: independent draws from the unary-only model.
        burn_in : int
            Sweeps discarded before recording, ``0 <= burn_in < n_sweeps``.
        thin : int
            Record every ``thin``-th sweep after the burn-in.
        beta : float
            Inverse temperature of the pairwise part (sample the :meth:`tempered` model).

        Returns
        -------
        ndarray of int64, shape (n_chains, (n_sweeps - burn_in) // thin, n_vars)
        """
        n_sweeps = check_int(n_sweeps, "n_sweeps", low=1)
        n_chains = check_int(n_chains, "n_chains", low=1)
        burn_in = check_int(burn_in, "burn_in", low=0, high=n_sweeps - 1)
        thin = check_int(thin, "thin", low=1, high=n_sweeps - burn_in)
        beta = check_float(beta, "beta", low=0.0)
        gen = as_generator(seed)
        if init is None:
            init = self.sample_independent(n_chains, gen)
        else:
            init = self.check_configurations(init, "init")
            if init.ndim == 1:
                init = np.broadcast_to(init, (n_chains, self.n_vars))
            if init.shape != (n_chains, self.n_vars):
                raise ValueError(f"init must have shape (n_vars,) or (n_chains, n_vars) = {(n_chains, self.n_vars)}, "
                                 f"got {init.shape}")
        return gibbs_chains(np.array(init, dtype=np.int64, order="C"), MRFArrays(self.log_unary, *self.neighbours),
                            beta, n_sweeps, burn_in, thin, kernel_seeds(kernel_seed(gen), n_chains))

    def sample_independent(self, n_samples: int, seed: Any = None) -> np.ndarray:
        """Exact draws of the *unary-only* model (each variable independent), shape (n_samples, n_vars)."""
        n_samples = check_int(n_samples, "n_samples", low=1)
        gen = as_generator(seed)
        probs = np.exp(self.log_unary - logsumexp(self.log_unary, axis=1, keepdims=True))
        u = gen.random((n_samples, self.n_vars, 1))
        cdf = np.cumsum(probs, axis=1)
        x = (u > cdf[None, :, :]).sum(axis=2)
        return np.minimum(x, self.n_states - 1)

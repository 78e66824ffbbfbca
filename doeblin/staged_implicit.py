"""Staged strong Doeblin chains over label sequences, with Numba hot loops (Sec. 3.1).

:class:`SequenceStagedDoeblinChain` is the structured counterpart of
:class:`~doeblin.chains.StagedDoeblinChain`: the joint state is (stage z, sequence y) with
y in {0..K-1}^L; a step draws ``z_t ~ C(. | z_{t-1})`` and then moves y by the base kernel of stage
``z_t``.  Each stage's kernel is one of

``"restart"``
    ``y ~ u_theta(. | x)`` (the factorised restart law of :class:`~doeblin.implicit.SequenceModel`);
    the restart stage ``z*`` must use it.
``"gibbs"``
    one random-scan Gibbs step of the richer model (the ``A_theta`` of the strong chain).
``"sweep"``
    one systematic-scan Gibbs sweep (positions 0..L-1 in order) of the same model: L site updates
    per application, a faster-mixing stage.
``"identity"``
    y unchanged (a waiting stage; it only reshapes the stage clock).

Exact stationary draws walk the time-reversed stage chain back to the last restart (the
construction behind Thm. 3.6), all inside one Numba loop (:func:`doeblin.core.exact_staged_draws` with the sequence model's stage kernels).
:meth:`SequenceStagedDoeblinChain.as_finite` enumerates the K^L sequences and returns the equivalent
finite :class:`~doeblin.chains.StagedDoeblinChain`, which tests compare against.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from samplers.rng import as_generator, kernel_seed
from samplers.validation import check_int

from ._seq_kernels import (
    KIND_GIBBS,
    KIND_IDENTITY,
    KIND_RESTART,
    KIND_SWEEP,
    seq_staged_draws,
    seq_staged_simulate,
    sequence_chain,
    sweep_prob,
)
from .chains import MAX_EXPECTED_STEPS, StagedDoeblinChain, staged_draws_result
from .implicit import SequenceDoeblinChain, SequenceModel
from .markov import check_stochastic

STAGE_KERNELS = {"restart": KIND_RESTART, "gibbs": KIND_GIBBS, "sweep": KIND_SWEEP,
                 "identity": KIND_IDENTITY}


class SequenceStagedDoeblinChain:
    """Staged strong Doeblin chain over label sequences (Sec. 3.1, Thm. 3.6, Cor. 3.7).

    Row-stochastic convention as in :mod:`doeblin.chains`: ``C[i, j] = P(z_{t+1} = j | z_t = i)``.

    Parameters
    ----------
    model : SequenceModel
        Restart law ``u_theta`` (``W_u``) and the Gibbs kernels' model (``W_A``, ``P``).
    x : array_like, shape (L, D)
        Per-position input features.
    C : array_like, shape (k, k)
        Row-stochastic stage chain; the restart stage must be reachable from every stage.
    stage_kernels : sequence of k str
        Kernel of each stage, from ``"restart"``, ``"gibbs"``, ``"sweep"``, ``"identity"``;
        ``stage_kernels[restart_stage]`` must be ``"restart"``.
    restart_stage : int
        ``z*``.

    Examples
    --------
    >>> import numpy as np
    >>> from doeblin import SequenceStagedDoeblinChain, cyclic_stage_chain
    >>> from doeblin.implicit import SequenceModel
    >>> rng = np.random.default_rng(0)
    >>> model = SequenceModel(rng.normal(size=(2, 3)), rng.normal(size=(2, 3)), rng.normal(size=(3, 3)))
    >>> chain = SequenceStagedDoeblinChain(model, rng.normal(size=(4, 2)), cyclic_stage_chain([1.0, 0.3, 0.1]),
    ...                                    ["restart", "gibbs", "sweep"], restart_stage=0)
    >>> chain.sample_stationary(5, seed=1).shape
    (5, 4)
    """

    def __init__(self, model: SequenceModel, x, C, stage_kernels: Sequence[str], restart_stage: int):
        self._base = SequenceDoeblinChain(model, x, 1.0)   # validates model and x; reused by as_finite
        self.model, self.x = model, self._base.x
        if isinstance(stage_kernels, str) or not all(isinstance(s, str) for s in stage_kernels):
            raise TypeError(f"stage_kernels must be a sequence of kernel names {sorted(STAGE_KERNELS)}, "
                            f"got {stage_kernels!r}")
        unknown = [s for s in stage_kernels if s not in STAGE_KERNELS]
        if unknown:
            raise ValueError(f"stage_kernels must use the names {sorted(STAGE_KERNELS)}, got {unknown}")
        # The stage process alone is a staged chain on a single y-state: reuse its validation of C and
        # restart_stage (stochastic, in range, restart reachable) and its stationary / reversed cdfs.
        C = check_stochastic(C, "C")
        if len(stage_kernels) != C.shape[0]:
            raise ValueError(f"stage_kernels must name one kernel per stage of C ({C.shape[0]}), "
                             f"got {len(stage_kernels)}")
        self._stages = StagedDoeblinChain(C, [np.ones((1, 1))] * C.shape[0], restart_stage)
        self.C = self._stages.C
        self.n_stages = self._stages.n_stages
        self.restart_stage = self._stages.restart_stage
        if stage_kernels[self.restart_stage] != "restart":
            raise ValueError(f"stage_kernels[{self.restart_stage}] (the restart stage) must be 'restart', "
                             f"got {stage_kernels[self.restart_stage]!r}")
        self.stage_kernels = tuple(stage_kernels)
        self._kinds = np.array([STAGE_KERNELS[s] for s in stage_kernels], dtype=np.int64)
        self.stage_stationary = self._stages.stage_stationary

    @property
    def length(self) -> int:
        """Sequence length ``L`` (rows of ``x``)."""
        return self.x.shape[0]

    def _params(self):
        m = self.model
        return sequence_chain(self.x, m.W_u, m.W_A, m.P, self._kinds)

    def simulate(self, n_steps: int, *, seed=None, z0: int | None = None, y0=None):
        """Run the joint chain for ``n_steps`` steps (one stage kernel application each).

        Returns ``(z_path (n_steps + 1,), y_path (n_steps + 1, L))``, both int64.  The start
        defaults to ``(z*, y ~ u)``.
        """
        n_steps = check_int(n_steps, "n_steps", low=0)
        z0 = self.restart_stage if z0 is None else check_int(z0, "z0", low=0, high=self.n_stages - 1)
        gen = as_generator(seed)
        if y0 is None:
            y0 = self._base.simulate(0, seed=gen)[0]
        y0 = self.model.check_y(y0, self.length)
        return seq_staged_simulate(self._params(), self._stages._cdf_C, z0, y0, n_steps, kernel_seed(gen))

    def sample_stationary(self, size: int, *, seed=None, return_stages: bool = False,
                          return_steps: bool = False, max_steps: int = MAX_EXPECTED_STEPS):
        """Exact i.i.d. draws from the stationary law (reversed stage walk to the last restart).

        Returns y (size, L) int64; with ``return_stages`` also z (size,); with ``return_steps``
        also the kernel applications per draw (the restart counts as one).  Refused up front
        (ValueError) when the expected cost exceeds ``max_steps`` kernel applications
        (:meth:`doeblin.StagedDoeblinChain.expected_draw_cost`).
        """
        st = self._stages
        size = st._check_draws(size, max_steps)
        z, y, steps = seq_staged_draws(self._params(), st._cdf_rho, st._cdf_C_rev, self.restart_stage,
                                       size, kernel_seed(seed))
        return staged_draws_result(y, z, steps, return_stages, return_steps)

    def states(self) -> np.ndarray:
        """All K^L sequences (lexicographic order), shape (K^L, L); refused beyond 4096 states."""
        return self._base.states()

    def state_index(self, y) -> np.ndarray:
        """Lexicographic index of sequences (rows of ``y``) in :meth:`states`."""
        return self._base.state_index(y)

    def stage_matrix(self, kind: str) -> np.ndarray:
        """Explicit (K^L, K^L) row-stochastic matrix of a stage kernel over :meth:`states`."""
        if kind not in STAGE_KERNELS:
            raise ValueError(f"kind must be one of {sorted(STAGE_KERNELS)}, got {kind!r}")
        S = self.states()
        n = S.shape[0]
        if kind == "identity":
            return np.eye(n)
        finite = self._base.as_finite()
        if kind == "restart":
            return np.repeat(finite.u[None, :], n, axis=0)
        if kind == "gibbs":
            return finite.A
        m, K = self.model, self.model.n_labels
        buf, logp = np.empty(K), np.empty(K)
        return np.array([[sweep_prob(self.x, m.W_A, m.P, a, b, buf, logp) for b in S] for a in S])

    def as_finite(self) -> StagedDoeblinChain:
        """The same chain as a finite :class:`StagedDoeblinChain` over :meth:`states` (small K^L only)."""
        mats = {kind: self.stage_matrix(kind) for kind in set(self.stage_kernels)}
        return StagedDoeblinChain(self.C, [mats[kind] for kind in self.stage_kernels], self.restart_stage)

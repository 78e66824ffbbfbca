"""Bad input gets a clear ValueError naming the argument."""

import numpy as np
import pytest

from doeblin import StagedDoeblinChain, StrongDoeblinChain, cyclic_stage_chain
from doeblin.implicit import SequenceModel

A = np.array([[0.5, 0.5], [0.2, 0.8]])
U = np.array([0.5, 0.5])


@pytest.mark.parametrize("eps", [0.0, -0.1, 1.5, float("nan")])
def test_eps_out_of_range(eps):
    with pytest.raises(ValueError, match="eps"):
        StrongDoeblinChain(A, U, eps)


@pytest.mark.parametrize("bad, match", [(np.array([[0.5, 0.6], [0.2, 0.8]]), "row-stochastic"),
                                        (np.array([[1.5, -0.5], [0.2, 0.8]]), "non-negative"),
                                        (np.ones((2, 3)) / 3, "square")])
def test_A_not_stochastic(bad, match):
    with pytest.raises(ValueError, match=match):
        StrongDoeblinChain(bad, U, 0.1)


def test_u_not_distribution_and_size_mismatch():
    with pytest.raises(ValueError, match="u"):
        StrongDoeblinChain(A, np.array([0.7, 0.7]), 0.1)
    with pytest.raises(ValueError, match="u must have length 2"):
        StrongDoeblinChain(A, np.full(3, 1 / 3), 0.1)


def test_staged_without_restart_stage():
    C = cyclic_stage_chain([1.0, 0.5])
    with pytest.raises(ValueError, match="restart stage"):
        StagedDoeblinChain(C, [A, A], restart_stage=0)            # stage 0 depends on the state
    with pytest.raises(ValueError, match="restart_stage"):
        StagedDoeblinChain(C, [U, A], restart_stage=2)
    with pytest.raises(ValueError, match="never restart"):
        StagedDoeblinChain(np.array([[0.5, 0.5], [0.0, 1.0]]), [U, A], restart_stage=0)
    with pytest.raises(ValueError, match="one kernel per stage"):
        StagedDoeblinChain(C, [U], restart_stage=0)
    with pytest.raises(ValueError, match=r"kernels\[1\] must be 2 x 2"):
        StagedDoeblinChain(C, [U, np.eye(3)], restart_stage=0)


def test_sequence_model_shapes():
    with pytest.raises(ValueError, match="P must be"):
        SequenceModel(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="W_A"):
        SequenceModel(np.zeros((2, 3)), np.zeros((3, 3)), np.zeros((3, 3)))

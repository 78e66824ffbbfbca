"""Bad input gets a clear ValueError/TypeError naming the argument, never a NaN."""

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import rdp  # noqa: E402

pytestmark = pytest.mark.torch

EM = torch.randn(2, 4, 5, dtype=torch.float64)
TR = torch.randn(5, 5, dtype=torch.float64)
SPANS = torch.randn(1, 4, 4, 5, dtype=torch.float64)


@pytest.mark.parametrize("k1,k2,match", [(4, 2, "k1 \\+ k2 must be <="), (-1, 2, "k1 must be >= 0"),
                                         (2, -1, "k2 must be >= 0"), (0, 0, "at least 1")])
def test_bad_budgets(k1, k2, match):
    with pytest.raises(ValueError, match=match):
        rdp.randomized_chain_log_partition(EM, TR, k1=k1, k2=k2)
    with pytest.raises(ValueError, match=match):
        rdp.randomized_chain_entropy(EM, TR, k1=k1, k2=k2)
    with pytest.raises(ValueError, match=match):
        rdp.randomized_tree_log_partition(SPANS, k1=k1, k2=k2)


def test_non_integer_budget_is_a_type_error():
    with pytest.raises(TypeError, match="k1"):
        rdp.randomized_chain_log_partition(EM, TR, k1=1.5, k2=1)


@pytest.mark.parametrize("call", [
    lambda: rdp.chain_log_partition(EM, torch.randn(4, 4)),
    lambda: rdp.chain_log_partition(EM, torch.randn(2, 4, 5, 5)),
    lambda: rdp.chain_log_partition(EM[0], TR),
    lambda: rdp.chain_log_partition(EM, None, state_embeddings=torch.randn(4, 3)),
    lambda: rdp.chain_log_partition(EM, TR, state_embeddings=torch.randn(5, 3)),
    lambda: rdp.tree_log_partition(torch.randn(1, 4, 3, 5)),
    lambda: rdp.pcfg_log_partition(torch.randn(2, 2, 3), torch.randn(1, 3, 2), torch.randn(2)),
    lambda: rdp.pcfg_log_partition(torch.randn(2, 2, 2), torch.randn(1, 3, 2), torch.randn(3)),
])
def test_shape_mismatches(call):
    with pytest.raises(ValueError, match="must"):
        call()


@pytest.mark.parametrize("lengths", [[5, 2], [0, 2], [1], [[1, 2]]])
def test_lengths_out_of_range(lengths):
    with pytest.raises(ValueError, match="lengths"):
        rdp.chain_log_partition(EM, TR, lengths)
    with pytest.raises(ValueError, match="lengths"):
        rdp.randomized_chain_log_partition(EM, TR, k1=2, k2=1, lengths=lengths)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_potentials(bad):
    em = EM.clone()
    em[1, 2, 3] = bad
    with pytest.raises(ValueError, match="emissions must be finite.*\\(1, 2, 3\\)"):
        rdp.chain_log_partition(em, TR)
    tr = TR.clone()
    tr[0, 1] = bad
    with pytest.raises(ValueError, match="transitions must be finite"):
        rdp.randomized_chain_log_partition(EM, tr, k1=2, k2=1)
    spans = SPANS.clone()
    spans[0, 1, 2, 0] = bad
    with pytest.raises(ValueError, match="span_potentials must be finite"):
        rdp.randomized_tree_log_partition(spans, k1=2, k2=1)


def test_bad_proposals():
    neg = torch.rand(2, 4, 5)
    neg[0, 1, 2] = -0.1
    with pytest.raises(ValueError, match="non-negative"):
        rdp.randomized_chain_log_partition(EM, TR, k1=2, k2=1, proposal=neg)
    zero = torch.rand(2, 4, 5)
    zero[1, 3] = 0.0
    with pytest.raises(ValueError, match="all-zero mass"):
        rdp.randomized_chain_log_partition(EM, TR, k1=2, k2=1, proposal=lambda em: zero)
    with pytest.raises(ValueError, match="shape"):
        rdp.randomized_chain_log_partition(EM, TR, k1=2, k2=1, proposal=torch.rand(3, 5))
    with pytest.raises(ValueError, match="proposal must be one of"):
        rdp.randomized_chain_log_partition(EM, TR, k1=2, k2=1, proposal="oracle")
    with pytest.raises(ValueError, match="global prior"):
        rdp.randomized_tree_log_partition(SPANS, k1=2, k2=1, proposal="local+global")


def test_other_arguments():
    with pytest.raises(ValueError, match="space"):
        rdp.randomized_chain_log_partition(EM, TR, k1=2, k2=1, space="exp")
    with pytest.raises(ValueError, match="tau"):
        rdp.chain_gumbel_sample(EM, TR, tau=0.0)
    with pytest.raises(TypeError, match="generator"):
        rdp.randomized_chain_log_partition(EM, TR, k1=2, k2=1, generator=0)
    with pytest.raises(ValueError, match="exactly one must be given"):
        rdp.chain_log_partition(EM)


def test_valid_user_proposal_is_accepted_and_normalised():
    weights = torch.rand(2, 4, 5) + 0.1
    out = rdp.randomized_chain_log_partition(EM, TR, k1=2, k2=2, proposal=weights * 7.0,
                                             generator=torch.Generator().manual_seed(0))
    assert torch.isfinite(out).all()


def test_import_error_names_the_extra_without_torch():
    # `import rdp` imports no torch (rdp registers with the harness cheaply); the first use of a function does
    code = ("import sys; sys.modules['torch'] = None\nimport rdp\n"
            "try:\n    rdp.chain_log_partition\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    assert 'pip install "mcsa[rdp]"' in out.stdout

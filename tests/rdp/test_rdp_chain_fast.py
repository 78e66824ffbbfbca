"""The scaled-space exact chain (rdp.fast_chain) against the log-space recursion and enumeration: log Z,
marginals, entropy, Viterbi, the law of Gumbel-FFBS samples (chi-square), gradcheck, memory, range
fallback, and no per-step zero-filled gradients."""

import math

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402
from rdp_oracles import chain_truth  # noqa: E402

import rdp  # noqa: E402
from rdp.fast_chain import max_safe_range, scaled_log_alpha, scaled_shift  # noqa: E402
from rdp.memory import measure  # noqa: E402
from samplers.testing import assert_frequencies_match  # noqa: E402

pytestmark = pytest.mark.torch
KINDS = ("shared", "per_step", "embeddings")


def _chain(seed, b, t, n, kind, dtype=torch.float64, scale=1.5):
    """Emissions, positional transitions and keyword transitions of one of the three kinds, plus the
    dense (N, N) or (B, T-1, N, N) matrix for the enumeration oracle."""
    g = torch.Generator().manual_seed(seed)
    em = (scale * torch.randn(b, t, n, generator=g, dtype=torch.float64)).to(dtype)
    if kind == "embeddings":
        emb = torch.randn(n, 3, generator=g, dtype=torch.float64).to(dtype)
        return em, None, {"state_embeddings": emb}, emb @ emb.T
    shape = (n, n) if kind == "shared" else (b, t - 1, n, n)
    tr = (scale * torch.randn(*shape, generator=g, dtype=torch.float64)).to(dtype)
    return em, tr, {}, tr


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(4))
def test_scaled_equals_enumeration_and_log_space(kind, seed):
    n, t = 2 + seed % 3, 2 + seed
    em, tr, kw, dense = _chain(seed, 1, t, n, kind)
    log_z, marg, ent, paths, p = chain_truth(em, dense, t)
    for method in ("scaled", "log"):
        assert torch.allclose(rdp.chain_log_partition(em, tr, method=method, **kw), log_z, atol=1e-10)
        assert torch.allclose(rdp.chain_marginals(em, tr, method=method, **kw)[0], marg, atol=1e-10)
        assert torch.allclose(rdp.chain_entropy(em, tr, method=method, **kw), ent, atol=1e-10)
    score, path = rdp.chain_viterbi(em, tr, block_elements=1, **kw)  # one column per block
    assert tuple(path[0].tolist()) == paths[int(p.argmax())]
    assert torch.allclose(score, torch.log(p.max()) + log_z, atol=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_scaled_equals_log_space_with_lengths_batches_and_float32(kind):
    em, tr, kw, _ = _chain(11, 3, 7, 9, kind)
    lengths = torch.tensor([7, 4, 1])
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 2e-4)):
        e = em.to(dtype)
        t_ = None if tr is None else tr.to(dtype)
        k = {key: v.to(dtype) for key, v in kw.items()}
        fast = rdp.chain_log_partition(e, t_, lengths, method="scaled", **k)
        slow = rdp.chain_log_partition(em, tr, lengths, method="log", **kw)
        assert fast.dtype == dtype and torch.allclose(fast.double(), slow, rtol=tol, atol=tol)
        m_fast = rdp.chain_marginals(e, t_, lengths, method="scaled", **k)
        m_slow = rdp.chain_marginals(em, tr, lengths, method="log", **kw)
        assert torch.allclose(m_fast.double(), m_slow, atol=tol)
        assert m_fast[1, 4:].abs().max() == 0 and m_fast[2, 1:].abs().max() == 0
        h_fast = rdp.chain_entropy(e, t_, lengths, method="scaled", **k)
        h_slow = rdp.chain_entropy(em, tr, lengths, method="log", **kw)
        assert torch.allclose(h_fast.double(), h_slow, rtol=tol, atol=tol)
    s_fast, p_fast = rdp.chain_viterbi(em, tr, lengths, block_elements=20, **kw)
    # the unblocked max-product recursion of the log-space path, written out
    dense = tr if tr is not None else kw["state_embeddings"] @ kw["state_embeddings"].T
    for b, length in enumerate(lengths.tolist()):
        delta = em[b, 0]
        for s in range(1, length):
            step = dense if dense.dim() == 2 else dense[b, s - 1]
            delta = em[b, s] + (delta[:, None] + step).max(0).values
        assert torch.allclose(s_fast[b], delta.max(), atol=1e-10)
        assert (p_fast[b, length:] == -1).all()


@pytest.mark.parametrize("kind", KINDS)
def test_gradcheck_float64(kind):
    """Finite-difference gradients of log Z, entropy, the relaxed Gumbel sample and log a (with a random
    upstream gradient, the general adjoint recursion) with respect to every potential."""
    em, tr, kw, _ = _chain(3, 2, 4, 3, kind, scale=1.0)
    lengths = torch.tensor([4, 2])
    em.requires_grad_(True)
    other = tr if tr is not None else kw["state_embeddings"]
    other.requires_grad_(True)

    def call(fn, e, o, **extra):
        if tr is None:
            return fn(e, lengths=lengths, state_embeddings=o, method="scaled", **extra)
        return fn(e, o, lengths, method="scaled", **extra)

    assert torch.autograd.gradcheck(lambda e, o: call(rdp.chain_log_partition, e, o), (em, other))
    assert torch.autograd.gradcheck(lambda e, o: call(rdp.chain_entropy, e, o), (em, other))
    assert torch.autograd.gradcheck(
        lambda e, o: call(rdp.chain_gumbel_sample, e, o, tau=0.7, generator=torch.Generator().manual_seed(0)).relaxed,
        (em, other))
    if tr is not None:
        shift = scaled_shift(tr, 3)
        assert torch.autograd.gradcheck(lambda e, o: scaled_log_alpha(e, o, shift), (em, other))


def _codes(hard, n):
    t = hard.shape[1]
    return (hard * torch.tensor([n ** (t - 1 - i) for i in range(t)])).sum(-1).numpy()


@pytest.mark.parametrize("kind", KINDS)
def test_scaled_ffbs_samples_the_exact_posterior(kind):
    """Chi-square goodness of fit of 6000 scaled-path FFBS draws over all 27 paths (alpha = 1e-3), each
    transition kind; a draw from the transposed chain fails the same test (negative control)."""
    n, t, draws = 3, 3, 6000
    em, tr, kw, dense = _chain(7, 1, t, n, kind, scale=0.8)
    _, _, _, paths, p = chain_truth(em, dense, t)
    order = [sum(s * n ** (t - 1 - i) for i, s in enumerate(path)) for path in paths]
    probs = np.zeros(n ** t)
    probs[order] = p.numpy()
    batch_tr = tr if kind != "per_step" else tr.expand(draws, -1, -1, -1)
    sample = rdp.chain_gumbel_sample(em.expand(draws, -1, -1), batch_tr, tau=0.5, method="scaled",
                                     generator=torch.Generator().manual_seed(11), **kw)
    assert_frequencies_match(np.bincount(_codes(sample.hard, n), minlength=n ** t), probs, alpha=1e-3,
                             what=f"scaled Gumbel-FFBS ({kind})")
    assert torch.allclose(sample.relaxed.sum(-1), torch.ones(draws, t, dtype=torch.float64))
    if kind == "shared":
        wrong = rdp.chain_gumbel_sample(em.expand(draws, -1, -1), tr.T.contiguous(), method="scaled",
                                        generator=torch.Generator().manual_seed(11))
        with pytest.raises(AssertionError):
            assert_frequencies_match(np.bincount(_codes(wrong.hard, n), minlength=n ** t), probs, alpha=1e-3)


def test_scaled_ffbs_respects_lengths_and_straight_through():
    em, tr, _, _ = _chain(3, 2, 5, 4, "shared")
    s = rdp.chain_gumbel_sample(em, tr, lengths=[5, 2], tau=0.3, straight_through=True, method="scaled",
                                generator=torch.Generator().manual_seed(0))
    assert (s.hard[1, 2:] == -1).all() and (s.hard[:, :2] >= 0).all()
    one_hot = torch.nn.functional.one_hot(s.hard.clamp_min(0), 4).to(s.relaxed.dtype)
    assert torch.allclose(s.relaxed[0], one_hot[0]) and torch.allclose(s.relaxed[1, :2], one_hot[1, :2])
    assert s.relaxed[1, 2:].abs().max() == 0


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64))
def test_autograd_memory_is_o_of_n2_plus_btn(dtype):
    """log Z with shared transitions saves at most 2 (N^2 + B T N) x 8 bytes (the issue's bound); the
    log-space recursion saves a (B, N, N) tensor per step, far more."""
    b, t, n = 2, 20, 300
    em, tr, _, _ = _chain(1, b, t, n, "shared", dtype=dtype, scale=1.0)
    em.requires_grad_(True)
    tr.requires_grad_(True)
    out, fast = measure(lambda: rdp.chain_log_partition(em, tr, method="scaled"))
    out.sum().backward()
    bound = 2 * (n * n + b * t * n) * 8
    assert fast <= bound, (fast, bound)
    _, slow = measure(lambda: rdp.chain_log_partition(em, tr, method="log"))
    assert slow > 5 * bound


def test_backward_fills_no_dense_buffer_per_step():
    """The number of fill/zero kernels on buffers of at least N x N elements in the backward pass does
    not grow with T (the log-space path and the old RDP block gather zero-filled a full gradient every
    step).  N = 20 > B T so the (B, T, N) emission gradient is below the threshold."""
    from torch.profiler import profile

    n = 20

    def fills(fn, t):
        em, tr, kw, _ = _chain(2, 1, t, n, "per_step", scale=1.0)
        em.requires_grad_(True)
        tr.requires_grad_(True)
        out = fn(em, tr)
        with profile(record_shapes=True) as prof:
            out.sum().backward()
        return sum(1 for e in prof.events() if e.name in ("aten::fill_", "aten::zero_")
                   and e.input_shapes and math.prod(e.input_shapes[0]) >= n * n)

    def exact(e, m):
        return rdp.chain_log_partition(e, m, method="scaled")

    def exact_log(e, m):
        return rdp.chain_log_partition(e, m, method="log")

    def randomized(e, m):
        return rdp.randomized_chain_log_partition(e, m, k1=2, k2=2, generator=torch.Generator().manual_seed(0))

    assert fills(exact, 3) == fills(exact, 6) <= 1
    assert fills(randomized, 3) == fills(randomized, 6) <= 1
    assert fills(exact_log, 6) > fills(exact_log, 3)  # negative control: the per-step select backward


def test_range_fallback_and_method_validation():
    em, tr, _, _ = _chain(4, 2, 6, 5, "shared")
    wide = tr.clone()
    wide[0, 0] = 1000.0  # range > 663 nats: beyond scaled space in float64
    assert max_safe_range(torch.float64, 5) < 1000.0
    assert scaled_shift(wide, 5) is None
    auto = rdp.chain_log_partition(em, wide)
    assert torch.allclose(auto, rdp.chain_log_partition(em, wide, method="log"), atol=1e-10)
    assert torch.allclose(rdp.chain_entropy(em, wide), rdp.chain_entropy(em, wide, method="log"), atol=1e-10)
    with pytest.raises(ValueError, match="transitions"):
        rdp.chain_log_partition(em, wide, method="scaled")
    with pytest.raises(ValueError, match="method"):
        rdp.chain_log_partition(em, tr, method="fast")
    with pytest.raises(ValueError, match="block_elements"):
        rdp.chain_viterbi(em, tr, block_elements=0)
    leaf = em.clone().requires_grad_(True)
    with pytest.raises(ValueError, match="method"):
        rdp.chain_marginals(leaf, tr, method="scaled")
    marg = rdp.chain_marginals(leaf, tr)  # auto: twice differentiable through the log-space path
    assert marg.requires_grad


def test_float32_accuracy_near_the_safe_range():
    """float32 scaled log Z with transition scores spanning 40 nats agrees with float64 to 1e-5 relative."""
    em, tr, _, _ = _chain(5, 2, 30, 200, "shared", scale=1.0)
    tr = tr / (tr.max() - tr.min()) * 40.0
    assert 40.0 < max_safe_range(torch.float32, 200)
    fast = rdp.chain_log_partition(em.float(), tr.float(), method="scaled").double()
    exact = rdp.chain_log_partition(em, tr, method="log")
    assert torch.allclose(fast, exact, rtol=1e-5)
    assert math.isfinite(float(fast.sum()))

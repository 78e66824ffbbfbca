"""Roofline of the exact chain DP, and RDP's MSE against wall-clock time next to it (issue 15).

1. Measures this machine's limits with one thread: read bandwidth (median of ``x.sum()`` over a
   256 MiB float32 buffer) and matmul rate (float32 (B, N) x (N, N) products at B = 32 and a square
   2048^3 product, the best of them).
2. For every N and B: the scaled-space exact chain (rdp.fast_chain, float32, shared (N, N)
   transitions, T = 50) -- forward only (log Z under no_grad) and log Z + backward -- as seconds, as a
   multiple of the roofline limit ``max(bytes / bandwidth, flops / rate)``, and its autograd memory
   against ``2 (N^2 + B T N) x 8`` bytes.  Bytes and flops counted:

   * forward: (T-1) reads of the N x N matrix (4 N^2 bytes each) and 2 B N^2 (T-1) flops;
   * forward + backward: twice the forward's reads and 3x its flops (the backward's r M^T products and
     the (N, B T) x (B T, N) transition-gradient product), plus 4 N^2 bytes for the gradient.

   Because the machine is shared, the bare matrix products the chain cannot avoid are timed interleaved
   with it ("bare mm s"; "x bare" = chain / bare): a ratio that the load cancels out of.
   torch-struct's LinearChainCRF (log-semiring matmuls broadcast to (B, T-1, N, N, N)) beside it where
   its estimated memory fits in ``--struct-gib`` (default 4 GiB); else the estimate is printed.
3. MSE of log Z against wall-clock time at ``--mse-sizes``: RDP (K1 = K2 = K/2, local+global
   proposal, Eq. 34) at K in ``--ks`` percent of N, on the factorised embeddings (never N x N) and on
   the dense N x N matrix, against the exact chain (MSE 0; its float32 error against float64 printed).
   The exact value is the float64 scaled forward, checked against the chunked log-space reference
   (rdp.chain_exact_reference).  MSE over ``--replicates`` independent draws (B rows of one call each,
   repeated), with its standard error.
4. Per-step transitions (1, T-1, N, N) at ``--per-step-sizes``: the scaled exact chain against its
   roofline (input read twice, gradient written once) and RDP, time and autograd memory.

Timings are medians of ``--repeats`` interleaved repeats after a warm-up, one thread; the machine is
shared with other jobs, so the load average is printed before and after.

    python -m benchmarks.rdp_roofline                        # full table (about 10 min on one core)
    python -m benchmarks.rdp_roofline --sizes 2000 --batches 1 --mse-sizes 2000
    python -m benchmarks.rdp_roofline --quick                # seconds; used by the tests
    python -m benchmarks.rdp_roofline --device cuda          # the same tables on a GPU
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
import warnings

import torch

import rdp
from rdp.memory import measure
from rdp.synthetic import make_chain


def _sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _timeit(fn, device):
    _sync(device)
    start = time.perf_counter()
    fn()
    _sync(device)
    return time.perf_counter() - start


def machine_limits(device, quick=False):
    """Read bandwidth (bytes/s) and matmul rate (flop/s), best of a few shapes, medians of repeats."""
    n_buf = (16 if quick else 64) * 2**20  # float32 elements: 64 or 256 MiB
    buf = torch.ones(n_buf, dtype=torch.float32, device=device)
    buf.sum()
    reps = 3 if quick else 7
    bw = buf.numel() * 4 / statistics.median(_timeit(buf.sum, device) for _ in range(reps))
    rates = []
    for rows, n in ((32, 2048 if quick else 4096), (2048, 2048)):
        rates.append(2 * rows * n * n / _gemm_seconds(rows, n, device, reps))
    del buf
    return bw, max(rates)


def _gemm_seconds(rows, n, device, reps):
    a = torch.randn(rows, n, device=device)
    m = torch.randn(n, n, device=device)
    a @ m
    return statistics.median(_timeit(lambda: a @ m, device) for _ in range(reps))


def exact_limits(n, b, t, bw, rate):
    """Roofline seconds of the forward and of forward + backward (see the module docstring)."""
    fwd_bytes, fwd_flops = 4 * n * n * (t - 1), 2 * b * n * n * (t - 1)
    fwd = max(fwd_bytes / bw, fwd_flops / rate)
    both = max((2 * fwd_bytes + 4 * n * n) / bw, 3 * fwd_flops / rate)
    return fwd, both


def struct_gib(n, b, t):
    """torch-struct's saved bytes, scaled from the 1,962 MiB measured at N = 200, T = 50, B = 1 (issue 15)
    as (B, T-1, N, N, N) float32 tensors."""
    return 1962 / 1024 * b * (t - 1) / 49 * (n / 200) ** 3


def run_exact(sizes, batches, length, device, *, repeats, struct_limit, bw, rate, seed):
    print(f"\n== exact chain (scaled space, shared N x N transitions), T = {length}, float32, {device}")
    print(f"{'N':>6} {'B':>3} {'what':<28} {'seconds':>9} {'limit s':>9} {'x limit':>8} "
          f"{'autograd MiB':>13} {'bound MiB':>10} {'bare mm s':>9} {'x bare':>7}")
    rows = []
    for n in sizes:
        chain = make_chain(n, length, "dense", seed=seed)
        trans0 = (chain.state_embeddings @ chain.state_embeddings.T).float().to(device)
        for b in batches:
            em0 = chain.emissions.float().to(device).expand(b, -1, -1).contiguous()
            t_fwd, t_both, saved, b_fwd, b_both = _exact_times(em0, trans0, device, repeats)
            lim_fwd, lim_both = exact_limits(n, b, length, bw, rate)
            bound = 2 * (n * n + b * length * n) * 8
            for what, sec, lim, bare in (
                    ("forward (log Z, no grad)", statistics.median(t_fwd), lim_fwd, statistics.median(b_fwd)),
                    ("log Z + backward", statistics.median(t_both), lim_both, statistics.median(b_both))):
                mem = saved / 2**20 if "backward" in what else float("nan")
                mem_s = f"{mem:13.2f}" if mem == mem else f"{'-':>13}"
                print(f"{n:>6} {b:>3} {what:<28} {sec:9.4f} {lim:9.4f} {sec / lim:8.2f} {mem_s} "
                      f"{bound / 2**20:10.2f} {bare:9.4f} {sec / bare:7.2f}", flush=True)
                rows.append({"n": n, "b": b, "what": what, "seconds": sec, "limit": lim, "saved": saved,
                             "bound": bound, "bare": bare})
            gib = struct_gib(n, b, length)
            if gib <= struct_limit:
                sec, mem = _struct_time(em0, trans0, device, repeats)
                print(f"{n:>6} {b:>3} {'torch-struct LinearChainCRF':<28} {sec:9.4f} {lim_both:9.4f} "
                      f"{sec / lim_both:8.2f} {mem / 2**20:13.2f} {bound / 2**20:10.2f}", flush=True)
                rows.append({"n": n, "b": b, "what": "torch-struct", "seconds": sec, "limit": lim_both,
                             "saved": mem, "bound": bound})
            else:
                print(f"{n:>6} {b:>3} {'torch-struct (skipped)':<28} {'-':>9} {'-':>9} {'-':>8} "
                      f"{f'~{gib * 1024:.0f}':>13} {bound / 2**20:10.2f}  (estimated > {struct_limit} GiB)")
    return rows


def _exact_times(em0, trans0, device, repeats):
    """Interleaved timings of the scaled exact chain, forward only and log Z + backward, and of the bare
    matrix products it cannot avoid (T-1 products a @ M for the forward; twice that plus the
    (N, B (T-1)) x (B (T-1), N) gradient product with the backward), measured at the same moment so
    that the machine's load cancels in their ratio; autograd bytes."""
    em = em0.clone().requires_grad_(True)
    tr = trans0.clone().requires_grad_(True)
    b, length, n = em0.shape
    vec = torch.rand(b, n, device=device)
    mat = torch.rand(n, n, device=device)
    stack = torch.rand(b * (length - 1), n, device=device)

    def bare_forward():
        for _ in range(length - 1):
            vec @ mat

    def bare_both():
        for _ in range(length - 1):
            vec @ mat
            vec @ mat.T
        stack.T @ stack

    def forward_only():
        with torch.no_grad():
            return rdp.chain_log_partition(em, tr, method="scaled")

    def with_backward():
        out = rdp.chain_log_partition(em, tr, method="scaled")
        out.sum().backward()
        return out

    forward_only()
    with_backward()  # warm-up
    out, saved = measure(lambda: rdp.chain_log_partition(em, tr, method="scaled"), device=device)
    out.sum().backward()
    bare_forward()
    bare_both()
    t_fwd, t_both, b_fwd, b_both = [], [], [], []
    for _ in range(repeats):  # interleaved
        t_fwd.append(_timeit(forward_only, device))
        b_fwd.append(_timeit(bare_forward, device))
        t_both.append(_timeit(with_backward, device))
        b_both.append(_timeit(bare_both, device))
    return t_fwd, t_both, saved, b_fwd, b_both


def _struct_time(em0, trans0, device, repeats):
    import torch_struct

    warnings.filterwarnings("ignore", message=".*arg_constraints.*")
    leaf = em0.clone().requires_grad_(True)

    def fn():
        pot = leaf[:, 1:, None, :] + trans0[None, None]  # (B, T-1, N prev, N next)
        pot = torch.cat([pot[:, :1] + leaf[:, :1, :, None], pot[:, 1:]], dim=1)
        return torch_struct.LinearChainCRF(pot.transpose(-1, -2)).partition  # (B, T-1, next, prev)

    fn().sum().backward()
    out, mem = measure(fn, device=device)
    out.sum().backward()
    times = []
    for _ in range(repeats):
        times.append(_timeit(lambda: fn().sum().backward(), device))
    return statistics.median(times), mem


def run_mse(sizes, ks, batch, length, device, repeats, replicates, seed):
    print(f"\n== MSE of log Z against wall-clock time (log Z + backward), T = {length}, B = {batch}, float32, "
          f"{device}; dense synthetic chain (rdp.synthetic, seed {seed})")
    print(f"{'N':>6} {'method':<34} {'K':>6} {'seconds':>9} {'autograd MiB':>13} {'MSE log Z':>11} "
          f"{'+- se':>9} {'exact/method time':>18}")
    rows = []
    for n in sizes:
        chain = make_chain(n, length, "dense", seed=seed)
        em64 = chain.emissions.to(device)
        emb64 = chain.state_embeddings.to(device)
        with torch.no_grad():
            exact = float(rdp.chain_log_partition(em64, state_embeddings=emb64, method="scaled"))
            ref = float(rdp.chain_exact_reference(em64, state_embeddings=emb64, entropy=False)["log_partition"])
        gen = torch.Generator(device=device).manual_seed(seed)
        methods = _mse_methods(em64, emb64, batch, ks, gen)
        for _, _, fn in methods:  # warm-up
            fn().sum().backward()
        times = {name: [] for name, _, _ in methods}
        for _ in range(repeats):  # interleaved
            for name, _, fn in methods:
                times[name].append(_timeit(lambda fn=fn: fn().sum().backward(), device))
        base = statistics.median(times[methods[0][0]])
        for name, k, fn in methods:
            _, saved = measure(fn, device=device)
            draws = []
            with torch.no_grad():
                if name.startswith("exact"):  # deterministic: one evaluation is every replicate
                    draws = fn().double().tolist()[:1] * replicates
                while len(draws) < replicates:
                    draws.extend(fn().double().tolist())
            err = [(d - exact) ** 2 for d in draws[:replicates]]
            mse = statistics.fmean(err)
            se = statistics.stdev(err) / math.sqrt(len(err)) if len(err) > 1 else float("nan")
            sec = statistics.median(times[name])
            print(f"{n:>6} {name:<34} {k:>6} {sec:9.4f} {saved / 2**20:13.2f} {mse:11.3g} {se:9.2g} "
                  f"{base / sec:17.1f}x", flush=True)
            rows.append({"n": n, "method": name, "k": k, "seconds": sec, "saved": saved, "mse": mse, "se": se})
        print(f"{n:>6} check: exact log Z (float64, scaled) = {exact:.6f}; chunked log-space reference = {ref:.6f}; "
              f"|difference| = {abs(exact - ref):.2g}")
    return rows


def run_per_step(sizes, ks, length, device, repeats, seed):
    """Per-step transitions (1, T-1, N, N): the scaled exact chain against its roofline (the input is
    read twice and its gradient written once: 3 x 4 (T-1) N^2 bytes) and RDP gathering K x K blocks."""
    print(f"\n== per-step transitions (B, T-1, N, N), log Z + backward, T = {length}, B = 1, float32, {device}")
    print(f"{'N':>6} {'method':<34} {'K':>6} {'seconds':>9} {'limit s':>9} {'x limit':>8} {'autograd MiB':>13}")
    rows = []
    for n in sizes:
        chain = make_chain(n, length, "dense", seed=seed)
        em = chain.emissions.float().to(device).requires_grad_(True)
        emb = chain.state_embeddings.float().to(device)
        per_step = (emb @ emb.T).expand(1, length - 1, n, n).contiguous().requires_grad_(True)
        gen = torch.Generator(device=device).manual_seed(seed)
        methods = [("exact scaled, per-step", n, _exact_per_step(em, per_step))]
        for pct in ks:
            k = max(2, round(n * pct / 100))
            methods.append((f"RDP {pct:g}% per-step (K1=K2)", k, _rdp_per_step(em, per_step, k, gen)))
        for _, _, fn in methods:
            fn().sum().backward()
        times = {name: [] for name, _, _ in methods}
        for _ in range(repeats):
            for name, _, fn in methods:
                times[name].append(_timeit(lambda fn=fn: fn().sum().backward(), device))
        limit = 3 * 4 * (length - 1) * n * n / _BANDWIDTH[0]
        for name, k, fn in methods:
            _, saved = measure(fn, device=device)
            sec = statistics.median(times[name])
            print(f"{n:>6} {name:<34} {k:>6} {sec:9.4f} {limit:9.4f} {sec / limit:8.2f} {saved / 2**20:13.2f}",
                  flush=True)
            rows.append({"n": n, "method": name, "k": k, "seconds": sec, "limit": limit, "saved": saved})
    return rows


def _exact_per_step(em, per_step):
    return lambda: rdp.chain_log_partition(em, per_step, method="scaled")


def _rdp_per_step(em, per_step, k, gen):
    return lambda: rdp.randomized_chain_log_partition(em, per_step, k1=k - k // 2, k2=k // 2, generator=gen)


_BANDWIDTH = [float("nan")]


def _mse_methods(em64, emb64, batch, ks, gen):
    """(name, K, fn) for the exact chain and RDP at each budget, both transition parameterisations."""
    n = em64.shape[-1]
    em = em64.float().expand(batch, -1, -1).contiguous().requires_grad_(True)
    emb = emb64.float().clone().requires_grad_(True)
    dense = (emb64 @ emb64.T).float().clone().requires_grad_(True)

    def rdp_fn(k1, k2, factorised):
        if factorised:
            return lambda: rdp.randomized_chain_log_partition(em, state_embeddings=emb, k1=k1, k2=k2, generator=gen)
        return lambda: rdp.randomized_chain_log_partition(em, dense, k1=k1, k2=k2, generator=gen)

    methods = [("exact, N x N matrix", n, lambda: rdp.chain_log_partition(em, dense, method="scaled")),
               ("exact, embeddings (builds E E^T)", n,
                lambda: rdp.chain_log_partition(em, state_embeddings=emb, method="scaled"))]
    for pct in ks:
        k = max(2, round(n * pct / 100))
        k1, k2 = k - k // 2, k // 2
        methods.append((f"RDP {pct:g}% embeddings (K1=K2)", k, rdp_fn(k1, k2, True)))
        methods.append((f"RDP {pct:g}% N x N matrix (K1=K2)", k, rdp_fn(k1, k2, False)))
    return methods


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="*", default=[1000, 2000, 5000, 10000])
    p.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    p.add_argument("--length", type=int, default=50)
    p.add_argument("--mse-sizes", type=int, nargs="*", default=[2000, 10000])
    p.add_argument("--per-step-sizes", type=int, nargs="*", default=[2000])
    p.add_argument("--ks", type=float, nargs="+", default=[1, 10], help="RDP budgets in percent of N")
    p.add_argument("--mse-batch", type=int, default=1)
    p.add_argument("--replicates", type=int, default=20)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--struct-gib", type=float, default=4.0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="tiny sizes, a few seconds (for tests)")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.batches, args.length, args.mse_sizes, args.per_step_sizes = [64, 128], [1, 4], 8, [128], [64]
        args.replicates, args.repeats, args.struct_gib = 8, 2, 0.01
    torch.set_num_threads(args.threads)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"rdp roofline: torch {torch.__version__}, device {args.device}, {torch.get_num_threads()} thread(s), "
          f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (shared machine: noisy)")
    bw, rate = machine_limits(args.device, quick=args.quick)
    _BANDWIDTH[0] = bw
    print(f"measured limits: read bandwidth {bw / 1e9:.2f} GB/s, float32 matmul {rate / 1e9:.1f} GFLOP/s")
    exact_rows = run_exact(args.sizes, args.batches, args.length, args.device, repeats=args.repeats,
                           struct_limit=args.struct_gib, bw=bw, rate=rate, seed=args.seed)
    mse_rows = run_mse(args.mse_sizes, args.ks, args.mse_batch, args.length, args.device, args.repeats,
                       args.replicates, args.seed) if args.mse_sizes else []
    step_rows = run_per_step(args.per_step_sizes, args.ks, args.length, args.device, args.repeats,
                             args.seed) if args.per_step_sizes else []
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return {"bandwidth": bw, "rate": rate, "exact": exact_rows, "mse": mse_rows, "per_step": step_rows}


if __name__ == "__main__":
    main()

"""Wall time and autograd memory of log Z + backward: the exact chain (scaled matrix-product forward with
its backward recursion, and the log-space recursion) vs randomized forward (K = 1% and 10% of N) vs
torch-struct's LinearChainCRF, on synthetic dense chains (rdp.synthetic.make_chain).  Ratios are
against the scaled exact chain; benchmarks/rdp_roofline.py puts it against the machine's limits.

Memory is what autograd saves for backward plus the output (rdp.memory.measure: saved-tensor hooks,
each storage once) on CPU, or the CUDA allocator's peak on a GPU.  Exact runs use the full (N, N)
transition matrix; randomized runs use the factorised state embeddings (never N x N).  Sizes whose
log-space exact path would need more than --max-exact-gib of autograd memory skip it (the estimate is
printed).  torch-struct's log-semiring matmuls broadcast to N^3 elements (about 2 GiB of saved
tensors already at N = 200, T = 50), so it runs only up to --max-struct-n (default 200); the chunked no-grad reference (rdp.chain_exact_reference) still gives exact values there.

    python -m benchmarks.rdp_scaling                       # N in {200, 500, 1000, 2000, 5000, 10000}, T = 50
    python -m benchmarks.rdp_scaling --sizes 500 2000 --length 100 --device cuda
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import rdp
from rdp.memory import measure
from rdp.synthetic import make_chain


def _sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device, repeats):
    """Median seconds of fn() (forward + backward) and the memory of the first run."""
    times, mem = [], None
    fn().sum().backward()  # warm-up (allocator, lazy init) outside the measurement
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        out, nbytes = measure(fn, device=device)
        out.sum().backward()
        _sync(device)
        times.append(time.perf_counter() - start)
        mem = nbytes if mem is None else mem
    return statistics.median(times), mem


def run(sizes, length, device, dtype, repeats, max_exact_gib, max_struct_n, seed):
    rows = []
    for n in sizes:
        first = len(rows)
        inst = make_chain(n, length, "dense", seed=seed)
        em = inst.emissions.to(device=device, dtype=dtype)
        emb = inst.state_embeddings.to(device=device, dtype=dtype)
        trans = (emb @ emb.T).detach().requires_grad_(True)
        leaf = em.clone().requires_grad_(True)
        # the scaled exact chain (rdp.fast_chain) saves O(N^2 + B T N): the baseline of the ratios
        sec, mem = timed(lambda leaf=leaf, trans=trans: rdp.chain_log_partition(leaf, trans, method="scaled"), device, repeats)
        base = (sec, mem)
        rows.append((n, "exact scaled (matrix products)", n, sec, mem))
        # the log-space recursion saves one (B, N, N) score tensor per step (748 MiB at N = 2000, T = 50)
        exact_gib = (length - 1) * n * n * em.element_size() / 2**30
        if exact_gib <= max_exact_gib:
            sec, mem = timed(lambda leaf=leaf, trans=trans: rdp.chain_log_partition(leaf, trans, method="log"), device,
                             1 if n >= 2000 else repeats)
            rows.append((n, "exact log-space (method='log')", n, sec, mem))
        else:
            rows.append((n, f"exact log-space (skipped: ~{exact_gib:.1f} GiB)", n, float("nan"), float("nan")))
        for pct in (1, 10):
            k = max(2, round(n * pct / 100))
            leaf = em.clone().requires_grad_(True)
            e = emb.clone().requires_grad_(True)
            gen = torch.Generator(device=device).manual_seed(seed)
            sec, mem = timed(lambda leaf=leaf, e=e, k=k, gen=gen: rdp.randomized_chain_log_partition(
                leaf, state_embeddings=e, k1=k - 1, k2=1, generator=gen), device, repeats)
            rows.append((n, f"RDP K={pct}% (K1={k - 1}, K2=1)", k, sec, mem))
        if n <= max_struct_n:
            try:
                import torch_struct

                trans = (emb @ emb.T).detach()
                leaf = em.clone().requires_grad_(True)

                def struct_fn(leaf=leaf, trans=trans):
                    pot = leaf[:, 1:, None, :] + trans[None, None]  # (B, T-1, N(prev), N(next))
                    pot = torch.cat([pot[:, :1] + leaf[:, :1, :, None], pot[:, 1:]], dim=1)
                    # torch-struct wants (B, T-1, C_next, C_prev)
                    return torch_struct.LinearChainCRF(pot.transpose(-1, -2)).partition

                import warnings

                warnings.filterwarnings("ignore", message=".*arg_constraints.*")
                sec, mem = timed(struct_fn, device, 1)
                rows.append((n, "torch-struct LinearChainCRF", n, sec, mem))
            except Exception as exc:  # noqa: BLE001 - report, do not fail the benchmark
                rows.append((n, f"torch-struct failed: {type(exc).__name__}", n, float("nan"), float("nan")))
        for row in rows[first:]:
            _print_row(row, base)
    return rows


def _print_row(row, base):
    n, name, k, sec, mem = row
    if base is not None and sec == sec and mem == mem:
        ratio = f"{base[0] / sec:9.1f}x {base[1] / max(mem, 1):9.1f}x"
    else:
        ratio = f"{'-':>10} {'-':>10}"
    mem_s = f"{mem / 2**20:12.2f}" if mem == mem else f"{'-':>12}"
    sec_s = f"{sec:10.4f}" if sec == sec else f"{'-':>10}"
    print(f"{n:>6} {name:<40} {k:>6} {sec_s} {mem_s} {ratio}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[200, 500, 1000, 2000, 5000, 10000])
    p.add_argument("--length", type=int, default=50)
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--max-exact-gib", type=float, default=5.0)
    p.add_argument("--max-struct-n", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    print(f"log Z + backward, T = {args.length}, B = 1, {args.dtype} on {args.device} (torch {torch.__version__}); "
          "ratios = exact / method (time, memory)")
    print(f"{'N':>6} {'method':<40} {'K':>6} {'seconds':>10} {'memory MiB':>12} {'time':>10} {'memory':>10}")
    run(args.sizes, args.length, args.device, getattr(torch, args.dtype), args.repeats, args.max_exact_gib,
        args.max_struct_n, args.seed)


if __name__ == "__main__":
    main()

"""Tree CRF log Z + backward: torch-struct's TreeCRF vs the exact rdp tree inside vs randomized Inside (RDP).

For each size T x N the problem is a synthetic span-labelled tree CRF (rdp.synthetic.make_tree, seed 0) at
batch 1.  Every method computes log Z and backpropagates to the (B, T, T, N) potentials; times are medians
of ``--repeats`` interleaved runs (all methods once per round, after warm-up runs), so the ratios are from
one run under the same load.  Memory is what autograd saves for backward plus the output
(rdp.memory.measure; on a GPU the allocator peak).  Randomized rows (K = 1% and 10% of N, K1 = K2 = K/2;
the uniform proposal, the paper's choice for trees, and the local softmax proposal) also report the bias and
MSE of log Z-hat over ``--mse-reps`` draws against the exact float64 log Z, with its Monte Carlo standard error.

    python -m benchmarks.rdp_tree_speed                          # T x N in {20 x 2000, 40 x 500}, float32, 1 thread
    python -m benchmarks.rdp_tree_speed --sizes 20x2000 --repeats 31 --regime dense
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings

import torch

import rdp
from rdp.memory import measure
from rdp.synthetic import make_tree


def _sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _methods(n: int):
    """(name, fn(x, generator) -> log Z (B,), budget K or None) for every row."""
    import torch_struct

    def struct(x, _g):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)   # torch-struct's missing arg_constraints
            return torch_struct.TreeCRF(x).partition

    rows = [("torch-struct TreeCRF", struct, None),
            ("rdp exact", lambda x, _g: rdp.tree_log_partition(x), None)]
    for proposal in ("uniform", "local"):
        for pct in (1, 10):
            k = max(2, round(n * pct / 100))
            k1, k2 = k // 2, k - k // 2
            rows.append((f"RDP {pct}% (K={k}) {proposal}",
                         lambda x, g, k1=k1, k2=k2, p=proposal: rdp.randomized_tree_log_partition(
                             x, k1=k1, k2=k2, proposal=p, generator=g), k))
    return rows


def run_size(length: int, n: int, args) -> list[dict]:
    dtype = getattr(torch, args.dtype)
    problem = make_tree(n, length, args.regime, seed=0)
    spans64 = problem.span_potentials.to(args.device)
    exact = float(rdp.tree_log_partition(spans64)[0])
    x = spans64.to(dtype).expand(args.batch, -1, -1, -1).clone().requires_grad_(True)
    gen = torch.Generator(device=args.device).manual_seed(1)
    rows = _methods(n)

    def once(fn):
        x.grad = None
        _sync(args.device)
        start = time.perf_counter()
        fn(x, gen).sum().backward()
        _sync(args.device)
        return time.perf_counter() - start

    for _name, fn, _k in rows:          # warm-up
        for _ in range(args.warmup):
            once(fn)
    times = {name: [] for name, *_ in rows}
    for _ in range(args.repeats):            # interleaved rounds
        for name, fn, _k in rows:
            times[name].append(once(fn))
    out = []
    for name, fn, k in rows:
        _, mem = measure(lambda fn=fn: fn(x, gen), args.device)
        row = {"T": length, "N": n, "method": name, "seconds": statistics.median(times[name]),
               "mib": mem / 2**20, "bias": math.nan, "mse": math.nan, "mse_se": math.nan}
        if k is not None:
            g = torch.Generator(device=args.device).manual_seed(2)
            with torch.no_grad():
                est = torch.stack([fn(x.detach()[:1], g)[0].double() for _ in range(args.mse_reps)]) - exact
            sq = est ** 2
            row.update(bias=float(est.mean()), mse=float(sq.mean()),
                       mse_se=float(sq.std() / math.sqrt(args.mse_reps)))
        out.append(row)
    base = {r["method"]: r["seconds"] for r in out}
    for r in out:
        r["vs_struct"] = r["seconds"] / base["torch-struct TreeCRF"]
        r["vs_exact"] = r["seconds"] / base["rdp exact"]
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["20x2000", "40x500"], help="T x N pairs, e.g. 20x2000")
    parser.add_argument("--regime", default="intermediate", help="dense | intermediate | long-tail")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--mse-reps", type=int, default=50)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"# tree CRF log Z + backward, {args.dtype}, B = {args.batch}, {args.threads} thread(s), device "
          f"{args.device}, regime {args.regime}; medians of {args.repeats} interleaved rounds; memory = autograd-saved"
          f" + output (CUDA: allocator peak); MSE over {args.mse_reps} draws vs exact float64 log Z")
    print(f"{'T':>3} {'N':>5}  {'method':<26} {'seconds':>9} {'vs struct':>9} {'vs exact':>8} {'MiB':>8} "
          f"{'bias':>9} {'MSE (SE)':>18}")
    for size in args.sizes:
        length, n = (int(v) for v in size.lower().split("x"))
        for r in run_size(length, n, args):
            mse = "" if math.isnan(r["mse"]) else f"{r['mse']:.3g} ({r['mse_se']:.2g})"
            bias = "" if math.isnan(r["bias"]) else f"{r['bias']:+.3f}"
            print(f"{r['T']:>3} {r['N']:>5}  {r['method']:<26} {r['seconds']:>9.4f} {r['vs_struct']:>9.2f} "
                  f"{r['vs_exact']:>8.2f} {r['mib']:>8.2f} {bias:>9} {mse:>18}", flush=True)


if __name__ == "__main__":
    main()

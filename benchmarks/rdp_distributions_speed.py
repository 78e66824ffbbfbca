"""rdp's structured distributions against torch-struct's on ragged batches: marginals (log Z + backward) time.

For each structure (LinearChainCRF, TreeCRF, SentCFG) a random problem in torch-struct's layout with
lengths spread over [N/10, N] (the longest = N, torch-struct's rule) is built once; both libraries compute
``.marginals`` (log Z and its gradient) from fresh distribution objects.  Times are medians of
``--repeats`` interleaved rounds after ``--warmup`` rounds (both libraries once per round), so the ratio
is from one run under the same load; the largest difference of the two libraries' marginals and log Z
is printed beside each row (float64 by default), and the RDP row (K1 = K2 = K/2) prints its log Z-hat
error against the exact value.

    python -m benchmarks.rdp_distributions_speed                     # default sizes, float64, 1 thread
    python -m benchmarks.rdp_distributions_speed --batch 32 --dtype float32
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch

import rdp


def _problem(name: str, args, generator):
    batch, dtype = args.batch, getattr(torch, args.dtype)
    n = {"LinearChainCRF": args.chain[0], "TreeCRF": args.tree[0], "SentCFG": args.cfg[0]}[name]
    lengths = torch.linspace(max(2, n // 10), n, batch).round().long()

    def draw(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)

    if name == "LinearChainCRF":
        return draw(batch, n - 1, args.chain[1], args.chain[1]), lengths, args.chain[1]
    if name == "TreeCRF":
        return draw(batch, n, n, args.tree[1]), lengths, args.tree[1]
    nt, t = args.cfg[1], args.cfg[2]
    return (draw(batch, n, t), draw(batch, nt, nt + t, nt + t), draw(batch, nt)), lengths, nt + t


def _flat(marginals) -> torch.Tensor:
    parts = marginals[:3] if isinstance(marginals, tuple) else (marginals,)
    return torch.cat([p.detach().reshape(-1) for p in parts])


def run(name: str, args) -> list[dict]:
    import torch_struct

    potentials, lengths, states = _problem(name, args, torch.Generator().manual_seed(0))
    k = max(2, states // 5)
    budget = rdp.RDP(k // 2, k - k // 2, generator=torch.Generator().manual_seed(1))

    def peer():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            dist = getattr(torch_struct, name)(potentials, lengths=lengths)
            return dist.partition, dist.marginals

    def ours():
        dist = getattr(rdp, name)(potentials, lengths=lengths)
        return dist.partition, dist.marginals

    def randomized():
        dist = getattr(rdp, name)(potentials, lengths=lengths, method=budget)
        return dist.partition, dist.marginals

    methods = {"torch-struct": peer, "rdp exact": ours, f"rdp RDP K={k} of {states}": randomized}
    times = {m: [] for m in methods}
    for round_ in range(args.warmup + args.repeats):
        for method, fn in methods.items():
            start = time.perf_counter()
            fn()
            if round_ >= args.warmup:
                times[method].append(time.perf_counter() - start)
    (z_ref, m_ref), (z, m), (z_hat, _) = peer(), ours(), randomized()
    z_ref, z, z_hat = z_ref.detach(), z.detach(), z_hat.detach()
    names = list(methods)
    log_z = dict(zip(names, (z_ref, z, z_hat)))
    marginals = dict(zip(names, (_flat(m_ref), _flat(m))))          # the RDP row's marginals are not compared
    base = statistics.median(times["torch-struct"])
    rows = []
    for method in methods:
        seconds = statistics.median(times[method])
        if method == "torch-struct":
            check = "reference"
        elif method == "rdp exact":
            check = (f"max |dlogZ| {float((z - z_ref).abs().max()):.1e}, "
                     f"max |dmarginal| {float((_flat(m) - _flat(m_ref)).abs().max()):.1e}")
        else:
            check = f"mean log Z-hat - log Z {float((z_hat - z).mean()):+.3f} (one draw per item)"
        rows.append({"structure": name, "method": method, "seconds": seconds, "vs_struct": seconds / base,
                     "check": check, "log_z": log_z[method], "marginals": marginals.get(method)})
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--chain", type=int, nargs=2, default=[50, 32], metavar=("N", "C"))
    parser.add_argument("--tree", type=int, nargs=2, default=[30, 30], metavar=("N", "NT"))
    parser.add_argument("--cfg", type=int, nargs=3, default=[20, 10, 20], metavar=("N", "NT", "T"))
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--structures", nargs="+", default=["LinearChainCRF", "TreeCRF", "SentCFG"])
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"# batch {args.batch}, lengths spread over [N/10, N], {args.dtype}, {args.threads} thread(s); "
          f"chain N, C = {args.chain}; tree N, NT = {args.tree}; SentCFG N, NT, T = {args.cfg}")
    print("| structure | method | marginals s (median) | x torch-struct | check |")
    print("| --- | --- | ---: | ---: | --- |")
    for name in args.structures:
        for r in run(name, args):
            print(f"| {r['structure']} | {r['method']} | {r['seconds']:.4f} | {r['vs_struct']:.2f} | {r['check']} |")


if __name__ == "__main__":
    main()

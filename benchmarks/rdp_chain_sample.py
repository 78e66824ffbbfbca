"""Many exact posterior paths of a chain: one forward pass (rdp.chain_sample) vs one forward pass per path.

The peer is what drawing S paths cost before ``chain_sample``: exact Gumbel-FFBS (``rdp.chain_gumbel_sample``)
on S copies of the batch, one forward table per copy (the way ``LinearChainCRF.sample(S)`` and the structured
VAE drew them).  Both draw from the same law (tests/rdp/test_rdp_chain_sample.py).  Time: median of
``--repeats`` interleaved rounds after one warm-up round, in this process.  Memory: measured apart (asv
style), each method once in a fresh process, as the growth of the process's peak resident memory during
the call (``VmHWM``, Linux), so neither measurement disturbs the other.

    python -m benchmarks.rdp_chain_sample                       # N = 1000, T = 30, B = 4, S = 200
    python -m benchmarks.rdp_chain_sample --states 2000 --samples 500
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

import rdp

METHODS = ("chain_sample", "gumbel_copies")


def _inputs(args):
    g = torch.Generator().manual_seed(0)
    dtype = getattr(torch, args.dtype)
    em = torch.randn(args.batch, args.length, args.states, generator=g, dtype=torch.float64).to(dtype)
    emb = (torch.randn(args.states, 16, generator=g, dtype=torch.float64) / 2).to(dtype)
    return em, emb


def _draw(method: str, em, emb, samples: int, seed: int) -> torch.Tensor:
    """(S, B, T) paths."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        if method == "chain_sample":
            return rdp.chain_sample(em, state_embeddings=emb, n_samples=samples, generator=gen).paths
        copies = em.unsqueeze(0).expand(samples, *em.shape).reshape(-1, *em.shape[1:])
        hard = rdp.chain_gumbel_sample(copies, state_embeddings=emb, generator=gen).hard
        return hard.reshape(samples, *em.shape[:2])


def peak_rss_kib() -> int:
    """This process's peak resident memory (``VmHWM``, KiB).  Not ``ru_maxrss``: Linux carries that over
    from the parent through fork and exec, so a child started by a process that peaked higher reads no growth."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))


def _peak_growth_kib(method: str, args) -> int:
    """Run ``method`` once in a fresh process; the growth of its peak resident memory during the call."""
    code = ("import json, sys; from benchmarks.rdp_chain_sample import _inputs, _draw, _parser, peak_rss_kib; "
            "a = _parser().parse_args(sys.argv[2:]); em, emb = _inputs(a); "
            "before = peak_rss_kib(); _draw(sys.argv[1], em, emb, a.samples, 1); "
            "print(json.dumps(peak_rss_kib() - before))")
    argv = [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k != "repeats"]
    out = subprocess.run([sys.executable, "-c", code, method, *argv], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])  # the repository root: benchmarks/ importable
    return int(json.loads(out.stdout.strip().splitlines()[-1]))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--states", type=int, default=1000, help="N")
    p.add_argument("--length", type=int, default=30, help="T")
    p.add_argument("--batch", type=int, default=4, help="B")
    p.add_argument("--samples", type=int, default=200, help="S, paths per sequence")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--repeats", type=int, default=5)
    return p


def main(argv=None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(1)
    em, emb = _inputs(args)
    seconds: dict[str, list[float]] = {m: [] for m in METHODS}
    for r in range(args.repeats + 1):  # round 0 warms up
        for m in METHODS:
            t0 = time.perf_counter()
            paths = _draw(m, em, emb, args.samples, r)
            if r:
                seconds[m].append(time.perf_counter() - t0)
            assert paths.shape == (args.samples, args.batch, args.length) and bool((paths >= 0).all())
    memory = {m: _peak_growth_kib(m, args) for m in METHODS}
    print(f"N = {args.states}, T = {args.length}, B = {args.batch}, S = {args.samples}, {args.dtype}, one thread; "
          f"median of {args.repeats} rounds; memory = peak RSS growth in a fresh process")
    print("| method | seconds | x chain_sample | peak MiB | x chain_sample |")
    print("|---|---|---|---|---|")
    base_t, base_m = statistics.median(seconds["chain_sample"]), max(memory["chain_sample"], 1)
    for m in METHODS:
        t = statistics.median(seconds[m])
        print(f"| {m} | {t:.4f} | {t / base_t:.2f} | {memory[m] / 1024:.1f} | {memory[m] / base_m:.1f} |")


if __name__ == "__main__":
    main()

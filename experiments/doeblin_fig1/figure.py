"""Fig. 1 of Steinhardt & Liang (2015): pi~(state 1) of the three-state chain vs eps (delta = 1e-4).

Run: NUMBA_CACHE_DIR=.numba_cache .venv/bin/python -m experiments.doeblin_fig1.figure [--plot docs/figures/doeblin_fig1.png]
Prints the curve (closed form and GTH) and, for three eps, the frequency from 200000 exact draws.
"""

from __future__ import annotations

import argparse

import numpy as np

from doeblin import StrongDoeblinChain
from doeblin.examples import three_state_chain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delta", type=float, default=1e-4)
    parser.add_argument("--plot", default="")
    args = parser.parse_args()
    A, u = three_state_chain(args.delta), np.full(3, 1 / 3)
    eps_grid = np.logspace(-9, 0, 91)
    gth = np.array([StrongDoeblinChain(A, u, e).stationary(method="gth")[0] for e in eps_grid])
    closed = np.array([StrongDoeblinChain(A, u, e).stationary()[0] for e in eps_grid])
    print(f"delta = {args.delta}; max |closed form - GTH| over the grid = {np.abs(gth - closed).max():.2e}\n")
    print("| eps | pi~(1) (GTH) | exact draws (200000) |")
    print("| --- | --- | --- |")
    for e in (1e-8, 1e-6, 1e-4, 1e-2, 1e-1, 1.0):
        chain = StrongDoeblinChain(A, u, e)
        row = f"| {e:g} | {chain.stationary(method='gth')[0]:.4f} |"
        if e >= 1e-4:
            freq = (chain.sample_stationary(200000, seed=0) == 0).mean()
            row += f" {freq:.4f} ± {np.sqrt(freq * (1 - freq) / 200000):.4f} |"
        else:
            row += " (too many A steps per draw) |"
        print(row)
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(5, 3.2))
        ax.semilogx(eps_grid, gth, label=r"$\tilde\pi$(state 1)")
        ax.axhline(4 / 9, ls="--", c="gray", lw=0.8)
        ax.axhline(1 / 2, ls=":", c="gray", lw=0.8)
        ax.axvline(args.delta, c="k", lw=0.5)
        ax.set_xlabel(r"$\epsilon$")
        ax.set_ylabel(r"$\tilde\pi(1)$")
        ax.set_title(rf"Fig. 1 chain, $\delta$ = {args.delta:g}, u uniform")
        ax.text(1e-8, 0.502, "1/2", fontsize=8)
        ax.text(1e-1, 0.446, "4/9", fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"\nwrote {args.plot}")


if __name__ == "__main__":
    main()

"""mcsa shared core: Numba kernels, MCMC moves, AIS, diagnostics, randomized pruning, the
evaluation harness and pytest convergence helpers.

``import samplers`` never imports torch.
"""

__version__ = "0.1.0"

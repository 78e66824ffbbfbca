"""Convergence assertions for tests of samplers and estimators (ours and users').

Each helper states its tolerance in Monte Carlo terms and fails with a message that says by how
much.  They are also available as a pytest plugin (installed with mcsa, entry point ``pytest11``)
providing a ``--mcsa-seed`` option and ``rng`` / ``mcsa_seed`` fixtures.

Examples
--------
>>> import numpy as np
>>> from samplers.testing import assert_close_in_se, assert_frequencies_match
>>> rng = np.random.default_rng(0)
>>> x = rng.normal(1.0, 2.0, size=10_000)
>>> assert_close_in_se(x.mean(), 1.0, se=x.std(ddof=1) / np.sqrt(x.size), k=4)
>>> counts = np.bincount(rng.choice(3, size=3000, p=[0.2, 0.3, 0.5]), minlength=3)
>>> p = assert_frequencies_match(counts, [0.2, 0.3, 0.5], alpha=1e-3)
"""

from .asserts import (
                      assert_close_in_se,
                      assert_error_decreases,
                      assert_frequencies_match,
                      assert_mc_rate,
                      assert_mean_matches,
                      chi_square_gof,
                      loglog_slope,
)

__all__ = ["assert_close_in_se", "assert_error_decreases", "assert_frequencies_match", "assert_mc_rate",
           "assert_mean_matches", "chi_square_gof", "loglog_slope"]
